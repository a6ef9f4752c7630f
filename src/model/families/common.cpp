// Shared GGUF / config.json readers for the family specs (see common.h).
#include "model/families/common.h"

#include <cmath>

#include "base/error.h"
#include "model/weights.h"

namespace og {
namespace {

constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxDim = int64_t{1} << 24;

// A per-layer integer key: a scalar or an array of n values; nullopt if absent.
std::optional<std::vector<int64_t>> gguf_per_layer(const GgufFile& f, const std::string& key, int n) {
  const GgufValue* v = f.get(key);
  if (v == nullptr) return std::nullopt;
  std::vector<int64_t> out;
  if (v->type == GgufType::ARRAY) {
    out = *f.get_int_array(key);
    OG_CHECK(static_cast<int>(out.size()) == n, f.source_name(), ": ", key, " has ", out.size(),
             " entries, expected one per layer (", n, ")");
  } else {
    out.assign(static_cast<size_t>(n), *f.get_int(key));
  }
  return out;
}

int64_t gguf_required_int(const GgufFile& f, const std::string& key) {
  const std::optional<int64_t> v = f.get_int(key);
  OG_CHECK(v.has_value(), f.source_name(), ": missing required key ", key);
  return *v;
}

int checked_dim(int64_t v, const std::string& where, const std::string& key) {
  OG_CHECK(v > 0 && v <= kMaxDim, where, ": ", key, " = ", v, " is out of range");
  return static_cast<int>(v);
}

// Keys that, when set, describe something the engine does not implement.
void refuse_gguf_unsupported(const GgufFile& f, const std::string& p, bool reads_softcap, bool reads_experts) {
  const std::string src = f.source_name();
  if (auto e = f.get_int(p + "expert_count"); e && *e > 0 && !reads_experts)
    fail(src, ": ", p, "expert_count = ", *e, ": mixture-of-experts models of this architecture are not supported "
         "(supported: qwen3moe, and llama as Mixtral)");
  if (auto s = f.get_float(p + "attn_logit_softcapping"); s && *s != 0)
    fail(src, ": ", p, "attn_logit_softcapping = ", *s, ": attention logit soft-capping is not supported");
  if (auto s = f.get_float(p + "final_logit_softcapping"); s && *s != 0 && !reads_softcap)
    fail(src, ": ", p, "final_logit_softcapping = ", *s, ": final logit soft-capping is not supported");
  if (auto s = f.get_int(p + "attention.chunk_size"); s && *s != 0)
    fail(src, ": ", p, "attention.chunk_size = ", *s, ": chunked attention is not supported");
}

}  // namespace

void set_rope(LayerConfig& L, double base, const RopeScaling& s, const std::vector<float>& ff) {
  const int n_rot = L.rope_n_rot;
  std::vector<float> f = rope_inv_freq(base, n_rot);
  std::vector<float> factors = ff;
  if (s.type == RopeScaling::Type::kLlama3)
    factors = llama3_rope_factors(base, n_rot, s.factor, s.low_freq_factor, s.high_freq_factor,
                                  s.original_max_positions);
  for (size_t i = 0; i < f.size(); ++i) {
    double x = f[i];
    if (s.type == RopeScaling::Type::kLinear) x /= s.factor;
    if (i < factors.size()) x /= factors[i];
    f[i] = static_cast<float>(x);
  }
  L.rope_base = base;
  L.rope_scaling = s;
  L.rope_freq_factors = std::move(factors);
  L.rope_inv_freq_long.clear();
  L.rope_long_after = 0;
  L.rope_attn_factor = 1.0f;
  if (s.type == RopeScaling::Type::kLongrope) {
    // Two tables, short and long factors; the run's context picks one (forward.cpp).
    const std::vector<float> plain = f;
    auto divided = [&](const std::vector<float>& by) {
      std::vector<float> t = plain;
      for (size_t i = 0; i < t.size() && i < by.size(); ++i) t[i] = static_cast<float>(double{t[i]} / by[i]);
      return t;
    };
    f = divided(s.short_factor);
    L.rope_inv_freq_long = divided(s.long_factor);
    L.rope_long_after = static_cast<int64_t>(s.original_max_positions);
    L.rope_attn_factor = static_cast<float>(s.attn_factor);
  }
  if (s.type == RopeScaling::Type::kYarn) f = yarn_rope_inv_freq(base, n_rot, s);
  L.rope_inv_freq = std::move(f);
}

std::vector<float> checked_rope_factors(const std::vector<float>& f, int n_rot, const std::string& what) {
  OG_CHECK(static_cast<int>(f.size()) == n_rot / 2, what, " has ", f.size(), " values, expected ", n_rot / 2,
           " (half the RoPE dimension count ", n_rot, ")");
  for (float x : f) OG_CHECK(std::isfinite(x) && x > 0, what, " holds ", x, ", not a positive number");
  return f;
}

// rope.scaling.type "yarn": factor (> 1), original_context_length (required),
// the ramp's yarn_beta_fast / yarn_beta_slow (llama.cpp's defaults 32 and 1).
// The yarn keys llama.cpp reads only for other archs (ext/attn factor, log
// multiplier) are refused unless they hold the value it runs with.
static RopeScaling gguf_yarn_scaling(const GgufFile& f, const std::string& arch) {
  const std::string src = f.source_name(), p = arch + ".rope.scaling.";
  RopeScaling s;
  s.type = RopeScaling::Type::kYarn;
  s.factor = f.get_float(p + "factor").value_or(1.0);
  OG_CHECK(std::isfinite(s.factor) && s.factor >= 1, src, ": ", p, "factor = ", s.factor, " must be >= 1 for yarn");
  const std::optional<int64_t> orig = f.get_int(p + "original_context_length");
  OG_CHECK(orig && *orig > 1, src, ": yarn scaling needs ", p, "original_context_length (> 1)");
  s.original_max_positions = static_cast<double>(*orig);
  s.yarn_beta_fast = f.get_float(p + "yarn_beta_fast").value_or(32.0);
  s.yarn_beta_slow = f.get_float(p + "yarn_beta_slow").value_or(1.0);
  OG_CHECK(std::isfinite(s.yarn_beta_fast) && std::isfinite(s.yarn_beta_slow) && s.yarn_beta_slow > 0 &&
               s.yarn_beta_fast > s.yarn_beta_slow,
           src, ": ", p, "yarn_beta_fast ", s.yarn_beta_fast, " / yarn_beta_slow ", s.yarn_beta_slow,
           " must be positive with fast > slow");
  for (const char* key : {"yarn_ext_factor", "yarn_attn_factor"})
    if (auto v = f.get_float(p + key); v && *v != 1)
      fail(src, ": ", p, key, " = ", *v, " is not supported (only 1)");
  if (auto v = f.get_float(p + "yarn_log_multiplier"); v && *v != 0)
    fail(src, ": ", p, "yarn_log_multiplier = ", *v, " is not supported");
  return s;
}

RopeScaling gguf_rope_scaling(const GgufFile& f, const std::string& arch) {
  RopeScaling s;
  const std::string type_key = arch + ".rope.scaling.type";
  const std::string factor_key = arch + ".rope.scaling.factor";
  const std::optional<std::string> type = f.get_string(type_key);
  const std::optional<double> factor = f.get_float(factor_key);
  if (type && *type == "yarn") return gguf_yarn_scaling(f, arch);
  // llama.cpp: a missing type means linear; a missing or zero factor means 1.
  if (type && *type != "linear" && *type != "none")
    fail(f.source_name(), ": ", type_key, " '", *type, "' is not supported (supported: none, linear, yarn)");
  if ((!type || *type == "linear") && factor && *factor != 0 && *factor != 1) {
    OG_CHECK(std::isfinite(*factor) && *factor > 0, f.source_name(), ": ", factor_key, " = ", *factor,
             " must be positive");
    s.type = RopeScaling::Type::kLinear;
    s.factor = *factor;
  }
  return s;
}

void read_gguf_common(const GgufFile& f, const std::string& arch, ModelConfig& c, bool reads_softcap,
                      bool reads_experts, bool reads_fused_qkv) {
  const std::string src = f.source_name();
  const std::string p = arch + ".";
  const int64_t n_layers = gguf_required_int(f, p + "block_count");
  OG_CHECK(n_layers > 0 && n_layers <= kMaxLayers, src, ": ", p, "block_count = ", n_layers, " is out of range");
  const int n = static_cast<int>(n_layers);
  c.d_model = checked_dim(gguf_required_int(f, p + "embedding_length"), src, p + "embedding_length");
  c.n_ctx = gguf_required_int(f, p + "context_length");
  OG_CHECK(c.n_ctx > 0, src, ": ", p, "context_length = ", c.n_ctx, " must be positive");
  if (auto v = f.get_int(p + "vocab_size")) {
    OG_CHECK(*v > 0 && *v <= INT32_MAX, src, ": ", p, "vocab_size = ", *v, " is out of range");
    c.n_vocab = static_cast<int32_t>(*v);
  }
  const std::optional<double> eps = f.get_float(p + "attention.layer_norm_rms_epsilon");
  OG_CHECK(eps.has_value(), src, ": missing required key ", p, "attention.layer_norm_rms_epsilon");
  c.eps = static_cast<float>(*eps);

  const auto ff = gguf_per_layer(f, p + "feed_forward_length", n);
  OG_CHECK(ff.has_value(), src, ": missing required key ", p, "feed_forward_length");
  const auto heads = gguf_per_layer(f, p + "attention.head_count", n);
  OG_CHECK(heads.has_value(), src, ": missing required key ", p, "attention.head_count");
  const auto kv_heads = gguf_per_layer(f, p + "attention.head_count_kv", n);
  const std::optional<int64_t> key_len = f.get_int(p + "attention.key_length");
  const std::optional<int64_t> value_len = f.get_int(p + "attention.value_length");
  const std::optional<int64_t> n_rot = f.get_int(p + "rope.dimension_count");
  const double base = f.get_float(p + "rope.freq_base").value_or(10000.0);
  OG_CHECK(std::isfinite(base) && base > 1, src, ": ", p, "rope.freq_base = ", base, " must be > 1");
  const RopeScaling scaling = gguf_rope_scaling(f, arch);
  const int64_t window = f.get_int(p + "attention.sliding_window").value_or(0);
  OG_CHECK(window >= 0 && window <= INT32_MAX, src, ": ", p, "attention.sliding_window = ", window,
           " is out of range");

  refuse_gguf_unsupported(f, p, reads_softcap, reads_experts);

  std::vector<float> freq_factors;  // llama 3.1+: rope_freqs.weight [n_rot / 2]
  c.layers.assign(static_cast<size_t>(n), LayerConfig{});
  for (int l = 0; l < n; ++l) {
    LayerConfig& L = c.layers[l];
    const std::string lay = cat("layer ", l, " ");
    L.n_heads = checked_dim((*heads)[l], src, lay + p + "attention.head_count");
    L.n_kv_heads = kv_heads ? checked_dim((*kv_heads)[l], src, lay + p + "attention.head_count_kv") : L.n_heads;
    if (!key_len || !value_len)
      OG_CHECK(c.d_model % L.n_heads == 0, src, ": ", p, "embedding_length ", c.d_model,
               " is not divisible by ", p, "attention.head_count ", L.n_heads, " (and no key_length is given)");
    L.head_dim_k = key_len ? checked_dim(*key_len, src, p + "attention.key_length")
                           : static_cast<int>(c.d_model / L.n_heads);
    L.head_dim_v = value_len ? checked_dim(*value_len, src, p + "attention.value_length")
                             : static_cast<int>(c.d_model / L.n_heads);
    OG_CHECK(L.n_heads % L.n_kv_heads == 0, src, ": ", p, "attention.head_count_kv ", L.n_kv_heads,
             " does not divide ", p, "attention.head_count ", L.n_heads);
    L.d_ff = checked_dim((*ff)[l], src, lay + p + "feed_forward_length");
    const int64_t rot = n_rot.value_or(L.head_dim_k);
    OG_CHECK(rot > 0 && rot <= L.head_dim_k && rot % 2 == 0, src, ": ", p, "rope.dimension_count ", rot,
             " must be even and at most the key length ", L.head_dim_k);
    L.rope_n_rot = static_cast<int>(rot);
    if (l == 0 && f.find("rope_freqs.weight") != nullptr)
      freq_factors = tensor_to_f32(f, "rope_freqs.weight", L.rope_n_rot / 2);
    set_rope(L, base, scaling, freq_factors);
    L.window = static_cast<int>(window);
    // YaRN scales cos and sin by m; rotating every dim, q·k grows by m², folded in here.
    OG_CHECK(scaling.type != RopeScaling::Type::kYarn || L.rope_n_rot == L.head_dim_k, src,
             ": yarn scaling with ", p, "rope.dimension_count ", L.rope_n_rot, " below the key length ",
             L.head_dim_k, " is not supported");
    const double m = yarn_mscale(scaling);
    L.attn_scale = static_cast<float>(m * m / std::sqrt(static_cast<double>(L.head_dim_k)));
    const std::string b = cat("blk.", l, ".");
    // A fused attn_qkv (Phi-3; llama.cpp accepts it there in place of q/k/v) is bound as three row views.
    L.qkv_fused = f.find(b + "attn_qkv.weight") != nullptr;
    OG_CHECK(!L.qkv_fused || reads_fused_qkv, src, ": fused tensor ", b,
             "attn_qkv.weight is not supported (expected separate attn_q/attn_k/attn_v)");
    L.has_qkv_bias = f.find(b + (L.qkv_fused ? "attn_qkv.bias" : "attn_q.bias")) != nullptr;
    L.has_o_bias = f.find(b + "attn_output.bias") != nullptr;
  }
  read_gguf_embedding(f, arch, c);
}

namespace {

bool hf_bool(const nlohmann::json& cfg, const char* key, const std::string& file, bool fallback) {
  return json_bool(cfg, key, file).value_or(fallback);
}

int hf_dim(const nlohmann::json& cfg, const char* key, const std::string& file) {
  const std::optional<int64_t> v = json_int(cfg, key, file);
  OG_CHECK(v.has_value(), file, ": missing required field ", key);
  return checked_dim(*v, file, key);
}

// Fields that, when set, describe something the engine does not implement.
void refuse_unsupported(const nlohmann::json& cfg, const std::string& file, bool reads_experts,
                        bool reads_partial_rotary) {
  for (const char* k : {"attn_logit_softcapping", "final_logit_softcapping", "attention_chunk_size",
                        "sliding_window_size_chunked"}) {
    if (!json_has(cfg, k)) continue;
    const nlohmann::json& v = cfg.at(k);
    if (v.is_number() && v.get<double>() == 0) continue;
    fail(file, ": ", k, " = ", json_excerpt(v), " is not supported");
  }
  for (const char* k : {"num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size"}) {
    if (!json_has(cfg, k) || reads_experts) continue;
    const nlohmann::json& v = cfg.at(k);
    if (v.is_number() && v.get<double>() == 0) continue;
    fail(file, ": ", k, " = ", json_excerpt(v), ": mixture-of-experts models of this architecture are not "
         "supported (supported: Qwen3MoeForCausalLM, MixtralForCausalLM, GptOssForCausalLM)");
  }
  if (hf_bool(cfg, "mlp_bias", file, false)) fail(file, ": mlp_bias = true is not supported");
  if (auto r = json_number(cfg, "partial_rotary_factor", file); r && *r != 1.0 && !reads_partial_rotary)
    fail(file, ": partial_rotary_factor = ", *r, " is not supported (only full-head RoPE)");
}

// The rotated dims of a head_dim head: int(head_dim * partial_rotary_factor)
// (top level, or in rope_parameters), as transformers and llama.cpp's converter.
int hf_rotary_dims(const nlohmann::json& cfg, const std::string& file, int head_dim) {
  std::optional<double> r = json_number(cfg, "partial_rotary_factor", file);
  if (!r && json_has(cfg, "rope_parameters") && cfg.at("rope_parameters").is_object())
    r = json_number(cfg.at("rope_parameters"), "partial_rotary_factor", file + ": rope_parameters");
  if (!r) return head_dim;
  OG_CHECK(std::isfinite(*r) && *r > 0 && *r <= 1, file, ": partial_rotary_factor = ", *r, " must be in (0, 1]");
  const int n_rot = static_cast<int>(head_dim * *r);
  OG_CHECK(n_rot > 0 && n_rot % 2 == 0, file, ": partial_rotary_factor ", *r, " rotates ", n_rot, " of ", head_dim,
           " dims (must be a positive even count)");
  return n_rot;
}

// longrope's context facts (transformers' rule): the original context from
// the scaling object or config.json's original_max_position_embeddings;
// attention factor, unless given, sqrt(1 + ln(s) / ln(orig)) for s =
// max_position_embeddings / orig > 1, else 1; factor lengths n_rot / 2.
void resolve_hf_longrope(const nlohmann::json& cfg, const std::string& file, int64_t n_ctx, int n_rot,
                         RopeScaling& s) {
  if (s.original_max_positions <= 0) {
    const std::optional<int64_t> orig = json_int(cfg, "original_max_position_embeddings", file);
    OG_CHECK(orig && *orig > 1, file, ": longrope scaling needs original_max_position_embeddings (> 1)");
    s.original_max_positions = static_cast<double>(*orig);
  }
  OG_CHECK(s.original_max_positions > 1, file, ": rope_scaling.original_max_position_embeddings must be > 1");
  s.factor = static_cast<double>(n_ctx) / s.original_max_positions;
  if (s.attn_factor <= 0)
    s.attn_factor = s.factor <= 1 ? 1.0 : std::sqrt(1 + std::log(s.factor) / std::log(s.original_max_positions));
  s.short_factor = checked_rope_factors(s.short_factor, n_rot, file + ": rope_scaling.short_factor");
  s.long_factor = checked_rope_factors(s.long_factor, n_rot, file + ": rope_scaling.long_factor");
}

}  // namespace

RopeScaling parse_hf_rope(const nlohmann::json& obj, const std::string& where) {
  RopeScaling s;
  if (obj.is_null()) return s;
  OG_CHECK(obj.is_object(), where, " must be an object or null, got ", json_excerpt(obj));
  std::string type = "default";
  if (auto t = json_string(obj, "rope_type", where)) type = *t;
  else if (auto t2 = json_string(obj, "type", where)) type = *t2;
  auto num = [&](const char* key, double fallback) {
    const std::optional<double> v = json_number(obj, key, where);
    const double x = v.value_or(fallback);
    OG_CHECK(std::isfinite(x) && x > 0, where, ".", key, " = ", x, " must be positive");
    return x;
  };
  if (type == "default") return s;
  if (type == "linear") {
    s.type = RopeScaling::Type::kLinear;
    s.factor = num("factor", 1.0);
    return s;
  }
  if (type == "longrope" || type == "su") {  // Phi-3 ("su" in its first configs)
    s.type = RopeScaling::Type::kLongrope;
    auto factors = [&](const char* key) {
      OG_CHECK(json_has(obj, key) && obj.at(key).is_array(), where, ".", key, " must be a list of numbers");
      std::vector<float> f;
      for (const nlohmann::json& x : obj.at(key)) {
        OG_CHECK(x.is_number(), where, ".", key, " holds ", json_excerpt(x), ", not a number");
        f.push_back(x.get<float>());
      }
      return f;
    };
    s.short_factor = factors("short_factor");
    s.long_factor = factors("long_factor");
    // Resolved by read_hf_common from config.json when absent here (0).
    s.original_max_positions = json_has(obj, "original_max_position_embeddings")
                                   ? num("original_max_position_embeddings", 1.0) : 0;
    s.attn_factor = json_has(obj, "attention_factor") ? num("attention_factor", 1.0) : 0;
    return s;
  }
  if (type == "llama3") {
    s.type = RopeScaling::Type::kLlama3;
    s.factor = num("factor", 8.0);
    s.low_freq_factor = num("low_freq_factor", 1.0);
    s.high_freq_factor = num("high_freq_factor", 4.0);
    s.original_max_positions = num("original_max_position_embeddings", 8192.0);
    OG_CHECK(s.high_freq_factor > s.low_freq_factor, where, ": high_freq_factor ", s.high_freq_factor,
             " must exceed low_freq_factor ", s.low_freq_factor);
    return s;
  }
  if (type == "yarn") {  // gpt-oss; transformers' _compute_yarn_parameters
    s.type = RopeScaling::Type::kYarn;
    s.factor = num("factor", 1.0);
    OG_CHECK(s.factor >= 1, where, ".factor = ", s.factor, " must be >= 1 for yarn");
    OG_CHECK(json_has(obj, "original_max_position_embeddings"), where,
             ": yarn scaling needs original_max_position_embeddings");
    s.original_max_positions = num("original_max_position_embeddings", 1.0);
    s.yarn_beta_fast = num("beta_fast", 32.0);
    s.yarn_beta_slow = num("beta_slow", 1.0);
    OG_CHECK(s.yarn_beta_fast > s.yarn_beta_slow, where, ": beta_fast ", s.yarn_beta_fast,
             " must exceed beta_slow ", s.yarn_beta_slow);
    s.yarn_truncate = json_bool(obj, "truncate", where).value_or(true);
    // Other magnitudes than transformers' default 1 + 0.1 ln(factor) are not run.
    for (const char* key : {"attention_factor", "mscale", "mscale_all_dim"})
      if (json_has(obj, key)) fail(where, ".", key, " = ", json_excerpt(obj.at(key)), " is not supported");
    return s;
  }
  fail(where, ".rope_type '", type, "' is not supported (supported: default, linear, llama3, longrope, yarn)");
}

double hf_rope_theta(const nlohmann::json& cfg, const std::string& file, double fallback) {
  double base = fallback;
  if (auto t = json_number(cfg, "rope_theta", file)) base = *t;
  else if (json_has(cfg, "rope_parameters") && json_has(cfg.at("rope_parameters"), "rope_theta"))
    base = *json_number(cfg.at("rope_parameters"), "rope_theta", file + ": rope_parameters");
  OG_CHECK(std::isfinite(base) && base > 1, file, ": rope_theta = ", base, " must be > 1");
  return base;
}

std::optional<std::vector<bool>> hf_layer_types(const nlohmann::json& cfg, const std::string& file, int n_layers) {
  if (!json_has(cfg, "layer_types")) return std::nullopt;
  const nlohmann::json& t = cfg.at("layer_types");
  OG_CHECK(t.is_array() && static_cast<int>(t.size()) == n_layers, file, ": layer_types must be a list of ",
           n_layers, " entries");
  std::vector<bool> sliding;
  for (const nlohmann::json& e : t) {
    const std::string s = e.is_string() ? e.get<std::string>() : json_excerpt(e);
    if (s == "full_attention") sliding.push_back(false);
    else if (s == "sliding_attention") sliding.push_back(true);
    else fail(file, ": layer_types entry '", s, "' is not supported (supported: full_attention, sliding_attention)");
  }
  return sliding;
}

void read_hf_common(const HfInput& in, ModelConfig& c, double default_eps, bool default_tied, bool reads_experts,
                    bool reads_partial_rotary) {
  const nlohmann::json& cfg = in.config;
  const std::string& file = in.file;
  refuse_unsupported(cfg, file, reads_experts, reads_partial_rotary);
  const int64_t n_layers = hf_dim(cfg, "num_hidden_layers", file);
  OG_CHECK(n_layers <= kMaxLayers, file, ": num_hidden_layers = ", n_layers, " is out of range");
  c.d_model = hf_dim(cfg, "hidden_size", file);
  const std::optional<int64_t> ctx = json_int(cfg, "max_position_embeddings", file);
  OG_CHECK(ctx.has_value() && *ctx > 0, file, ": missing or invalid max_position_embeddings");
  c.n_ctx = *ctx;
  if (auto v = json_int(cfg, "vocab_size", file)) {
    OG_CHECK(*v > 0 && *v <= INT32_MAX, file, ": vocab_size = ", *v, " is out of range");
    c.n_vocab = static_cast<int32_t>(*v);
  }
  c.eps = static_cast<float>(json_number(cfg, "rms_norm_eps", file).value_or(default_eps));
  c.tied_output = hf_bool(cfg, "tie_word_embeddings", file, default_tied);

  const int heads = hf_dim(cfg, "num_attention_heads", file);
  const int kv_heads = json_has(cfg, "num_key_value_heads") ? hf_dim(cfg, "num_key_value_heads", file) : heads;
  OG_CHECK(heads % kv_heads == 0, file, ": num_key_value_heads ", kv_heads, " does not divide num_attention_heads ",
           heads);
  int head_dim = 0;
  if (json_has(cfg, "head_dim")) {
    head_dim = hf_dim(cfg, "head_dim", file);
  } else {
    OG_CHECK(c.d_model % heads == 0, file, ": hidden_size ", c.d_model, " is not divisible by num_attention_heads ",
             heads, " (and no head_dim is given)");
    head_dim = static_cast<int>(c.d_model / heads);
  }
  const int d_ff = hf_dim(cfg, "intermediate_size", file);

  Activation act = Activation::kSilu;
  std::optional<std::string> act_name = json_string(cfg, "hidden_activation", file);
  const char* act_key = "hidden_activation";
  if (!act_name) {
    act_name = json_string(cfg, "hidden_act", file);
    act_key = "hidden_act";
  }
  if (act_name) {
    if (*act_name == "silu" || *act_name == "swish") act = Activation::kSilu;
    else if (*act_name == "gelu_pytorch_tanh" || *act_name == "gelu_tanh") act = Activation::kGeluTanh;
    else fail(file, ": ", act_key, " '", *act_name, "' is not supported (supported: silu, gelu_pytorch_tanh)");
  }
  const bool attn_bias = hf_bool(cfg, "attention_bias", file, false);

  const double base = hf_rope_theta(cfg, file, 10000.0);
  RopeScaling scaling;
  if (json_has(cfg, "rope_scaling")) scaling = parse_hf_rope(cfg.at("rope_scaling"), file + ": rope_scaling");
  else if (json_has(cfg, "rope_parameters")) scaling = parse_hf_rope(cfg.at("rope_parameters"), file + ": rope_parameters");

  const int n_rot = reads_partial_rotary ? hf_rotary_dims(cfg, file, head_dim) : head_dim;
  if (scaling.type == RopeScaling::Type::kLongrope) resolve_hf_longrope(cfg, file, c.n_ctx, n_rot, scaling);

  c.layers.assign(static_cast<size_t>(n_layers), LayerConfig{});
  for (LayerConfig& L : c.layers) {
    L.n_heads = heads;
    L.n_kv_heads = kv_heads;
    L.head_dim_k = L.head_dim_v = head_dim;
    L.d_ff = d_ff;
    L.rope_n_rot = n_rot;
    L.rope_interleaved = false;
    set_rope(L, base, scaling, {});
    L.activation = act;
    L.has_qkv_bias = L.has_o_bias = attn_bias;
    // YaRN scales cos and sin by m; rotating every dim, q·k grows by m², folded in here (as GGUF).
    OG_CHECK(scaling.type != RopeScaling::Type::kYarn || n_rot == head_dim, file,
             ": yarn scaling with partial rotation is not supported");
    const double m = yarn_mscale(scaling);
    L.attn_scale = static_cast<float>(m * m / std::sqrt(static_cast<double>(head_dim)));
  }
}

}  // namespace og
