// Embedder: checks, packing of inputs into whole-sequence passes, truncation
// and normalisation (see embedder.h).
#include "runtime/embedder.h"

#include "runtime/token_ids.h"

#include <algorithm>

#include "base/error.h"
#include "model/config.h"
#include "model/embedding.h"

namespace og {

std::string embedding_refusal(const Model& m) {
  if (m.config().pooling == Pooling::kUnset)
    return "the model " + m.source_path() + " is not an embedding model (its file declares no pooling type)";
  return "";
}

int64_t Embedder::dim() const { return model_.config().embedding_dim(); }

int64_t Embedder::max_tokens() const { return std::max<int64_t>(1, model_.config().n_ctx); }

namespace {

void check_inputs(const std::vector<std::vector<int32_t>>& inputs, int64_t max_tokens, int32_t n_vocab) {
  OG_CHECK(!inputs.empty(), "no input to embed");
  for (size_t i = 0; i < inputs.size(); ++i) {
    OG_CHECK(!inputs[i].empty(), "input ", i, " is empty (no tokens to embed)");
    OG_CHECK(static_cast<int64_t>(inputs[i].size()) <= max_tokens, "input ", i, " has ", inputs[i].size(),
             " tokens, more than the model's context of ", max_tokens);
    // The one check and words of token ids (runtime/token_ids.h): the server's
    // embeddings reach the vocabulary check here.
    if (const auto bad = first_bad_token_id(inputs[i], n_vocab))
      throw Error("input " + std::to_string(i) + ": " + bad->message);
  }
}

}  // namespace

EmbedResult Embedder::embed(const std::vector<std::vector<int32_t>>& inputs, const EmbedOptions& o) const {
  if (const std::string why = embedding_refusal(model_); !why.empty()) fail(why);
  OG_CHECK(o.normalize >= -1, "normalisation ", o.normalize,
           " is not one of -1 (none), 0 (max-abs), 1 (taxicab), 2 (euclidean), p > 2 (p-norm)");
  OG_CHECK(o.dimensions >= 0 && o.dimensions <= dim(), "dimensions ", o.dimensions,
           " must be between 1 and the model's embedding width ", dim());
  check_inputs(inputs, max_tokens(), model_.n_vocab());
  const int64_t budget =
      o.batch_rows > 0 ? o.batch_rows : std::min<int64_t>(8192, std::max<int64_t>(512, model_.config().n_ctx));
  EmbedResult res;
  res.vectors.resize(inputs.size());
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t next = 0; next < inputs.size();) {
    if (o.interrupt && o.interrupt->load()) {
      res.interrupted = true;
      return res;
    }
    // As many whole inputs as the budget allows (at least one).
    Batch batch;
    const size_t first = next;
    while (next < inputs.size() &&
           (next == first || static_cast<int64_t>(batch.rows.size() + inputs[next].size()) <= budget)) {
      for (size_t p = 0; p < inputs[next].size(); ++p)
        batch.rows.push_back(BatchRow{inputs[next][p], static_cast<int>(next - first), static_cast<int64_t>(p), false});
      res.prompt_tokens += static_cast<int64_t>(inputs[next].size());
      ++next;
    }
    Embeddings e;
    model_.embed(batch, e);
    ++res.forward_passes;
    if (o.dimensions > 0) truncate_embeddings(e, o.dimensions);
    res.dim = e.dim;
    for (size_t k = 0; k < e.seqs.size(); ++k) {
      float* v = e.values.data() + k * e.dim;
      normalize_embedding(v, e.dim, o.normalize);
      std::vector<float>& dst = res.vectors[first + static_cast<size_t>(e.seqs[k])];
      dst.insert(dst.end(), v, v + e.dim);
    }
  }
  return res;
}

}  // namespace og
