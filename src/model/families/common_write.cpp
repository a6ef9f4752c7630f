// The generic GGUF writer of the family specs (see common.h): the inverse of
// read_gguf_common, refusing what one key per model cannot express.
#include <cmath>

#include "base/error.h"
#include "model/families/common.h"

namespace og {
namespace {

GgufValue u32_value(int64_t v, const std::string& key) {
  OG_CHECK(v >= 0 && v <= UINT32_MAX, "GGUF export: ", key, " = ", v, " does not fit a u32");
  return GgufValue::make_u32(static_cast<uint32_t>(v));
}

// A per-layer integer: one u32 when every layer agrees, else an array (the
// reader accepts both).
void set_per_layer(const ModelConfig& c, GgufWriter& w, const std::string& key, int64_t (*get)(const LayerConfig&)) {
  bool same = true;
  for (const LayerConfig& L : c.layers) same = same && get(L) == get(c.layers[0]);
  if (same) {
    w.set(key, u32_value(get(c.layers[0]), key));
    return;
  }
  std::vector<GgufValue> arr;
  for (const LayerConfig& L : c.layers) arr.push_back(u32_value(get(L), key));
  w.set(key, GgufValue::make_array(GgufType::U32, std::move(arr)));
}

// A field the arch stores once: every layer must agree with layer 0.
template <class T>
T one_value(const ModelConfig& c, const std::string& arch, const char* what, T (*get)(const LayerConfig&)) {
  for (int l = 1; l < c.n_layers(); ++l)
    OG_CHECK(get(c.layers[l]) == get(c.layers[0]), "cannot write ", c.architecture, " as GGUF ", arch, ": layer ", l,
             " has ", what, " ", get(c.layers[l]), " but layer 0 has ", get(c.layers[0]),
             " (the format stores one value for every layer)");
  return get(c.layers[0]);
}

}  // namespace

void write_gguf_common(const ModelConfig& c, const std::string& arch, GgufWriter& w, const GgufCommonOptions& o) {
  OG_CHECK(c.n_layers() > 0, "GGUF export: the model has no layers");
  OG_CHECK(c.final_logit_softcap == 0, "GGUF export: final logit soft-capping is not supported");
  const std::string p = arch + ".";
  w.set("general.architecture", GgufValue::make_string(arch));
  w.set(p + "context_length", u32_value(c.n_ctx, p + "context_length"));
  w.set(p + "embedding_length", u32_value(c.d_model, p + "embedding_length"));
  w.set(p + "block_count", u32_value(c.n_layers(), p + "block_count"));
  set_per_layer(c, w, p + "feed_forward_length", [](const LayerConfig& L) { return L.d_ff; });
  set_per_layer(c, w, p + "attention.head_count", [](const LayerConfig& L) { return int64_t{L.n_heads}; });
  set_per_layer(c, w, p + "attention.head_count_kv", [](const LayerConfig& L) { return int64_t{L.n_kv_heads}; });
  const int hd_k = one_value<int>(c, arch, "key length", [](const LayerConfig& L) { return L.head_dim_k; });
  const int hd_v = one_value<int>(c, arch, "value length", [](const LayerConfig& L) { return L.head_dim_v; });
  const int n_rot = one_value<int>(c, arch, "RoPE dimension count", [](const LayerConfig& L) { return L.rope_n_rot; });
  w.set(p + "attention.key_length", u32_value(hd_k, p + "attention.key_length"));
  w.set(p + "attention.value_length", u32_value(hd_v, p + "attention.value_length"));
  w.set(p + "rope.dimension_count", u32_value(n_rot, p + "rope.dimension_count"));
  w.set(p + "attention.layer_norm_rms_epsilon", GgufValue::make_f32(c.eps));
  if (c.n_vocab > 0) w.set(p + "vocab_size", u32_value(c.n_vocab, p + "vocab_size"));

  const LayerConfig& R = c.layers.at(static_cast<size_t>(o.rope_layer));
  w.set(p + "rope.freq_base", GgufValue::make_f32(static_cast<float>(R.rope_base)));
  if (R.rope_scaling.type == RopeScaling::Type::kLinear && R.rope_scaling.factor != 1.0) {
    w.set(p + "rope.scaling.type", GgufValue::make_string("linear"));
    w.set(p + "rope.scaling.factor", GgufValue::make_f32(static_cast<float>(R.rope_scaling.factor)));
  }
  if (R.rope_scaling.type == RopeScaling::Type::kYarn) {
    const RopeScaling& y = R.rope_scaling;
    w.set(p + "rope.scaling.type", GgufValue::make_string("yarn"));
    w.set(p + "rope.scaling.factor", GgufValue::make_f32(static_cast<float>(y.factor)));
    w.set(p + "rope.scaling.original_context_length",
          u32_value(static_cast<int64_t>(y.original_max_positions), p + "rope.scaling.original_context_length"));
    if (y.yarn_beta_fast != 32.0) w.set(p + "rope.scaling.yarn_beta_fast", GgufValue::make_f32(float(y.yarn_beta_fast)));
    if (y.yarn_beta_slow != 1.0) w.set(p + "rope.scaling.yarn_beta_slow", GgufValue::make_f32(float(y.yarn_beta_slow)));
  }
  if (o.windows) {
    const int window = one_value<int>(c, arch, "sliding window", [](const LayerConfig& L) { return L.window; });
    if (window > 0) w.set(p + "attention.sliding_window", u32_value(window, p + "attention.sliding_window"));
  }
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const double m = yarn_mscale(L.rope_scaling);  // the reader folds YaRN's m² into the scale
    const float want = static_cast<float>(m * m / std::sqrt(static_cast<double>(L.head_dim_k)));
    OG_CHECK(!o.attn_scale || std::fabs(L.attn_scale - want) <= 1e-6f * want, "cannot write ", c.architecture, " as GGUF ", arch,
             ": layer ", l, " has attention scale ", L.attn_scale, " but the format implies 1/sqrt(", L.head_dim_k,
             ") = ", want);
    OG_CHECK(L.kv_donor < 0, "cannot write ", c.architecture, " as GGUF ", arch, ": layer ", l,
             " shares the KV of layer ", L.kv_donor, " (the format has no key for it)");
  }
  write_gguf_embedding(c, arch, w, o.causal_key);
}

}  // namespace og
