// Family "llama": Llama 2 / 3 / 3.1 / 3.2 (llama3 RoPE scaling), TinyLlama,
// SmolLM. GGUF arch "llama" (also what Mistral and Mixtral convert to; its
// expert keys are read here), HF LlamaForCausalLM.
#include "model/families/common.h"
#include "model/families/family_writers.h"

namespace og {
namespace {

void llama_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  read_gguf_common(f, arch, c, false, true);
  read_gguf_experts(f, arch, c, false);  // Mixtral: llama with <arch>.expert_count
  // The converter permuted q/k rows of this arch into interleaved pairs; the
  // llama3 scaling arrives as rope_freqs.weight (read by read_gguf_common).
  // llama.attention.sliding_window (Mistral v0.1 written by our own tools)
  // applies to every layer.
  for (LayerConfig& L : c.layers) L.rope_interleaved = true;
}

void llama_from_hf(const HfInput& in, ModelConfig& c) {
  read_hf_common(in, c, 1e-6, false);
  if (auto types = hf_layer_types(in.config, in.file, c.n_layers())) {
    for (int l = 0; l < c.n_layers(); ++l) {
      if (!(*types)[l]) continue;
      const auto w = json_int(in.config, "sliding_window", in.file);
      if (!w || *w <= 0) fail(in.file, ": layer_types has sliding layers but sliding_window is not set");
      c.layers[l].window = static_cast<int>(*w);
    }
  }
}

}  // namespace

// GGUF "llama" (also Mistral's arch): the generic keys; a window shared by
// every layer goes to llama.attention.sliding_window, which offgraph honours
// and llama.cpp ignores (it runs such models with full attention).
void llama_to_gguf(const ModelConfig& c, GgufWriter& w) {
  write_gguf_common(c, "llama", w);
  write_gguf_experts(c, "llama", w, false);
}

const FamilySpec& llama_family() {
  // LlavaForConditionalGeneration: LLaVA 1.5's text model (text_config), its tower apart (runtime/vision_model.cpp).
  static const FamilySpec spec{"llama", {"llama"}, {"LlamaForCausalLM", "LlavaForConditionalGeneration"},
                               llama_from_gguf, llama_from_hf,
                               llama_to_gguf, true};
  return spec;
}

}  // namespace og
