// Family "qwen3moe" (Qwen3-30B-A3B, Qwen3-235B-A22B): qwen3's attention (q/k
// norms, rotate-half RoPE) with every MLP a mixture of experts: router
// mlp.gate, experts mlp.experts.E.{gate,up,down}_proj of width
// moe_intermediate_size, softmax then top-k, renormalised with norm_topk_prob.
#include "model/families/common.h"
#include "model/families/qwen_window.h"

namespace og {
namespace {

void qwen3moe_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  read_gguf_common(f, arch, c, false, true);
  read_gguf_experts(f, arch, c, true);
  OG_CHECK(c.layers[0].n_experts > 0, f.source_name(), ": missing required key ", arch, ".expert_count");
  for (LayerConfig& L : c.layers) L.has_q_norm = L.has_k_norm = true;
}

void qwen3moe_from_hf(const HfInput& in, ModelConfig& c) {
  read_hf_common(in, c, 1e-6, false, true);
  // transformers' Qwen3MoeConfig: norm_topk_prob defaults to false.
  read_hf_experts(in, c, HfExpertFields{"num_experts", "moe_intermediate_size", "norm_topk_prob", false});
  OG_CHECK(c.layers[0].n_experts > 0, in.file, ": missing required field num_experts");
  for (LayerConfig& L : c.layers) L.has_q_norm = L.has_k_norm = true;
  apply_qwen_sliding_window(in, c);
}

void qwen3moe_to_gguf(const ModelConfig& c, GgufWriter& w) {
  write_gguf_common(c, "qwen3moe", w);
  write_gguf_experts(c, "qwen3moe", w, true);
}

}  // namespace

const FamilySpec& qwen3moe_family() {
  static const FamilySpec spec{"qwen3moe",         {"qwen3moe"}, {"Qwen3MoeForCausalLM"}, qwen3moe_from_gguf,
                               qwen3moe_from_hf, qwen3moe_to_gguf, false};
  return spec;
}

}  // namespace og
