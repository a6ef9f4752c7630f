// ModelConfig helpers: RoPE frequency tables (plain and llama3-scaled),
// consistency checks, the KV geometry a config implies, a short description.
#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "base/error.h"

namespace og {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kSilu: return "silu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kGeluErf: return "gelu";
  }
  return "?";
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kUnset: return "unset";
    case Pooling::kNone: return "none";
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
  }
  return "?";
}

std::vector<float> rope_inv_freq(double base, int n_rot) {
  std::vector<float> f(static_cast<size_t>(n_rot / 2));
  for (int i = 0; i < n_rot / 2; ++i) f[i] = static_cast<float>(std::pow(base, -2.0 * i / n_rot));
  return f;
}

std::vector<float> yarn_rope_inv_freq(double base, int n_rot, const RopeScaling& s) {
  const double kPi = 3.14159265358979323846;
  auto corr_dim = [&](double beta) {
    return n_rot * std::log(s.original_max_positions / (beta * 2 * kPi)) / (2 * std::log(base));
  };
  double lo = corr_dim(s.yarn_beta_fast), hi = corr_dim(s.yarn_beta_slow);
  if (s.yarn_truncate) lo = std::floor(lo), hi = std::ceil(hi);
  lo = std::max(0.0, lo);
  hi = std::min(double(n_rot - 1), hi);
  std::vector<float> f = rope_inv_freq(base, n_rot);
  for (int i = 0; i < n_rot / 2; ++i) {
    const double y = (i - lo) / std::max(0.001, hi - lo);
    const double r = 1 - std::min(1.0, std::max(0.0, y));  // 1: extrapolate (high frequencies), 0: interpolate
    f[i] = static_cast<float>(f[i] * ((1 - r) / s.factor + r));
  }
  return f;
}

double yarn_mscale(const RopeScaling& s) {
  return s.type == RopeScaling::Type::kYarn && s.factor > 1 ? 1.0 + 0.1 * std::log(s.factor) : 1.0;
}

std::vector<float> llama3_rope_factors(double base, int n_rot, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_max_positions) {
  const double kPi = 3.14159265358979323846;
  const double wavelen_lo = original_max_positions / low_freq_factor;   // longer than this: fully scaled
  const double wavelen_hi = original_max_positions / high_freq_factor;  // shorter than this: untouched
  std::vector<float> ff(static_cast<size_t>(n_rot / 2));
  for (int i = 0; i < n_rot / 2; ++i) {
    const double freq = std::pow(base, -2.0 * i / n_rot);
    const double wavelen = 2 * kPi / freq;
    double f;
    if (wavelen < wavelen_hi) {
      f = 1.0;
    } else if (wavelen > wavelen_lo) {
      f = factor;
    } else {
      const double s = (original_max_positions / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1 - s) / factor + s);
    }
    ff[i] = static_cast<float>(f);
  }
  return ff;
}

// More than any published model (DeepSeek-V3 and Qwen3-235B have 256 and 128).
constexpr int kMaxExperts = 1024;

