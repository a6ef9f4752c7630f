// An independent, deliberately plain forward pass over one sequence, straight
// from the math in MODEL-FORMATS.md §4-5 and GEMMA4.md §4 (double
// accumulation, attention over explicit K/V lists), for f32 models held in a
// test::MemorySource (or an f32 GGUF) with GGUF tensor names. The model tests
// hold model/forward.cpp against it.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/config.h"
#include "model_test_util.h"

namespace og::test {

inline const float* tensor_f32(const TensorSource& src, const std::string& name) {
  const TensorInfo* t = src.find(name);
  if (t == nullptr) throw Error("naive forward: missing " + name);
  return reinterpret_cast<const float*>(t->data);
}

inline std::vector<double> naive_rms(const std::vector<double>& x, const float* w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * w[i];
  return y;
}

// y[o] = Σ_i W[o][i] x[i] (+ b[o]); W [n_out, n_in] row-major.
inline std::vector<double> naive_linear(const float* w, const float* b, const std::vector<double>& x, int64_t n_out) {
  std::vector<double> y(static_cast<size_t>(n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    double s = b ? b[o] : 0.0;
    for (size_t i = 0; i < x.size(); ++i) s += static_cast<double>(w[o * x.size() + i]) * x[i];
    y[o] = s;
  }
  return y;
}

// long_rope: longrope's long-context factors (rope_scaling.long_factor) in place of the short ones.
inline void naive_rope(double* x, const LayerConfig& L, int64_t pos, bool long_rope = false) {
  const int half = L.rope_n_rot / 2;
  const bool longrope = L.rope_scaling.type == RopeScaling::Type::kLongrope;
  const double m = longrope ? L.rope_scaling.attn_factor : 1.0;  // scales cos and sin
  for (int i = 0; i < half; ++i) {
    double f = L.rope_inv_freq[i];
    if (longrope)  // from the base and the factors themselves, not the loaded tables
      f = std::pow(L.rope_base, -2.0 * i / L.rope_n_rot) /
          (long_rope ? L.rope_scaling.long_factor[i] : L.rope_scaling.short_factor[i]);
    const double th = static_cast<double>(pos) * f;
    const int a = L.rope_interleaved ? 2 * i : i;
    const int b = L.rope_interleaved ? 2 * i + 1 : i + half;
    const double xa = x[a], xb = x[b];
    x[a] = m * (xa * std::cos(th) - xb * std::sin(th));
    x[b] = m * (xa * std::sin(th) + xb * std::cos(th));
  }
}

// Optional per-head RMSNorm (norm_w set) then RoPE of x [n_heads, head_dim] at pos.
inline void naive_heads_norm_rope(double* x, int n_heads, int hd, const float* norm_w, float eps,
                                  const LayerConfig& L, int64_t pos, bool long_rope = false) {
  for (int hh = 0; hh < n_heads; ++hh) {
    double* head = &x[hh * hd];
    if (norm_w) {
      std::vector<double> tmp = naive_rms(std::vector<double>(head, head + hd), norm_w, eps);
      std::copy(tmp.begin(), tmp.end(), head);
    }
    naive_rope(head, L, pos, long_rope);
  }
}

// Softmax attention of q [n_heads * head_dim_k] at position t over K/V
// ([positions][n_kv_heads * head_dim]), causal and windowed; [n_heads * head_dim_v].
// hi: the last position the query sees (t, or its bidirectional span's last).
inline std::vector<double> naive_attend(const LayerConfig& L, const std::vector<double>& q, int64_t t,
                                        const std::vector<std::vector<double>>& K,
                                        const std::vector<std::vector<double>>& V, int64_t hi) {
  const int hd = L.head_dim_k, hv = L.head_dim_v, group = L.n_heads / L.n_kv_heads;
  std::vector<double> out(static_cast<size_t>(L.n_heads) * hv, 0.0);
  const int64_t lo = L.window > 0 ? std::max<int64_t>(0, t - L.window + 1) : 0;
  for (int hh = 0; hh < L.n_heads; ++hh) {
    const int kvh = hh / group;
    std::vector<double> s;
    for (int64_t j = lo; j <= hi; ++j) {
      double dot = 0;
      for (int e = 0; e < hd; ++e) dot += q[hh * hd + e] * K[j][kvh * hd + e];
      s.push_back(dot * L.attn_scale);
    }
    double mx = s[0];
    for (double x : s) mx = std::max(mx, x);
    double sum = 0;
    for (double& x : s) sum += (x = std::exp(x - mx));
    for (int64_t j = lo; j <= hi; ++j)
      for (int e = 0; e < hv; ++e) out[hh * hv + e] += s[j - lo] / sum * V[j][kvh * hv + e];
  }
  return out;
}

inline double naive_act(Activation a, double x) {
  return a == Activation::kSilu ? x / (1 + std::exp(-x))
                                : 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// The gated MLP of one row xn [d_model] -> [d_model] (weights of layer prefix b).
template <typename Wf>
std::vector<double> naive_mlp(const LayerConfig& L, const Wf& W, const std::string& b, const std::vector<double>& xn,
                              int64_t d) {
  // Phi-3's fused ffn_up [2 d_ff, d]: gate rows, then up rows.
  const float* gate = L.gate_up_fused ? W(b + "ffn_up.weight") : W(b + "ffn_gate.weight");
  const float* up = L.gate_up_fused ? W(b + "ffn_up.weight") + L.d_ff * d : W(b + "ffn_up.weight");
  std::vector<double> g = naive_linear(gate, nullptr, xn, L.d_ff);
  std::vector<double> u = naive_linear(up, nullptr, xn, L.d_ff);
  for (int64_t i = 0; i < L.d_ff; ++i) {
    g[i] = naive_act(L.activation, g[i]) * u[i];
  }
  return naive_linear(W(b + "ffn_down.weight"), nullptr, g, d);
}

// A mixture-of-experts MLP of one row (GGUF 3-D expert tensors): softmax of
// the router logits, the n_experts_used most probable (ties to the lower
// index), weights renormalised when expert_weights_norm, experts summed.
template <typename Wf>
std::vector<double> naive_moe(const LayerConfig& L, const Wf& W, const std::string& b, const std::vector<double>& xn,
                              int64_t d) {
  const int E = L.n_experts;
  const int64_t ff = L.d_ff_expert;
  std::vector<double> p = naive_linear(W(b + "ffn_gate_inp.weight"), nullptr, xn, E);
  const double mx = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - mx));
  for (double& v : p) v /= sum;
  std::vector<int> idx(static_cast<size_t>(E));
  for (int e = 0; e < E; ++e) idx[e] = e;
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int c) { return p[a] > p[c]; });
  double chosen = 0;
  for (int j = 0; j < L.n_experts_used; ++j) chosen += p[idx[j]];
  std::vector<double> y(static_cast<size_t>(d), 0.0);
  for (int j = 0; j < L.n_experts_used; ++j) {
    const int e = idx[j];
    const double w = L.expert_weights_norm ? p[e] / chosen : p[e];
    std::vector<double> g = naive_linear(W(b + "ffn_gate_exps.weight") + e * ff * d, nullptr, xn, ff);
    std::vector<double> u = naive_linear(W(b + "ffn_up_exps.weight") + e * ff * d, nullptr, xn, ff);
    for (int64_t i = 0; i < ff; ++i) g[i] = naive_act(L.activation, g[i]) * u[i];
    std::vector<double> o = naive_linear(W(b + "ffn_down_exps.weight") + e * d * ff, nullptr, g, d);
    for (int64_t i = 0; i < d; ++i) y[i] += w * o[i];
  }
  return y;
}

