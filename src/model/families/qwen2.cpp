// Family "qwen2": Qwen2 / Qwen2.5. Rotate-half RoPE, q/k/v projection biases
// (always present, no config flag), no o_proj bias.
#include "model/families/common.h"
#include "model/families/qwen_window.h"

namespace og {
namespace {

void qwen2_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  read_gguf_common(f, arch, c);
  for (LayerConfig& L : c.layers) L.has_qkv_bias = true;  // required: a file without them is an error at bind
}

void qwen2_from_hf(const HfInput& in, ModelConfig& c) {
  read_hf_common(in, c, 1e-6, false);
  for (LayerConfig& L : c.layers) {
    L.has_qkv_bias = true;
    L.has_o_bias = false;
  }
  apply_qwen_sliding_window(in, c);
}

// The q/k/v biases are tensors; a window must be shared by every layer.
void qwen2_to_gguf(const ModelConfig& c, GgufWriter& w) { write_gguf_common(c, "qwen2", w); }

}  // namespace

const FamilySpec& qwen2_family() {
  static const FamilySpec spec{"qwen2",       {"qwen2"}, {"Qwen2ForCausalLM"}, qwen2_from_gguf, qwen2_from_hf,
                               qwen2_to_gguf, false};
  return spec;
}

}  // namespace og
