// The model as the runtime sees it: load a model file (GGUF or HF directory)
// into a const Model, ask it for its KV geometry, and run the one generic
// forward pass over a Batch with a KvCache the runtime owns.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_cache.h"

namespace og {

struct ModelConfig;  // model/config.h
class ModelSource;   // format/model_source.h

// One row of a forward step: `token` of sequence `seq` at position `pos`.
// An input row (docs/vision.md, "The seam"): `embedding` set (d_model floats,
// owned by the caller, alive until forward returns) is this row's input
// instead of the token's embedding, used as given: the family's
// embedding_scale is not applied (Gemma's image soft tokens are not scaled,
// as transformers and llama.cpp do). `token` is still read by families with
// per-layer inputs (Gemma 4: 0, the pad id, for an image row).
// span_end > 0: the row is in a bidirectional span [a, span_end) of its
// sequence (image tokens of Gemma 3): it also sees the later positions of
// the span, which must all be rows of the same step (KvRow::span_end).
struct BatchRow {
  int32_t token = 0;
  int seq = 0;
  int64_t pos = 0;
  bool want_logits = false;
  std::span<const float> embedding{};
  int64_t span_end = 0;
};

// Rows may mix sequences and hold any number of tokens per sequence; one
// sequence's rows are consecutive positions from its current cache length.
struct Batch {
  std::vector<BatchRow> rows;
  // Convenience: marks the last row of each sequence as wanting logits.
  void want_last_logits_per_sequence();
  // Marks positions [begin, end) of `seq` (rows of this batch) as one
  // bidirectional span: sets their span_end. og::Error unless every position
  // of the span is a row here.
  void mark_bidirectional(int seq, int64_t begin, int64_t end);
};

struct LoadOptions {
  // Keep the weight matrices in the mapped file (no copies, pages shared with
  // the page cache), for memory-tight runs. Default: they are copied into
  // huge-page memory (faster decode) and the file's pages are dropped.
  bool mmap_only = false;
  // Copy a mixture of experts' expert matrices too. Default: they stay in the
  // mapped file (only the experts a step routes to are paged in, so a file
  // larger than memory runs); the dense part is still copied.
  bool experts_in_memory = false;
};

// Where the weight matrices live after load (Model::weight_residency).
struct WeightResidency {
  int64_t copied_bytes = 0;         // copied into huge-page memory (resident)
  int64_t mapped_expert_bytes = 0;  // expert matrices used in place from the mapped file
  int64_t mapped_other_bytes = 0;   // other matrices used in place (--mmap)
};

// What one forward row costs in weight matrices (benchmarks report decode
// against the bytes it must read and prefill against the multiply-adds).
struct WeightTraffic {
  // Every layer matrix and the output matrix: read once per decode step (of
  // a mixture of experts, the router and the n_experts_used experts one row reads).
  int64_t matmul_bytes = 0;
  int64_t matmul_macs_per_row = 0;   // their multiply-adds for one row (attention over the cache excluded)
  int64_t expert_bytes_per_row = 0;  // the part of matmul_bytes that is one row's routed experts
};

// What an embedding pass gives (Model::embed): one vector per sequence, in the
// order sequences first appear in the batch (per row with pooling none),
// pooled and projected as the file says, not normalised (model/embedding.h).
struct Embeddings {
  std::vector<int> seqs;      // [n] the sequence of each vector
  int64_t dim = 0;
  std::vector<float> values;  // [n, dim]
};

class Model {
 public:
  virtual ~Model() = default;
  // path: a .gguf file or an HF checkpoint directory. Throws og::Error naming
  // the file and the problem (unknown architecture, unsupported field, missing
  // or mis-shaped tensor, unsupported dtype, ...).
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opts = {});
  // The same from a source already open (the run's one ModelSource: the
  // tokenizer and templates take their parts from it too; the model keeps
  // its tensors alive, not the source).
  static std::unique_ptr<Model> load(const ModelSource& src, const LoadOptions& opts = {});

  virtual const ModelConfig& config() const = 0;
  virtual KvGeometry kv_geometry() const = 0;
  virtual int32_t n_vocab() const = 0;
  virtual std::string architecture() const = 0;  // "llama", "qwen2", ...
  virtual std::string source_path() const = 0;
  virtual WeightTraffic weight_traffic() const = 0;
  virtual WeightResidency weight_residency() const { return {}; }

  // Runs the batch through every layer, calling cache.begin_step / update_and_attend /
  // end_step. logits receives [n_rows_wanting_logits, n_vocab] in row order.
  // Returns the cache's refusal (nothing changed) when begin_step refuses; throws on bad tokens
  // (before touching the cache) and calls cache.abort_step() if anything throws mid-step.
  // The Model keeps no per-call state (the scratch is per calling thread, grown and
  // reused: once a thread has run a step as large, a step allocates nothing on the
  // heap, cache included unless it grows), so forwards on different caches may run
  // from several threads; the kernels' thread pool then runs their parallel parts in turn.
  virtual KvResult forward(const Batch& batch, KvCache& cache, std::vector<float>& logits) const = 0;

  // Embeddings of whole inputs: every sequence in `batch` is complete
  // (positions 0..n-1, its rows consecutive), attended within the step
  // without a cache (causally or bidirectionally, as the model says), then
  // pooled per sequence and through the dense projections. og::Error for a
  // model that declares no pooling, bad tokens or partial sequences.
  // Thread-safe like forward (no state is kept).
  virtual void embed(const Batch& batch, Embeddings& out) const = 0;
};

}  // namespace og