// GEMMA4.md §4 step 2: pl[t] [n_layers * P] = (norm_P(W_plproj x / sqrt(d)) + PE[tok] sqrt(P)) / sqrt(2),
// x the scaled embedding of token t.
template <typename Wf>
std::vector<std::vector<double>> naive_per_layer_inputs(const ModelConfig& c, const Wf& W,
                                                        const std::vector<int32_t>& tokens,
                                                        const std::vector<std::vector<double>>& h) {
  const int64_t P = c.d_per_layer, LP = c.n_layers() * P;
  std::vector<std::vector<double>> pl(tokens.size());
  for (size_t t = 0; t < tokens.size(); ++t) {
    std::vector<double> proj = naive_linear(W("per_layer_model_proj.weight"), nullptr, h[t], LP);
    for (double& v : proj) v /= std::sqrt(static_cast<double>(c.d_model));
    for (int l = 0; l < c.n_layers(); ++l) {
      std::vector<double> slice(proj.begin() + l * P, proj.begin() + (l + 1) * P);
      slice = naive_rms(slice, W("per_layer_proj_norm.weight"), c.eps);
      for (int64_t i = 0; i < P; ++i) {
        const double e = W("per_layer_token_embd.weight")[tokens[t] * LP + l * P + i] * std::sqrt(double(P));
        pl[t].push_back((slice[i] + e) / std::sqrt(2.0));
      }
    }
  }
  return pl;
}

