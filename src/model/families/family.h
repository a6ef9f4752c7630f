// A model family as data plus small readers and a writer: the architecture
// names it answers to, how it fills a ModelConfig from GGUF metadata or from
// an HF config.json, and how it writes a ModelConfig back as GGUF metadata.
// The registry (registry.cpp) lists every family, one line each.
//
// Internal conventions every reader follows (forward.cpp relies on them):
// - q/k rows are used as stored. GGUF "llama" files (Llama, Mistral) hold the
//   converter's interleaved row order, so their layers get rope_interleaved =
//   true; every other file uses rotate-half. The two are the same math, and
//   no weight is copied or permuted at load.
// - Norm weights are used as w, after adding c.norm_weight_offset (1 for HF
//   gemma, whose files store w for a (1 + w) norm; GGUF has it folded).
// - The output matrix is the embedding when tied (c.tied_output).
// - Anything in the file the engine does not implement is an og::Error naming
//   the field, never ignored.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "model/config.h"

namespace og {

struct HfInput {
  const nlohmann::json& config;  // the text model's config (text_config for multimodal checkpoints)
  std::string file;              // "<dir>/config.json", for messages
  const TensorSource& weights;   // with c.hf_prefix already chosen
};

struct FamilySpec {
  const char* name;                     // "llama"
  std::vector<std::string> gguf_archs;  // general.architecture values it reads
  std::vector<std::string> hf_archs;    // config.json architectures[0] values it reads
  // Fill c (architecture, layout and hf_prefix are set by the caller).
  void (*from_gguf)(const GgufFile& f, const std::string& arch, ModelConfig& c);
  void (*from_hf)(const HfInput& in, ModelConfig& c);
  // Writes general.architecture and the <arch>.* keys from which the reader of
  // that arch gives back c (tensors are model/gguf_export.h's business); an
  // og::Error naming the field when c holds what the arch cannot express.
  // nullptr: the family has no GGUF form.
  void (*to_gguf)(const ModelConfig& c, GgufWriter& w);
  // The q/k row order of that arch's GGUF files: true = interleaved pairs (the
  // llama converter's permutation), false = rotate-half rows as in HF.
  bool gguf_rope_interleaved;
  // Whether an image's soft tokens attend to each other bidirectionally (a
  // span marked with Batch::mark_bidirectional; docs/vision.md): Gemma 3
  // (transformers' token_type_ids mask) and Gemma 4 (use_bidirectional_attention
  // "vision"); false: image rows are causal like text.
  bool image_spans_bidirectional = false;
};

// Every family, in the order they are tried.
const std::vector<FamilySpec>& family_registry();
const FamilySpec* family_for_gguf_arch(const std::string& arch);  // nullptr if none
const FamilySpec* family_for_hf_arch(const std::string& arch);    // nullptr if none
const FamilySpec* family_by_name(const std::string& name);        // ModelConfig::architecture; nullptr if none
std::string supported_gguf_archs();  // "llama, qwen2, ..." for messages
std::string supported_hf_archs();

// The family specs, one per file in families/ (functions, so that the
// registry never depends on static initialisation order).
const FamilySpec& llama_family();
const FamilySpec& mistral_family();
const FamilySpec& qwen2_family();
const FamilySpec& qwen3_family();
const FamilySpec& gemma3_family();
const FamilySpec& gemma4_family();
const FamilySpec& qwen3moe_family();
const FamilySpec& mixtral_family();
const FamilySpec& gpt_oss_family();
const FamilySpec& bert_family();
const FamilySpec& nomic_bert_family();
const FamilySpec& phi3_family();

}  // namespace og
