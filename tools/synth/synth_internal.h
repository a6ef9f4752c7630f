// Shared pieces of the synthetic model writer: the tensor plan of a spec (HF
// and GGUF names, shapes, kinds), the deterministic weight generator, and the
// tokenizer material for both layouts.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "synth/synth.h"

namespace og::synth {

enum class Kind { kEmbed, kLinear, kBias, kNorm };

struct PlannedTensor {
  std::string hf_name;
  std::string gguf_name;
  std::vector<int64_t> shape;  // row-major, outermost first ([out, in] for linears)
  Kind kind = Kind::kLinear;
  int64_t fan_in = 1;
  // GGUF llama/mistral q/k: rows permuted per head (HF rotate-half -> interleaved); 0 = none.
  int64_t permute_heads = 0;
  bool gemma_norm = false;  // HF stores w, GGUF stores 1 + w
};

int64_t n_vocab(const SynthSpec& spec);
void validate(const SynthSpec& spec);  // throws og::Error naming the bad field
bool is_sliding_layer(const SynthSpec& spec, int64_t layer);
std::vector<PlannedTensor> plan(const SynthSpec& spec);

// The tensor's values in HF layout (rotate-half q/k rows, gemma norms as w).
std::vector<float> hf_values(const SynthSpec& spec, const PlannedTensor& t);
// The same values converted the way llama.cpp's converter does for GGUF.
std::vector<float> gguf_values(const SynthSpec& spec, const PlannedTensor& t);
// Row permutation HF -> GGUF for one [n_heads * head_dim, ...] tensor (rows of `cols` values).
std::vector<float> permute_rows_to_gguf(const std::vector<float>& x, int64_t n_heads, int64_t head_dim, int64_t cols);

// Tokenizer material.
struct TokenizerInfo {
  int64_t bos = 1, eos = 2;
  std::vector<int64_t> eos_all;  // generation_config eos ids
  std::string chat_template;     // "" = none
};
TokenizerInfo tokenizer_info(const SynthSpec& spec);
// Adds tokenizer.* keys for the spec's tokenizer.
void add_gguf_tokenizer(const SynthSpec& spec, GgufWriter& w);
// Copies/writes tokenizer.json, tokenizer_config.json into dir.
void write_hf_tokenizer(const SynthSpec& spec, const std::string& dir);

std::string join_path(const std::string& a, const std::string& b);
void write_text_file(const std::string& path, const std::string& text);

}  // namespace og::synth
