// Family "phi3" (Phi-3-mini/medium 4k and 128k, Phi-3.5-mini): a llama-like
// decoder (RMSNorm, SiLU gate, rotate-half RoPE) whose q/k/v are one matrix
// (GGUF attn_qkv, HF qkv_proj) and whose gate/up are one (GGUF ffn_up with
// 2 d_ff rows, HF gate_up_proj; gate rows first), bound as row views. The
// 128k models scale RoPE with longrope: per-pair short and long factors
// (GGUF tensors rope_factors_short/long.weight, HF rope_scaling
// short_factor/long_factor), the long ones for runs whose context exceeds the
// original one, and an attention factor on RoPE's cos and sin. Phi-4-mini is
// this family too (partial_rotary_factor 0.75, a tied head).
#include <cmath>

#include "model/families/common.h"
#include "model/weights.h"

namespace og {
namespace {

// A window at least the trained context never masks anything within it
// (Phi-3-*-128k and Phi-3.5 declare 262144); it is dropped so that every
// layer stays a flat cache.
void set_window(ModelConfig& c, int64_t window, const std::string& where) {
  OG_CHECK(window >= 0 && window <= INT32_MAX, where, " = ", window, " is out of range");
  for (LayerConfig& L : c.layers) L.window = window < c.n_ctx ? static_cast<int>(window) : 0;
}

void phi3_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  read_gguf_common(f, arch, c, false, false, true);  // also the window, and attn_qkv when the file fuses q/k/v
  const std::string src = f.source_name(), p = arch + ".";
  set_window(c, c.layers[0].window, src + ": " + p + "attention.sliding_window");
  for (LayerConfig& L : c.layers) L.gate_up_fused = true;  // llama.cpp requires the fused ffn_up
  const bool has_long = f.find("rope_factors_long.weight") != nullptr;
  const bool has_short = f.find("rope_factors_short.weight") != nullptr;
  if (!has_long && !has_short) return;
  OG_CHECK(has_long && has_short, src, ": tensor ", has_long ? "rope_factors_short" : "rope_factors_long",
           ".weight is missing (longrope needs both rope_factors_long.weight and rope_factors_short.weight)");
  OG_CHECK(c.layers[0].rope_freq_factors.empty(), src,
           ": tensor rope_freqs.weight and the longrope factors rope_factors_long/short.weight are both present");
  RopeScaling s;
  s.type = RopeScaling::Type::kLongrope;
  const int64_t orig = f.get_int(p + "rope.scaling.original_context_length").value_or(c.n_ctx);
  OG_CHECK(orig > 1, src, ": ", p, "rope.scaling.original_context_length = ", orig, " must be > 1");
  s.original_max_positions = static_cast<double>(orig);
  s.factor = static_cast<double>(c.n_ctx) / s.original_max_positions;
  s.attn_factor = f.get_float(p + "rope.scaling.attn_factor").value_or(1.0);
  OG_CHECK(std::isfinite(s.attn_factor) && s.attn_factor > 0, src, ": ", p, "rope.scaling.attn_factor = ",
           s.attn_factor, " must be positive");
  for (LayerConfig& L : c.layers) {
    const int half = L.rope_n_rot / 2;
    s.long_factor = checked_rope_factors(tensor_to_f32(f, "rope_factors_long.weight", half), L.rope_n_rot,
                                         src + ": tensor rope_factors_long.weight");
    s.short_factor = checked_rope_factors(tensor_to_f32(f, "rope_factors_short.weight", half), L.rope_n_rot,
                                          src + ": tensor rope_factors_short.weight");
    set_rope(L, L.rope_base, s, {});
  }
}

void phi3_from_hf(const HfInput& in, ModelConfig& c) {
  // rope_scaling longrope (short/long factors) and partial_rotary_factor (Phi-4-mini) included
  read_hf_common(in, c, 1e-5, false, false, true);
  const int64_t window = json_int(in.config, "sliding_window", in.file).value_or(0);
  set_window(c, window, in.file + ": sliding_window");
  for (LayerConfig& L : c.layers) L.qkv_fused = L.gate_up_fused = true;
}

// The generic keys, the original context and, with longrope, its attention
// factor (the factors themselves are tensors: model/gguf_export.h).
void phi3_to_gguf(const ModelConfig& c, GgufWriter& w) {
  write_gguf_common(c, "phi3", w);
  const LayerConfig& L = c.layers.at(0);
  for (int l = 0; l < c.n_layers(); ++l)
    OG_CHECK(c.layers[l].gate_up_fused, "cannot write ", c.architecture, " as GGUF phi3: layer ", l,
             " has separate gate and up matrices (phi3 stores them as one ffn_up)");
  const RopeScaling& s = L.rope_scaling;
  const bool longrope = s.type == RopeScaling::Type::kLongrope;
  OG_CHECK(longrope || s.type == RopeScaling::Type::kNone || s.type == RopeScaling::Type::kLinear,
           "cannot write ", c.architecture, " as GGUF phi3: its RoPE scaling has no phi3 form");
  const double orig = longrope ? s.original_max_positions : static_cast<double>(c.n_ctx);
  w.set("phi3.rope.scaling.original_context_length", GgufValue::make_u32(static_cast<uint32_t>(orig)));
  if (longrope) w.set("phi3.rope.scaling.attn_factor", GgufValue::make_f32(static_cast<float>(s.attn_factor)));
}

}  // namespace

const FamilySpec& phi3_family() {
  static const FamilySpec spec{"phi3", {"phi3"}, {"Phi3ForCausalLM"}, phi3_from_gguf, phi3_from_hf, phi3_to_gguf,
                               false};
  return spec;
}

}  // namespace og
