// Family "mistral": Mistral 7B v0.1-v0.3 style models. GGUF files arrive as
// arch "llama" (read by the llama family, which honours
// llama.attention.sliding_window); HF MistralForCausalLM is read here.
#include "model/families/common.h"
#include "model/families/family_writers.h"

namespace og {
namespace {

// transformers' MistralConfig default when the key is missing entirely;
// an explicit null means full attention (v0.2, v0.3).
constexpr int64_t kDefaultWindow = 4096;

void mistral_from_hf(const HfInput& in, ModelConfig& c) {
  read_hf_common(in, c, 1e-6, false);
  int64_t window = kDefaultWindow;
  if (in.config.contains("sliding_window")) window = json_int(in.config, "sliding_window", in.file).value_or(0);
  if (window < 0 || window > INT32_MAX) fail(in.file, ": sliding_window = ", window, " is out of range");
  for (LayerConfig& L : c.layers) L.window = static_cast<int>(window);
}

}  // namespace

const FamilySpec& mistral_family() {
  // Written as GGUF "llama", as llama.cpp's converter does.
  static const FamilySpec spec{"mistral", {}, {"MistralForCausalLM"}, nullptr, mistral_from_hf, llama_to_gguf, true};
  return spec;
}

}  // namespace og
