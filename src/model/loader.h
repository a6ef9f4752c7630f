// Building a Model: from a file (Model::load, in model.cpp) or from a config
// and any TensorSource (tests build random-weight models in memory this way).
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/hf_config.h"
#include "format/tensor_source.h"
#include "model/config.h"
#include "model/model.h"
#include "model/weights.h"

namespace og {

// A model file read as config + tensors, nothing bound or copied yet (the
// first half of Model::load; export and quantize continue from here).
// og::Error naming the file and problem, as Model::load.
struct GgufModelSource {
  ModelConfig config;  // layout kGguf
  std::shared_ptr<GgufFile> file;
};
GgufModelSource read_gguf_model(const std::string& path);
GgufModelSource read_gguf_model(std::shared_ptr<GgufFile> file);  // a file already open (ModelSource)
struct HfModelSource {
  ModelConfig config;  // layout kHf, hf_prefix chosen
  std::shared_ptr<const TensorSource> weights;
};
HfModelSource read_hf_model(const std::string& dir);
// The same over a directory already read (ModelSource) and its opened safetensors.
HfModelSource read_hf_model(const HfCheckpoint& ck, std::shared_ptr<const TensorSource> weights);
// The config of an HF config.json object (`file` names it in messages): the
// family by architectures[0], its reader over the text model's fields. The
// weights are consulted for layout only (tensor prefix, tied output).
ModelConfig hf_model_config(const nlohmann::json& cfg, const std::string& file, const TensorSource& weights);

// Validates `config`, binds its tensors from `source` (named by
// config.layout / hf_prefix) and returns the model, which keeps `source`
// alive. `gguf` is the same object as `source` when it is a GGUF file.
// Unless opts.mmap_only, the matrices are copied into huge pages
// (place_weights_in_huge_pages); source_is_mapped: the source's tensor bytes
// are a read-only file mapping whose copied pages may be dropped.
std::unique_ptr<Model> make_model(ModelConfig config, std::shared_ptr<const TensorSource> source,
                                  const GgufFile* gguf = nullptr, const LoadOptions& opts = {},
                                  bool source_is_mapped = false);

// The generic forward pass (forward.cpp): see Model::forward. Allocates its
// scratch per call; no state is kept between calls.
KvResult forward_pass(const ModelConfig& c, const Weights& w, const KvGeometry& geometry, const Batch& batch,
                      KvCache& cache, std::vector<float>& logits);
// The layers over a step that holds every sequence whole (positions 0..n-1,
// each sequence's rows consecutive), attended within the step, causally or
// not as c.causal says (kv/step_attend.h); hidden = the output-normed rows
// [n_rows, d_model]. og::Error on bad tokens, partial sequences or KV sharing.
void hidden_pass(const ModelConfig& c, const Weights& w, const KvGeometry& geometry, const Batch& batch,
                 std::vector<float>& hidden);

}  // namespace og