void validate_config(const ModelConfig& c, const std::string& what) {
  OG_CHECK(c.d_model > 0, what, ": hidden size (embedding_length) must be positive, got ", c.d_model);
  OG_CHECK(c.n_vocab >= 0, what, ": vocabulary size must be positive, got ", c.n_vocab);  // 0: from the embedding
  OG_CHECK(c.n_layers() > 0, what, ": the model has no layers");
  // Real models use 1e-5 .. 1e-6; an epsilon of 1 or more swamps the mean square (a misread field).
  OG_CHECK(std::isfinite(c.eps) && c.eps > 0 && c.eps < 1, what, ": RMSNorm epsilon must be in (0, 1), got ", c.eps);
  OG_CHECK(std::isfinite(c.final_logit_softcap) && c.final_logit_softcap >= 0, what,
           ": final logit soft-cap must be 0 (none) or positive, got ", c.final_logit_softcap);
  OG_CHECK(c.d_per_layer >= 0 && c.d_per_layer <= (int64_t{1} << 24), what, ": per-layer input width ",
           c.d_per_layer, " is out of range");
  int64_t dense_in = c.d_model;
  for (size_t i = 0; i < c.dense.size(); ++i) {
    const DenseProjection& p = c.dense[i];
    OG_CHECK(p.d_in == dense_in && p.d_out > 0 && p.d_out <= (int64_t{1} << 24), what, ": dense projection ", i,
             " maps ", p.d_in, " -> ", p.d_out, " values but its input is ", dense_in, " wide");
    dense_in = p.d_out;
  }
  OG_CHECK(c.has_output_norm || c.pooling != Pooling::kUnset, what,
           ": an encoder (no output norm or head) must declare its pooling (it can only embed)");
  OG_CHECK(c.n_token_types >= 0 && c.n_token_types <= 65536, what, ": token type count ", c.n_token_types,
           " is out of range");
  OG_CHECK(c.causal || c.pooling != Pooling::kUnset, what,
           ": a bidirectional (non-causal) model must declare its pooling (it can only embed)");
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const std::string at = cat(what, ": layer ", l, ": ");
    OG_CHECK(L.n_heads > 0, at, "head count must be positive, got ", L.n_heads);
    OG_CHECK(L.n_kv_heads > 0, at, "KV head count must be positive, got ", L.n_kv_heads);
    OG_CHECK(L.n_heads % L.n_kv_heads == 0, at, "KV head count ", L.n_kv_heads, " does not divide head count ",
             L.n_heads);
    OG_CHECK(L.head_dim_k > 0 && L.head_dim_v > 0, at, "head dims must be positive, got k ", L.head_dim_k, " v ",
             L.head_dim_v);
    OG_CHECK(L.d_ff > 0, at, "feed-forward width must be positive, got ", L.d_ff);
    if (L.n_experts != 0) {
      OG_CHECK(L.n_experts > 0 && L.n_experts <= kMaxExperts, at, "expert count ", L.n_experts, " must be in 1..",
               kMaxExperts);
      OG_CHECK(L.n_experts_used > 0 && L.n_experts_used <= L.n_experts, at, "used expert count ", L.n_experts_used,
               " must be in 1..", L.n_experts, " (the expert count)");
      OG_CHECK(L.d_ff_expert > 0 && L.d_ff_expert <= (int64_t{1} << 24), at, "expert feed-forward width ",
               L.d_ff_expert, " is out of range");
      OG_CHECK(!L.expert_softmax_after_topk || L.n_experts_used <= 64, at, "softmax after top-k runs at most 64 "
               "experts per token, not ", L.n_experts_used);
    } else {
      OG_CHECK(L.n_experts_used == 0, at, "used expert count ", L.n_experts_used, " without experts");
      OG_CHECK(!L.expert_softmax_after_topk && !L.has_router_bias && !L.has_expert_bias && !L.expert_swiglu_oai, at,
               "expert routing, biases or activation are set on a layer without experts");
    }
    OG_CHECK(L.rope_scaling.type != RopeScaling::Type::kYarn || L.rope_n_rot == L.head_dim_k, at,
             "YaRN scaling needs every dim rotated (its magnitude is folded into the attention scale)");
    OG_CHECK(L.window >= 0, at, "sliding window must be >= 0, got ", L.window);
    OG_CHECK(!c.layer_norm || L.post_norm, at, "LayerNorm is supported only in post-norm (BERT-style) layers");
    OG_CHECK(L.ffn_gated || L.activation == Activation::kGeluErf, at, "an ungated MLP must use gelu, not ",
             activation_name(L.activation));
    OG_CHECK(L.ffn_gated || L.n_experts == 0, at, "an ungated MLP cannot have experts");
    OG_CHECK(L.rope_n_rot >= 0 && L.rope_n_rot <= L.head_dim_k && L.rope_n_rot % 2 == 0, at,
             "RoPE dimension count ", L.rope_n_rot, " must be even and at most the head dim ", L.head_dim_k);
    OG_CHECK(static_cast<int>(L.rope_inv_freq.size()) == L.rope_n_rot / 2, at, "RoPE table has ",
             L.rope_inv_freq.size(), " entries, expected ", L.rope_n_rot / 2);
    // 0 is allowed: a pair that does not rotate (partial "proportional" RoPE).
    for (float f : L.rope_inv_freq) OG_CHECK(std::isfinite(f) && f >= 0, at, "RoPE frequency ", f, " is negative");
    OG_CHECK(L.rope_inv_freq_long.empty() || L.rope_inv_freq_long.size() == L.rope_inv_freq.size(), at,
             "long-context RoPE table has ", L.rope_inv_freq_long.size(), " entries, expected ", L.rope_n_rot / 2);
    for (float f : L.rope_inv_freq_long)
      OG_CHECK(std::isfinite(f) && f >= 0, at, "long-context RoPE frequency ", f, " is negative");
    OG_CHECK(std::isfinite(L.rope_attn_factor) && L.rope_attn_factor > 0, at,
             "RoPE attention factor must be positive, got ", L.rope_attn_factor);
    OG_CHECK(std::isfinite(L.attn_scale) && L.attn_scale > 0, at, "attention scale must be positive, got ",
             L.attn_scale);
    if (L.kv_donor >= 0) {
      OG_CHECK(L.kv_donor < l, at, "KV donor layer ", L.kv_donor, " must be an earlier layer");
      const LayerConfig& D = c.layers[L.kv_donor];
      OG_CHECK(D.n_kv_heads == L.n_kv_heads && D.head_dim_k == L.head_dim_k && D.head_dim_v == L.head_dim_v &&
                   D.window == L.window,
               at, "KV donor layer ", L.kv_donor, " has a different KV shape or window");
    } else {
      OG_CHECK(L.kv_donor == -1, at, "KV donor must be -1 or a layer index, got ", L.kv_donor);
    }
  }
}

