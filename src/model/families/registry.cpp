// The family registry: one line per family. Lookups by GGUF
// general.architecture and by HF architectures[0].
#include "model/families/family.h"

namespace og {

const std::vector<FamilySpec>& family_registry() {
  static const std::vector<FamilySpec> families = {
      llama_family(),
      mistral_family(),
      qwen2_family(),
      qwen3_family(),
      gemma3_family(),
      gemma4_family(),
      qwen3moe_family(),
      mixtral_family(),
      gpt_oss_family(),
      phi3_family(),
      bert_family(),
      nomic_bert_family(),
  };
  return families;
}

const FamilySpec* family_for_gguf_arch(const std::string& arch) {
  for (const FamilySpec& f : family_registry())
    for (const std::string& a : f.gguf_archs)
      if (a == arch && f.from_gguf) return &f;
  return nullptr;
}

const FamilySpec* family_for_hf_arch(const std::string& arch) {
  for (const FamilySpec& f : family_registry())
    for (const std::string& a : f.hf_archs)
      if (a == arch && f.from_hf) return &f;
  return nullptr;
}

const FamilySpec* family_by_name(const std::string& name) {
  for (const FamilySpec& f : family_registry())
    if (name == f.name) return &f;
  return nullptr;
}

namespace {
std::string join(bool gguf) {
  std::string s;
  for (const FamilySpec& f : family_registry())
    for (const std::string& a : gguf ? f.gguf_archs : f.hf_archs) s += (s.empty() ? "" : ", ") + a;
  return s;
}
}  // namespace

std::string supported_gguf_archs() { return join(true); }
std::string supported_hf_archs() { return join(false); }

}  // namespace og
