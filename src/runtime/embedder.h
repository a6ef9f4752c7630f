// Embedding whole inputs with a loaded model, for every front end (offgraph
// embed, POST /v1/embeddings, the API): inputs as token ids are checked, packed
// many to a forward pass (rows of several sequences, up to a row budget),
// embedded by Model::embed (pooling and dense projections as the file says),
// truncated to the asked dimensions (Matryoshka) and normalised the way
// llama.cpp's --embd-normalize does. Nothing prints; bad inputs are og::Error
// with one line naming the input and what is wrong.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "model/model.h"

namespace og {

struct EmbedOptions {
  int normalize = 2;        // -1 none, 0 max-abs (int16 range), 1 taxicab, 2 euclidean, p > 2 p-norm
  int64_t dimensions = 0;   // keep the first N values, then normalise; 0 = the model's width
  int64_t batch_rows = 0;   // most rows one forward pass holds; 0 = max(n_ctx, 512) capped at 8192
  // When set (a SIGINT handler's flag), checked before each forward pass: the
  // embedding stops there with EmbedResult::interrupted.
  const std::atomic<bool>* interrupt = nullptr;
};

struct EmbedResult {
  // One vector per input (pooling none: one per token, row after row, so
  // rows[i] holds n_tokens(i) * dim values).
  std::vector<std::vector<float>> vectors;
  int64_t dim = 0;
  int64_t prompt_tokens = 0;  // tokens of all inputs
  int64_t forward_passes = 0;
  bool interrupted = false;  // EmbedOptions::interrupt stopped it: the vectors are incomplete
};

// "" when `m` embeds, else why not (one line: a model without a pooling type).
std::string embedding_refusal(const Model& m);

class Embedder {
 public:
  explicit Embedder(const Model& m) : model_(m) {}
  // og::Error: not an embedding model, an empty input, one longer than the
  // model's context, a token id outside the vocabulary, dimensions out of
  // range, a bad normalisation. Serialised: one embedding pass at a time.
  EmbedResult embed(const std::vector<std::vector<int32_t>>& inputs, const EmbedOptions& o) const;
  const Model& model() const { return model_; }
  int64_t dim() const;        // the width of a vector before truncation
  int64_t max_tokens() const; // the most tokens one input may have (the model's context)

 private:
  const Model& model_;
  mutable std::mutex mu_;
};

}  // namespace og
