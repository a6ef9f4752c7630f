// Family "mixtral" (Mixtral 8x7B / 8x22B): Mistral's decoder with every MLP a
// mixture of experts, router block_sparse_moe.gate, experts
// block_sparse_moe.experts.E.w1 (gate), w3 (up), w2 (down) of width
// intermediate_size; softmax, top-k, always renormalised. GGUF files are arch
// "llama" with <arch>.expert_count (read by the llama family); HF
// MixtralForCausalLM is read here and written as GGUF "llama" (transformers
// v5 checkpoints: block "mlp", experts fused, weights.h hf_fused_experts_name).
#include "model/families/common.h"
#include "model/families/family_writers.h"

namespace og {
namespace {

void mixtral_from_hf(const HfInput& in, ModelConfig& c) {
  read_hf_common(in, c, 1e-5, false, true);
  read_hf_experts(in, c, HfExpertFields{"num_local_experts", "intermediate_size", nullptr, true});
  OG_CHECK(c.layers[0].n_experts > 0, in.file, ": missing required field num_local_experts");
  c.hf_moe = HfMoeNames{"block_sparse_moe", "w1", "w3", "w2"};
  // transformers v5 saves the block as "mlp" with fused experts (experts.gate_up_proj / down_proj).
  if (in.weights.find(c.hf_prefix + "layers.0.mlp.gate.weight") != nullptr) c.hf_moe.block = "mlp";
  // MixtralConfig: sliding_window defaults to none; null is full attention.
  const int64_t window = json_int(in.config, "sliding_window", in.file).value_or(0);
  OG_CHECK(window >= 0 && window <= INT32_MAX, in.file, ": sliding_window = ", window, " is out of range");
  for (LayerConfig& L : c.layers) L.window = static_cast<int>(window);
}

}  // namespace

const FamilySpec& mixtral_family() {
  static const FamilySpec spec{"mixtral", {}, {"MixtralForCausalLM"}, nullptr, mixtral_from_hf, llama_to_gguf, true};
  return spec;
}

}  // namespace og
