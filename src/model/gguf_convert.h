// The drivers behind `offgraph export` (HF checkpoint -> GGUF) and `offgraph
// quantize` (GGUF -> GGUF with other weight dtypes). Both stream: one tensor
// at a time is converted (its rows split over the thread pool) and written,
// and the source pages it came from are dropped, so memory holds about one
// output tensor, never the model. The file is written under a temporary name,
// read back and checked (config, tensors, cache geometry), and only then
// renamed onto the output path.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "model/quant_mix.h"

namespace og {

class ModelSource;  // format/model_source.h

struct ConvertProgress {
  int index = 0, count = 0;  // tensor index (1-based) of count
  std::string name;
  std::string from, to;  // dtype names
  int64_t bytes_in = 0, bytes_out = 0;
  double seconds = 0;  // this tensor
};

struct ConvertOptions {
  WeightType type;                // what the matrices become (1-D tensors are F32)
  bool allow_requantize = false;  // quantize: accept already-quantized source matrices
  bool overwrite = false;         // replace an existing output file
  // offgraph.kv.prefill_chunk_size; 0 = the source's (a GGUF that has one), else 512.
  int64_t prefill_chunk_size = 0;
  // Keys added to (or replacing) the metadata: export passes the tokenizer's.
  std::vector<std::pair<std::string, GgufValue>> metadata;
  std::function<void(const ConvertProgress&)> on_tensor;  // after each tensor; may be empty
};

struct ConvertSummary {
  int n_tensors = 0;
  int64_t bytes_in = 0, bytes_out = 0;  // tensor data, source and output
  int64_t n_elements = 0;               // every tensor's element count
  double seconds = 0;
  std::map<std::string, int> dtype_counts;  // output dtype name -> tensors
  int fallbacks = 0;                        // matrices whose rows did not fit the chosen block
  std::vector<std::string> notes;           // what the file runs differently from the source (as_gguf_runs_it)
  double bits_per_weight() const { return n_elements ? 8.0 * static_cast<double>(bytes_out) / n_elements : 0; }
};

// Default offgraph.kv.prefill_chunk_size (the runner's own default).
inline constexpr int64_t kDefaultPrefillChunk = 512;

ConvertSummary export_hf_to_gguf(const std::string& hf_dir, const std::string& out_path, const ConvertOptions& o);
// The same from the directory opened once (ModelSource::open: its templates, and its
// weights unless opened without them).
ConvertSummary export_hf_to_gguf(const ModelSource& src, const std::string& out_path, const ConvertOptions& o);
ConvertSummary quantize_gguf(const std::string& in_path, const std::string& out_path, const ConvertOptions& o);

}  // namespace og
