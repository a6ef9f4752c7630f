// Weight types by name and the per-tensor dtype rules of the mixes (see
// quant_mix.h; the rules are llama.cpp's presets of the same names, as
// docs/export-quantize.md's tables state them).
#include "model/quant_mix.h"

#include <cstdio>

#include "base/error.h"

namespace og {
namespace {

const std::vector<WeightType>& all_types() {
  static const std::vector<WeightType> kTypes = {
      {"f32", DType::F32, kMixNone, 0},       {"f16", DType::F16, kMixNone, 1},
      {"bf16", DType::BF16, kMixNone, 32},    {"q8_0", DType::Q8_0, kMixNone, 7},
      {"q4_0", DType::Q4_0, kMixNone, 2},     {"q4_1", DType::Q4_1, kMixNone, 3},
      {"q5_0", DType::Q5_0, kMixNone, 8},     {"q5_1", DType::Q5_1, kMixNone, 9},
      {"q4_k", DType::Q4_K, kMixNone, 14},    {"q5_k", DType::Q5_K, kMixNone, 16},
      {"q6_k", DType::Q6_K, kMixNone, 18},    {"q2_k", DType::Q2_K, kMixNone, 10},
      {"q3_k", DType::Q3_K, kMixNone, 11},    {"iq4_nl", DType::IQ4_NL, kMixNone, 25},
      {"iq4_xs", DType::IQ4_XS, kMixNone, 30}, {"mxfp4", DType::MXFP4, kMixNone, 38},
      {"q4_k_m", DType::Q4_K, kMixKM, 15},    {"q5_k_m", DType::Q5_K, kMixKM, 17},
      {"q3_k_m", DType::Q3_K, kMixQ3KM, 12},  {"iq4_xs_m", DType::IQ4_XS, kMixIQ4, 30},
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

TensorTypePicker::TensorTypePicker(const WeightType& t, int n_layers, int n_attn_v, bool has_output, int n_gqa,
                                   int n_expert)
    : t_(t), n_layers_(n_layers), n_attn_v_(n_attn_v), n_gqa_(n_gqa), n_expert_(n_expert), has_output_(has_output) {}

int TensorTypePicker::layer_of(const std::string& name, int counter) const {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) == 1 && layer >= 0 && layer < n_layers_) return layer;
  return counter;
}

// The output (or the tied embedding) of every mix: Q6_K, or Q8_0 when its
// rows are not whole 256-blocks (llama.cpp's choice for any K-quant preset).
DType TensorTypePicker::pick_km(const std::string& name, bool output) {
  if (output) return cols_ % 256 == 0 ? DType::Q6_K : DType::Q8_0;
  DType d = t_.base;
  if (has(name, "attn_v.weight")) {
    if (more_bits(i_attn_v_, n_attn_v_)) d = DType::Q6_K;
    // 80-layer models (the 70B class) share each attn_v over 8 query heads: Q4_K is raised to Q5_K.
    else if (n_layers_ == 80 && d == DType::Q4_K) d = DType::Q5_K;
    ++i_attn_v_;
  } else if (has(name, "ffn_down")) {
    if (more_bits(i_ffn_down_, n_layers_)) d = DType::Q6_K;
    ++i_ffn_down_;
  } else if (has(name, "attn_qkv.weight")) {  // fused q/k/v (Phi-3): one step up, as llama.cpp
    d = d == DType::Q4_K ? DType::Q5_K : DType::Q6_K;
  }
  return d;
}

DType TensorTypePicker::pick_q3_k_m(const std::string& name, bool output) {
  if (output) return cols_ % 256 == 0 ? DType::Q6_K : DType::Q8_0;
  if (has(name, "attn_v.weight")) {
    DType d = i_attn_v_ < 2 ? DType::Q5_K : DType::Q4_K;
    if (n_layers_ == 80) d = DType::Q5_K;  // the 70B class (llama.cpp raises Q3_K/Q4_K there)
    if (n_expert_ == 8) d = DType::Q8_0;
    ++i_attn_v_;
    return d;
  }
  if (has(name, "attn_k.weight")) return n_expert_ == 8 ? DType::Q8_0 : t_.base;
  if (has(name, "ffn_down")) {
    const int layer = layer_of(name, i_ffn_down_++);
    return layer < n_layers_ / 16 ? DType::Q5_K : DType::Q4_K;
  }
  if (has(name, "attn_output.weight")) return n_expert_ == 8 ? DType::Q5_K : DType::Q4_K;
  if (has(name, "attn_qkv.weight")) return DType::Q4_K;
  return t_.base;
}

DType TensorTypePicker::pick_iq4(const std::string& name, bool output) {
  if (output) return cols_ % 256 == 0 ? DType::Q6_K : DType::Q8_0;
  if (has(name, "attn_v.weight")) {
    DType d = n_gqa_ >= 4 ? DType::Q5_K : t_.base;
    if (n_expert_ == 8) d = DType::Q8_0;
    ++i_attn_v_;
    return d;
  }
  if (has(name, "attn_k.weight")) return n_expert_ == 8 ? DType::Q8_0 : t_.base;
  if (has(name, "ffn_down")) return layer_of(name, i_ffn_down_++) < n_layers_ / 8 ? DType::Q5_K : t_.base;
  if (has(name, "attn_output.weight")) return n_expert_ == 8 ? DType::Q5_K : t_.base;
  return t_.base;
}

DType TensorTypePicker::pick(const std::string& name, int64_t cols) {
  cols_ = cols;
  const bool output = name == "output.weight" || (!has_output_ && name == "token_embd.weight");
  DType d = t_.base;
  switch (t_.mix) {
    case kMixNone: break;
    case kMixKM: d = pick_km(name, output); break;
    case kMixQ3KM: d = pick_q3_k_m(name, output); break;
    case kMixIQ4: d = pick_iq4(name, output); break;
  }
  const int64_t block = dtype_info(d).block;
  if (cols % block == 0) return d;
  ++fallbacks_;
  switch (d) {
    case DType::Q4_K: d = DType::Q5_0; break;
    case DType::Q5_K: d = DType::Q5_1; break;
    case DType::Q6_K: d = DType::Q8_0; break;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::IQ4_XS: d = DType::IQ4_NL; break;
    default: break;
  }
  return cols % dtype_info(d).block == 0 ? d : DType::F16;
}

}  // namespace og
