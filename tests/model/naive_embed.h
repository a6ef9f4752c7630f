// An independent, deliberately plain embedding pass over one input, straight
// from the math (docs/embeddings.md): the layers of naive_forward.h with
// attention over the whole sequence when the model is bidirectional (a window
// W then keeps |i - j| <= W / 2), the output norm, pooling, the dense
// projections (encoders: naive_encoder.h); double accumulation, f32 GGUF models only. gelu_f16 computes
// GELU as llama.cpp's CPU backend does (a table indexed by the input rounded
// to f16, holding f16 values: ggml-cpu vec.h, GGML_GELU_FP16), so that a peer
// test can tell that table's rounding from a real difference.
#pragma once

#include "naive_encoder.h"
#include "naive_forward.h"
#include "tensor/dtype.h"

namespace og::test {

inline double naive_gelu_f16(double x) {
  if (x <= -10.0) return 0.0;
  if (x >= 10.0) return x;
  const double r = f16_to_f32(f32_to_f16(static_cast<float>(x)));
  return f16_to_f32(f32_to_f16(static_cast<float>(naive_act(Activation::kGeluTanh, r))));
}

// Attention of query row t over rows [lo, hi] of K/V (one sequence).
inline std::vector<double> naive_attend_range(const LayerConfig& L, const std::vector<double>& q, int64_t lo,
                                              int64_t hi, const std::vector<std::vector<double>>& K,
                                              const std::vector<std::vector<double>>& V) {
  const int hd = L.head_dim_k, hv = L.head_dim_v, group = L.n_heads / L.n_kv_heads;
  std::vector<double> out(static_cast<size_t>(L.n_heads) * hv, 0.0);
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

// The embedding of `tokens` (pooled and projected, not normalised).
inline std::vector<double> naive_embed(const ModelConfig& c, const TensorSource& src,
                                       const std::vector<int32_t>& tokens, bool gelu_f16 = false) {
  if (!c.has_output_norm) return naive_encode(c, src, tokens, gelu_f16, naive_gelu_f16);  // bert, nomic-bert
  const int64_t d = c.d_model, T = static_cast<int64_t>(tokens.size());
  auto W = [&](const std::string& n) { return tensor_f32(src, n); };
  std::vector<std::vector<double>> h(T);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < d; ++i) h[t].push_back(W("token_embd.weight")[tokens[t] * d + i] * c.embedding_scale);
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    const int hd = L.head_dim_k;
    std::vector<std::vector<double>> Q(T), K(T), V(T);
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<double> xn = naive_rms(h[t], W(b + "attn_norm.weight"), c.eps);
      Q[t] = naive_linear(W(b + "attn_q.weight"), nullptr, xn, L.n_heads * hd);
      K[t] = naive_linear(W(b + "attn_k.weight"), nullptr, xn, L.n_kv_heads * hd);
      V[t] = naive_linear(W(b + "attn_v.weight"), nullptr, xn, L.n_kv_heads * L.head_dim_v);
      naive_heads_norm_rope(Q[t].data(), L.n_heads, hd, L.has_q_norm ? W(b + "attn_q_norm.weight") : nullptr, c.eps,
                            L, t);
      naive_heads_norm_rope(K[t].data(), L.n_kv_heads, hd, L.has_k_norm ? W(b + "attn_k_norm.weight") : nullptr,
                            c.eps, L, t);
    }
    std::vector<std::vector<double>> att(T);
    for (int64_t t = 0; t < T; ++t) {
      int64_t lo = 0, hi = c.causal ? t : T - 1;
      if (L.window > 0 && c.causal) lo = std::max<int64_t>(0, t - L.window + 1);
      if (L.window > 0 && !c.causal) {
        lo = std::max<int64_t>(0, t - L.window / 2);
        hi = std::min<int64_t>(T - 1, t + L.window / 2);
      }
      att[t] = naive_attend_range(L, Q[t], lo, hi, K, V);
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> o = naive_linear(W(b + "attn_output.weight"), nullptr, att[t], d);
      if (L.has_post_attn_norm) o = naive_rms(o, W(b + "post_attention_norm.weight"), c.eps);
      for (int64_t i = 0; i < d; ++i) h[t][i] += o[i];
      const std::vector<double> xn = naive_rms(h[t], W(b + "ffn_norm.weight"), c.eps);
      std::vector<double> g = naive_linear(W(b + "ffn_gate.weight"), nullptr, xn, L.d_ff);
      const std::vector<double> u = naive_linear(W(b + "ffn_up.weight"), nullptr, xn, L.d_ff);
      for (int64_t i = 0; i < L.d_ff; ++i)
        g[i] = (gelu_f16 && L.activation == Activation::kGeluTanh ? naive_gelu_f16(g[i]) : naive_act(L.activation, g[i])) *
               u[i];
      std::vector<double> m = naive_linear(W(b + "ffn_down.weight"), nullptr, g, d);
      if (L.has_post_ffn_norm) m = naive_rms(m, W(b + "post_ffw_norm.weight"), c.eps);
      for (int64_t i = 0; i < d; ++i) h[t][i] += m[i];
    }
  }
  std::vector<double> pooled(static_cast<size_t>(d), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const std::vector<double> y = naive_rms(h[t], W("output_norm.weight"), c.eps);
    const bool take = c.pooling == Pooling::kMean || (c.pooling == Pooling::kCls && t == 0) ||
                      (c.pooling == Pooling::kLast && t == T - 1);
    for (int64_t i = 0; take && i < d; ++i) pooled[i] += c.pooling == Pooling::kMean ? y[i] / T : y[i];
  }
  for (size_t k = 0; k < c.dense.size(); ++k)
    pooled = naive_linear(W("dense_" + std::to_string(k + 2) + ".weight"), nullptr, pooled, c.dense[k].d_out);
  return pooled;
}

}  // namespace og::test
