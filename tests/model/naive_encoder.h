// An independent, deliberately plain pass of an encoder embedding model
// (bert, nomic-bert; GGUF f32 files) over one input, straight from the math
// (docs/embeddings.md, "Encoder models"): token + type-0 (+ absolute
// position) embeddings, LayerNorm; per layer q/k/v (+ biases; fused or
// separate), rotate-half RoPE for nomic-bert, attention over the whole input,
// LayerNorm(x + attention), LayerNorm(x + MLP) with BERT's ungated GELU MLP
// or nomic's SwiGLU; pooling. Double accumulation throughout. llama_gelu:
// GELU as llama.cpp's CPU backend computes it for bert (the tanh form, from a
// table indexed by the input rounded to f16: naive_gelu_f16) instead of the
// exact erf form, so that a peer test can tell that rounding from a real
// difference.
#pragma once

#include <cmath>

#include "naive_forward.h"

namespace og::test {

inline std::vector<double> naive_layer_norm(const std::vector<double>& x, const float* w, const float* b, double eps) {
  const double n = static_cast<double>(x.size());
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= n;
  for (double v : x) var += (v - mean) * (v - mean);
  const double inv = 1.0 / std::sqrt(var / n + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * inv * w[i] + b[i];
  return y;
}

inline double naive_gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// gelu_table: the llama.cpp GELU (declared in naive_embed.h, which includes this file).
template <typename GeluTable>
std::vector<double> naive_encode(const ModelConfig& c, const TensorSource& src, const std::vector<int32_t>& tokens,
                                 bool llama_gelu, const GeluTable& gelu_table) {
  const int64_t d = c.d_model, T = static_cast<int64_t>(tokens.size());
  auto W = [&](const std::string& n) { return tensor_f32(src, n); };
  auto has = [&](const std::string& n) { return src.find(n) != nullptr; };
  auto ln = [&](const std::vector<double>& x, const std::string& name) {
    return naive_layer_norm(x, W(name + ".weight"), W(name + ".bias"), c.eps);
  };
  std::vector<std::vector<double>> h(T);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < d; ++i) {
      double v = W("token_embd.weight")[tokens[t] * d + i];
      if (c.n_token_types > 0) v += W("token_types.weight")[i];
      if (c.has_pos_embd) v += W("position_embd.weight")[t * d + i];
      h[t].push_back(v);
    }
    h[t] = ln(h[t], "token_embd_norm");
  }
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    const int hd = L.head_dim_k;
    const int64_t qd = int64_t{L.n_heads} * hd, kd = int64_t{L.n_kv_heads} * hd;
    std::vector<std::vector<double>> Q(T), K(T), V(T);
    for (int64_t t = 0; t < T; ++t) {
      if (has(b + "attn_qkv.weight")) {
        const float* bias = has(b + "attn_qkv.bias") ? W(b + "attn_qkv.bias") : nullptr;
        const std::vector<double> all = naive_linear(W(b + "attn_qkv.weight"), bias, h[t], qd + 2 * kd);
        Q[t].assign(all.begin(), all.begin() + qd);
        K[t].assign(all.begin() + qd, all.begin() + qd + kd);
        V[t].assign(all.begin() + qd + kd, all.end());
      } else {
        Q[t] = naive_linear(W(b + "attn_q.weight"), W(b + "attn_q.bias"), h[t], qd);
        K[t] = naive_linear(W(b + "attn_k.weight"), W(b + "attn_k.bias"), h[t], kd);
        V[t] = naive_linear(W(b + "attn_v.weight"), W(b + "attn_v.bias"), h[t], kd);
      }
      if (L.rope_n_rot > 0) {
        for (int hh = 0; hh < L.n_heads; ++hh) naive_rope(Q[t].data() + hh * hd, L, t);
        for (int hh = 0; hh < L.n_kv_heads; ++hh) naive_rope(K[t].data() + hh * hd, L, t);
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      // Every query sees the whole input (bidirectional).
      const int group = L.n_heads / L.n_kv_heads;
      std::vector<double> att(static_cast<size_t>(qd), 0.0);
      for (int hh = 0; hh < L.n_heads; ++hh) {
        const int kvh = hh / group;
        std::vector<double> s(static_cast<size_t>(T));
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int e = 0; e < hd; ++e) dot += Q[t][hh * hd + e] * K[j][kvh * hd + e];
          s[j] = dot * L.attn_scale;
          mx = std::max(mx, s[j]);
        }
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < T; ++j)
          for (int e = 0; e < hd; ++e) att[hh * hd + e] += s[j] / sum * V[j][kvh * hd + e];
      }
      const float* bo = has(b + "attn_output.bias") ? W(b + "attn_output.bias") : nullptr;
      const std::vector<double> o = naive_linear(W(b + "attn_output.weight"), bo, att, d);
      for (int64_t i = 0; i < d; ++i) h[t][i] += o[i];
      h[t] = ln(h[t], b + "attn_output_norm");
      std::vector<double> m;
      if (L.ffn_gated) {
        std::vector<double> g = naive_linear(W(b + "ffn_gate.weight"), nullptr, h[t], L.d_ff);
        const std::vector<double> u = naive_linear(W(b + "ffn_up.weight"), nullptr, h[t], L.d_ff);
        for (int64_t i = 0; i < L.d_ff; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
        m = naive_linear(W(b + "ffn_down.weight"), nullptr, g, d);
      } else {
        std::vector<double> u = naive_linear(W(b + "ffn_up.weight"), W(b + "ffn_up.bias"), h[t], L.d_ff);
        for (double& x : u) x = llama_gelu ? gelu_table(x) : naive_gelu_erf(x);
        m = naive_linear(W(b + "ffn_down.weight"), W(b + "ffn_down.bias"), u, d);
      }
      for (int64_t i = 0; i < d; ++i) h[t][i] += m[i];
      h[t] = ln(h[t], b + "layer_output_norm");
    }
  }
  std::vector<double> pooled(static_cast<size_t>(d), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const bool take = c.pooling == Pooling::kMean || (c.pooling == Pooling::kCls && t == 0) ||
                      (c.pooling == Pooling::kLast && t == T - 1);
    for (int64_t i = 0; take && i < d; ++i) pooled[i] += c.pooling == Pooling::kMean ? h[t][i] / T : h[t][i];
  }
  return pooled;
}

}  // namespace og::test
