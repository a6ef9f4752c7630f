// What the 2-D weights of an exported or quantized GGUF become: one dtype for
// every matrix (f32 ... q6_k), or a mix that picks the dtype per tensor the
// way llama.cpp's Q4_K_M / Q5_K_M presets do (README.md has the table). 1-D
// tensors (norms, biases, rope_freqs) are always F32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace og {

struct WeightType {
  std::string name;          // "q4_k_m"
  DType base = DType::F32;   // the dtype of every matrix the mix does not promote
  bool mix = false;          // the _m rules (attn_v / ffn_down / output promotions)
  uint32_t file_type = 0;    // general.file_type (llama_ftype)
};

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "q4_k_m", "q5_k_m".
bool weight_type_from_name(const std::string& name, WeightType* out);
const std::vector<std::string>& weight_type_names();

// Picks each matrix's dtype. Call pick() for every 2-D weight in file order
// (the _m rules count attn_v and ffn_down tensors as they go).
class TensorTypePicker {
 public:
  // n_attn_v: how many attn_v.weight tensors the file holds; has_output: it
  // holds output.weight (otherwise token_embd.weight is also the output).
  TensorTypePicker(const WeightType& t, int n_layers, int n_attn_v, bool has_output);
  // The dtype of the matrix `name` with rows of `cols` values. A dtype whose
  // block does not divide cols falls back as llama.cpp does (Q4_K -> Q5_0,
  // Q5_K -> Q5_1, Q6_K -> Q8_0, then F16 when even that does not divide).
  DType pick(const std::string& name, int64_t cols);
  int fallbacks() const { return fallbacks_; }  // tensors that fell back so far

 private:
  WeightType t_;
  int n_layers_, n_attn_v_;
  bool has_output_;
  int i_attn_v_ = 0, i_ffn_down_ = 0, fallbacks_ = 0;
};

}  // namespace og
