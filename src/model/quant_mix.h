// What the 2-D weights of an exported or quantized GGUF become: one dtype for
// every matrix (f32 ... q6_k, q2_k, q3_k, iq4_nl, iq4_xs, mxfp4), or a mix
// that picks the dtype per tensor the way llama.cpp's Q4_K_M / Q5_K_M /
// Q3_K_M / IQ4_XS presets do (docs/export-quantize.md has the tables). 1-D
// tensors (norms, biases, rope_freqs) are always F32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace og {

// The per-tensor rules of a mix, each as llama.cpp's preset of that name
// (unscoped: `if (t.mix)` reads "the type is a mix").
enum MixRules : uint8_t {
  kMixNone = 0,  // every matrix in the base dtype
  kMixKM,        // Q4_K_M / Q5_K_M: attn_v, ffn_down (more_bits layers) and output promoted
  kMixQ3KM,      // Q3_K_M: attn_v Q5_K/Q4_K, ffn_down Q5_K/Q4_K, attn_output Q4_K, output Q6_K
  kMixIQ4,       // IQ4_XS: attn_v Q5_K at n_gqa >= 4, first eighth of ffn_down Q5_K, output Q6_K
};

struct WeightType {
  std::string name;              // "q4_k_m"
  DType base = DType::F32;       // the dtype of every matrix the mix does not promote
  MixRules mix = kMixNone;
  uint32_t file_type = 0;        // general.file_type (llama_ftype)
};

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k",
// "q6_k", "q2_k", "q3_k", "iq4_nl", "iq4_xs", "mxfp4", "q4_k_m", "q5_k_m",
// "q3_k_m", "iq4_xs_m" (llama.cpp's IQ4_XS preset).
bool weight_type_from_name(const std::string& name, WeightType* out);
const std::vector<std::string>& weight_type_names();

// Picks each matrix's dtype. Call pick() for every 2-D weight in file order
// (the _m rules count attn_v and ffn_down tensors as they go).
class TensorTypePicker {
 public:
  // n_attn_v: how many attn_v.weight tensors the file holds; has_output: it
  // holds output.weight (otherwise token_embd.weight is also the output);
  // n_gqa: query heads per KV head (layer 0); n_expert: experts per layer
  // (0 for a dense model; llama.cpp's rules for 8-expert models apply at 8).
  TensorTypePicker(const WeightType& t, int n_layers, int n_attn_v, bool has_output, int n_gqa = 1,
                   int n_expert = 0);
  // The dtype of the matrix `name` with rows of `cols` values. A dtype whose
  // block does not divide cols falls back as llama.cpp does (Q4_K -> Q5_0,
  // Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K / Q3_K / IQ4_XS -> IQ4_NL, then F16
  // when even that does not divide).
  DType pick(const std::string& name, int64_t cols);
  int fallbacks() const { return fallbacks_; }  // tensors that fell back so far

 private:
  DType pick_km(const std::string& name, bool output);
  DType pick_q3_k_m(const std::string& name, bool output);
  DType pick_iq4(const std::string& name, bool output);
  int layer_of(const std::string& name, int counter) const;  // "blk.N." -> N, else the counter

  WeightType t_;
  int n_layers_, n_attn_v_, n_gqa_, n_expert_;
  bool has_output_;
  int64_t cols_ = 0;  // of the matrix being picked
  int i_attn_v_ = 0, i_ffn_down_ = 0, fallbacks_ = 0;
};

}  // namespace og