KvGeometry kv_geometry_from_config(const ModelConfig& c) {
  KvGeometry g;
  g.layer_cache.resize(c.layers.size());
  g.layer_writes.resize(c.layers.size());
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const LayerConfig& L = c.layers[l];
    if (L.kv_donor < 0) {
      g.layer_cache[l] = static_cast<int>(g.caches.size());
      g.layer_writes[l] = true;
      g.caches.push_back(KvCacheSpec{L.n_kv_heads, L.head_dim_k, L.head_dim_v, L.window});
    } else {
      OG_CHECK(L.kv_donor < static_cast<int>(l), "layer ", l, ": KV donor ", L.kv_donor, " is not an earlier layer");
      g.layer_cache[l] = g.layer_cache[L.kv_donor];  // a donor's donor resolves transitively
      g.layer_writes[l] = false;
    }
  }
  return g;
}

namespace {
// Dims RoPE actually turns: pairs with a zero frequency stay put.
int rotated_dims(const LayerConfig& L) {
  int n = 0;
  for (float f : L.rope_inv_freq) n += f > 0 ? 2 : 0;
  return n;
}
}  // namespace

std::string describe_config(const ModelConfig& c) {
  std::ostringstream os;
  os << c.architecture << ": d_model=" << c.d_model << " n_layers=" << c.n_layers() << " n_vocab=" << c.n_vocab
     << " n_ctx=" << c.n_ctx << " eps=" << c.eps << (c.tied_output ? " tied" : "");
  if (c.embedding_scale != 1.0f) os << " embedding_scale=" << c.embedding_scale;
  if (c.d_per_layer > 0) os << " per_layer_input=" << c.d_per_layer;
  if (c.final_logit_softcap > 0) os << " logit_softcap=" << c.final_logit_softcap;
  if (c.pooling != Pooling::kUnset) os << " pooling=" << pooling_name(c.pooling);
  if (!c.causal) os << " bidirectional";
  if (c.layer_norm) os << " layer-norm";
  if (c.n_token_types > 0) os << " token_types=" << c.n_token_types;
  if (c.has_pos_embd) os << " abs-positions";
  for (const DenseProjection& p : c.dense) os << " dense=" << p.d_in << "->" << p.d_out;
  // Group identical layer kinds: "layers 0-4,6: heads 8/4 hd 8/8 ff 172 window 0 rope 10000 ..."
  std::map<std::string, std::vector<int>> kinds;
  std::vector<std::string> order;
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    std::ostringstream k;
    k << "heads " << L.n_heads << "/" << L.n_kv_heads << " hd " << L.head_dim_k << "/" << L.head_dim_v << " ff "
      << L.d_ff << " window " << L.window << " rope " << L.rope_base << (L.rope_interleaved ? " interleaved" : "")
      << " " << activation_name(L.activation) << (L.has_qkv_bias ? " qkv-bias" : "")
      << (L.has_q_norm ? " qk-norm" : "") << (L.has_v_norm ? " v-norm" : "")
      << (rotated_dims(L) < L.head_dim_k ? cat(" rotates ", rotated_dims(L)) : std::string())
      << (L.has_post_attn_norm ? " post-norms" : "") << (L.post_norm ? " post-ln" : "")
      << (L.qkv_fused ? " qkv-fused" : "") << (L.ffn_gated ? "" : " ungated") << (L.has_ffn_bias ? " ffn-bias" : "") << (L.has_output_scale ? " out-scale" : "")
      << (L.kv_donor >= 0 ? cat(" kv-from ", L.kv_donor) : std::string())
      << (L.gate_up_fused ? " gate-up-fused" : "")
      << (L.rope_inv_freq_long.empty() ? std::string()
                                       : cat(" longrope (long beyond ", L.rope_long_after, ", attn_factor ",
                                             L.rope_attn_factor, ")"))
      << (L.n_experts > 0 ? cat(" experts ", L.n_experts, " used ", L.n_experts_used, " ff_expert ", L.d_ff_expert,
                                L.expert_weights_norm ? "" : " unnormalised",
                                L.expert_softmax_after_topk ? " softmax-after-topk" : "",
                                L.has_router_bias ? " router-bias" : "", L.has_expert_bias ? " expert-bias" : "",
                                L.expert_swiglu_oai ? " swiglu-oai" : "")
                          : std::string())
      << (L.has_o_bias ? " o-bias" : "") << (L.has_sinks ? " sinks" : "")
      << (L.rope_scaling.type == RopeScaling::Type::kYarn
              ? cat(" yarn (factor ", L.rope_scaling.factor, ", orig ", L.rope_scaling.original_max_positions, ")")
              : std::string());
    if (!kinds.count(k.str())) order.push_back(k.str());
    kinds[k.str()].push_back(l);
  }
  for (const std::string& k : order) {
    os << "\n  " << kinds[k].size() << " layer(s) [";
    const auto& ls = kinds[k];
    for (size_t i = 0; i < ls.size(); ++i) os << (i ? "," : "") << ls[i];
    os << "]: " << k;
  }
  return os.str();
}

}  // namespace og