// Logits [tokens.size(), n_vocab] for every position of one sequence.
// long_rope: a longrope model run with its long factors (a context beyond the original).
// Positions [span_begin, span_end) attend to each other bidirectionally (an
// image span; none when equal) in the layers l with span_layers[l] (empty:
// every layer), causally in the others.
inline std::vector<float> naive_forward(const ModelConfig& c, const TensorSource& src,
                                        const std::vector<int32_t>& tokens, bool long_rope = false,
                                        int64_t span_begin = 0, int64_t span_end = 0,
                                        const std::vector<bool>& span_layers = {}) {
  const int64_t d = c.d_model, T = static_cast<int64_t>(tokens.size());
  auto W = [&](const std::string& n) { return tensor_f32(src, n); };
  auto opt = [&](const std::string& n) -> const float* {
    const TensorInfo* t = src.find(n);
    return t ? reinterpret_cast<const float*>(t->data) : nullptr;
  };
  std::vector<std::vector<double>> h(T);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < d; ++i) h[t].push_back(W("token_embd.weight")[tokens[t] * d + i] * c.embedding_scale);
  std::vector<std::vector<double>> pl;  // [T][n_layers * d_per_layer]
  if (c.d_per_layer > 0) pl = naive_per_layer_inputs(c, W, tokens, h);
  // K/V per layer per position: [T][n_kv_heads * head_dim]
  std::vector<std::vector<std::vector<double>>> K(c.n_layers()), V(c.n_layers());
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    const int hd = L.head_dim_k, hv = L.head_dim_v;
    int src_l = l;  // the layer whose K/V this one reads (donors share theirs)
    while (c.layers[src_l].kv_donor >= 0) src_l = c.layers[src_l].kv_donor;
    std::vector<std::vector<double>> att_out(T), qs(T);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> xn = naive_rms(h[t], W(b + "attn_norm.weight"), c.eps);
      // Fused attn_qkv (Phi-3): q rows, then k rows, then v rows.
      const float* wqkv = L.qkv_fused ? W(b + "attn_qkv.weight") : nullptr;
      const int64_t q_rows = int64_t{L.n_heads} * hd, k_rows = int64_t{L.n_kv_heads} * hd;
      std::vector<double> q = naive_linear(wqkv ? wqkv : W(b + "attn_q.weight"), opt(b + "attn_q.bias"), xn,
                                           L.n_heads * hd);
      naive_heads_norm_rope(q.data(), L.n_heads, hd, L.has_q_norm ? W(b + "attn_q_norm.weight") : nullptr, c.eps,
                            L, t, long_rope);
      if (L.kv_donor < 0) {
        std::vector<double> k = naive_linear(wqkv ? wqkv + q_rows * d : W(b + "attn_k.weight"),
                                             opt(b + "attn_k.bias"), xn, L.n_kv_heads * hd);
        std::vector<double> v = naive_linear(wqkv ? wqkv + (q_rows + k_rows) * d : W(b + "attn_v.weight"),
                                             opt(b + "attn_v.bias"), xn, L.n_kv_heads * hv);
        naive_heads_norm_rope(k.data(), L.n_kv_heads, hd, L.has_k_norm ? W(b + "attn_k_norm.weight") : nullptr,
                              c.eps, L, t, long_rope);
        for (int kh = 0; L.has_v_norm && kh < L.n_kv_heads; ++kh) {  // weightless RMSNorm per head
          double ss = 0;
          for (int e = 0; e < hv; ++e) ss += v[kh * hv + e] * v[kh * hv + e];
          for (int e = 0; e < hv; ++e) v[kh * hv + e] /= std::sqrt(ss / hv + c.eps);
        }
        K[l].push_back(k);
        V[l].push_back(v);
      }
      qs[t] = std::move(q);
    }
    // Every K/V of the layer first: a row in the span sees the span's later positions.
    const bool open = span_layers.empty() || span_layers[size_t(l)];
    for (int64_t t = 0; t < T; ++t)
      att_out[t] = naive_attend(L, qs[t], t, K[src_l], V[src_l],
                                open && t >= span_begin && t < span_end ? span_end - 1 : t);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> o = naive_linear(W(b + "attn_output.weight"), opt(b + "attn_output.bias"), att_out[t], d);
      if (L.has_post_attn_norm) o = naive_rms(o, W(b + "post_attention_norm.weight"), c.eps);
      for (int64_t i = 0; i < d; ++i) h[t][i] += o[i];
      const std::vector<double> xn = naive_rms(h[t], W(b + "ffn_norm.weight"), c.eps);
      std::vector<double> m = L.n_experts > 0 ? naive_moe(L, W, b, xn, d) : naive_mlp(L, W, b, xn, d);
      if (L.has_post_ffn_norm) m = naive_rms(m, W(b + "post_ffw_norm.weight"), c.eps);
      for (int64_t i = 0; i < d; ++i) h[t][i] += m[i];
      if (c.d_per_layer > 0) {  // GEMMA4.md §4 step 3g
        const int64_t P = c.d_per_layer;
        std::vector<double> g = naive_linear(W(b + "inp_gate.weight"), nullptr, h[t], P);
        for (int64_t i = 0; i < P; ++i) g[i] = naive_act(L.activation, g[i]) * pl[t][l * P + i];
        std::vector<double> y = naive_rms(naive_linear(W(b + "proj.weight"), nullptr, g, d),
                                          W(b + "post_norm.weight"), c.eps);
        for (int64_t i = 0; i < d; ++i) h[t][i] += y[i];
      }
      if (L.has_output_scale)
        for (int64_t i = 0; i < d; ++i) h[t][i] *= W(b + "layer_output_scale.weight")[0];
    }
  }
  const float* out_w = c.tied_output ? W("token_embd.weight") : W("output.weight");
  std::vector<float> logits;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> y = naive_linear(out_w, opt("output.bias"), naive_rms(h[t], W("output_norm.weight"), c.eps),
                                         c.n_vocab);
    for (double v : y) {
      const double cap = c.final_logit_softcap;
      logits.push_back(static_cast<float>(cap > 0 ? cap * std::tanh(v / cap) : v));
    }
  }
  return logits;
}

}  // namespace og::test
