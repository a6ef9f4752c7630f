// The C API's embeddings (offgraph.h: og_embed, og_embed_tokens): the engine's
// Embedder (src/runtime/embedder.h), the same one `offgraph embed` and POST
// /v1/embeddings use, so the vectors are theirs bit for bit. Texts are encoded
// as the server encodes them (BOS/EOS as the vocabulary says, special texts
// kept as text).
#include <cstdlib>
#include <cstring>

#include "api/c_api_internal.h"
#include "model/config.h"

namespace og::capi {
namespace {

EmbedOptions embed_options_of(const og_embed_options* opts, const Embedder& e) {
  og_embed_options o;
  og_embed_options_init(&o);
  read_options(opts, &o, "og_embed_options");
  if (o.normalize < -1)
    api_fail(OG_ERR_INVALID_ARGUMENT, "normalize ", o.normalize,
             " is not one of -1 (none), 0 (max-abs), 1 (taxicab), 2 (euclidean), p > 2 (p-norm)");
  if (o.dimensions < 0 || o.dimensions > e.dim())
    api_fail(OG_ERR_INVALID_ARGUMENT, "dimensions ", o.dimensions, " is outside [0, ", e.dim(),
             "] (0 = the model's embedding width ", e.dim(), ")");
  EmbedOptions r;
  r.normalize = o.normalize;
  r.dimensions = o.dimensions;
  return r;
}

const Embedder& embedder_of(const ModelCore& core) {
  if (core.embedder) return *core.embedder;
  const Pooling p = core.run.model().config().pooling;
  if (p == Pooling::kNone)
    api_fail(OG_ERR_INVALID_ARGUMENT, "the model ", core.run.model().source_path(),
             " has pooling type none (one vector per token), which og_embed does not return");
  api_fail(OG_ERR_INVALID_ARGUMENT, "the model ", core.run.model().source_path(),
           " is not an embedding model (its file declares no pooling type): og_model_info.embeds is 0");
}

void embed_into(ModelCore& core, const std::vector<std::vector<int32_t>>& inputs, const og_embed_options* opts,
                og_embeddings* out) {
  const Embedder& e = embedder_of(core);
  const EmbedOptions o = embed_options_of(opts, e);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) api_fail(OG_ERR_INVALID_ARGUMENT, "input ", i, " is empty (no tokens to embed)");
    if (static_cast<int64_t>(inputs[i].size()) > e.max_tokens())
      api_fail(OG_ERR_INVALID_ARGUMENT, "input ", i, " has ", inputs[i].size(), " tokens, more than the model's context (",
               e.max_tokens(), ")");
  }
  EmbedResult r;
  {
    // One forward pass of the model at a time, sessions' and embeddings' alike.
    std::lock_guard<std::mutex> lock(core.engine->mutex());
    r = e.embed(inputs, o);
  }
  const size_t values = inputs.size() * static_cast<size_t>(r.dim);
  og_embeddings x{static_cast<float*>(std::malloc(std::max<size_t>(1, values) * sizeof(float))), inputs.size(),
                  r.dim, r.prompt_tokens};
  if (!x.data) throw std::bad_alloc();
  for (size_t i = 0; i < r.vectors.size(); ++i)
    std::memcpy(x.data + i * static_cast<size_t>(r.dim), r.vectors[i].data(), r.dim * sizeof(float));
  *out = x;
}

}  // namespace
}  // namespace og::capi

using namespace og;
using namespace og::capi;

extern "C" {

void og_embed_options_init(og_embed_options* opts) {
  if (opts) *opts = og_embed_options{sizeof(og_embed_options), 2, 0};
}

void og_embeddings_free(og_embeddings* e) {
  if (!e) return;
  std::free(e->data);
  *e = og_embeddings{};
}

og_status og_embed(const og_model* model, const char* const* texts, size_t n, const og_embed_options* opts,
                   og_embeddings* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    *out = og_embeddings{};
    if (n == 0) api_fail(OG_ERR_INVALID_ARGUMENT, "no input to embed (n is 0)");
    need(texts, "texts");
    embedder_of(*core);
    std::vector<std::vector<int32_t>> inputs;
    for (size_t i = 0; i < n; ++i) {
      if (!texts[i]) api_fail(OG_ERR_INVALID_ARGUMENT, "texts[", i, "] is NULL");
      if (!*texts[i]) api_fail(OG_ERR_INVALID_ARGUMENT, "texts[", i, "] is empty");
      inputs.push_back(core->tok().encode(texts[i], /*add_special=*/true, /*parse_special=*/false));
    }
    embed_into(*core, inputs, opts, out);
  });
}

og_status og_embed_tokens(const og_model* model, const int32_t* const* ids, const size_t* lens, size_t n,
                          const og_embed_options* opts, og_embeddings* out) {
  return guarded([&] {
    auto core = model_core(model);
    need(out, "out");
    *out = og_embeddings{};
    if (n == 0) api_fail(OG_ERR_INVALID_ARGUMENT, "no input to embed (n is 0)");
    need(ids, "ids");
    need(lens, "lens");
    std::vector<std::vector<int32_t>> inputs;
    for (size_t i = 0; i < n; ++i) {
      const std::string what = "ids[" + std::to_string(i) + "]";
      check_ids(ids[i], lens[i], core->n_vocab(), what.c_str());
      inputs.emplace_back(ids[i], ids[i] + lens[i]);
    }
    embed_into(*core, inputs, opts, out);
  });
}

}  // extern "C"
