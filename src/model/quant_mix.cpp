// Weight types by name and the per-tensor dtype rules of the _m mixes (see
// quant_mix.h; the rules are llama.cpp's published presets, as README.md's
// table states them).
#include "model/quant_mix.h"

#include "base/error.h"

namespace og {
namespace {

const std::vector<WeightType>& all_types() {
  static const std::vector<WeightType> kTypes = {
      {"f32", DType::F32, false, 0},     {"f16", DType::F16, false, 1},     {"bf16", DType::BF16, false, 32},
      {"q8_0", DType::Q8_0, false, 7},   {"q4_0", DType::Q4_0, false, 2},   {"q4_1", DType::Q4_1, false, 3},
      {"q5_0", DType::Q5_0, false, 8},   {"q5_1", DType::Q5_1, false, 9},   {"q4_k", DType::Q4_K, false, 14},
      {"q5_k", DType::Q5_K, false, 16},  {"q6_k", DType::Q6_K, false, 18},  {"q4_k_m", DType::Q4_K, true, 15},
      {"q5_k_m", DType::Q5_K, true, 17},
  };
  return kTypes;
}

// The layers that get more bits: the first and last eighth, and every third in between.
bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool has(const std::string& name, const char* part) { return name.find(part) != std::string::npos; }

}  // namespace

bool weight_type_from_name(const std::string& name, WeightType* out) {
  std::string lower;
  for (char ch : name) lower += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  for (const WeightType& t : all_types())
    if (t.name == lower) {
      *out = t;
      return true;
    }
  return false;
}

const std::vector<std::string>& weight_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const WeightType& t : all_types()) n.push_back(t.name);
    return n;
  }();
  return names;
}

TensorTypePicker::TensorTypePicker(const WeightType& t, int n_layers, int n_attn_v, bool has_output)
    : t_(t), n_layers_(n_layers), n_attn_v_(n_attn_v), has_output_(has_output) {}

DType TensorTypePicker::pick(const std::string& name, int64_t cols) {
  DType d = t_.base;
  if (t_.mix) {
    const bool output = name == "output.weight" || (!has_output_ && name == "token_embd.weight");
    if (output) {
      d = cols % 256 == 0 ? DType::Q6_K : DType::Q8_0;
    } else if (has(name, "attn_v.weight")) {
      if (more_bits(i_attn_v_, n_attn_v_)) d = DType::Q6_K;
      // 80-layer models (the 70B class) share each attn_v over 8 query heads: Q4_K is raised to Q5_K.
      else if (n_layers_ == 80 && d == DType::Q4_K) d = DType::Q5_K;
      ++i_attn_v_;
    } else if (has(name, "ffn_down")) {
      if (more_bits(i_ffn_down_, n_layers_)) d = DType::Q6_K;
      ++i_ffn_down_;
    }
  }
  const int64_t block = dtype_info(d).block;
  if (cols % block == 0) return d;
  ++fallbacks_;
  switch (d) {
    case DType::Q4_K: d = DType::Q5_0; break;
    case DType::Q5_K: d = DType::Q5_1; break;
    case DType::Q6_K: d = DType::Q8_0; break;
    default: break;
  }
  return cols % dtype_info(d).block == 0 ? d : DType::F16;
}

}  // namespace og
