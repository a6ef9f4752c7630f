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

// The q/k norms are tensors; a window must be shared by every layer.
void qwen3_to_gguf(const ModelConfig& c, GgufWriter& w) { write_gguf_common(c, "qwen3", w); }

}  // namespace

const FamilySpec& qwen3_family() {
  static const FamilySpec spec{"qwen3",       {"qwen3"}, {"Qwen3ForCausalLM", "Qwen3Model"}, qwen3_from_gguf, qwen3_from_hf,
                               qwen3_to_gguf, false};
  return spec;
}

}  // namespace og
