// Family "qwen3" (dense): explicit head_dim, per-head RMSNorm of q and k
// before RoPE, rotate-half RoPE, projection biases only with attention_bias.
#include "model/families/common.h"
#include "model/families/qwen_window.h"

namespace og {
namespace {

void qwen3_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  read_gguf_common(f, arch, c);
  for (LayerConfig& L : c.layers) L.has_q_norm = L.has_k_norm = true;
}

void qwen3_from_hf(const HfInput& in, ModelConfig& c) {
  read_hf_common(in, c, 1e-6, false);
  for (LayerConfig& L : c.layers) L.has_q_norm = L.has_k_norm = true;
  apply_qwen_sliding_window(in, c);
}

}  // namespace

const FamilySpec& qwen3_family() {
  static const FamilySpec spec{"qwen3", {"qwen3"}, {"Qwen3ForCausalLM"}, qwen3_from_gguf, qwen3_from_hf};
  return spec;
}

}  // namespace og
