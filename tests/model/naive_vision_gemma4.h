// The plain twin of model/vision_gemma4.h, in double with straight loops from
// transformers' tensor names, the way modeling_gemma4.py describes it:
// patches flattened (row, column, channel) through input_proj, x and y
// position tables summed and added, then per layer RMSNorm (x * (mean x² +
// eps)^-0.5 * w) -> clippable q/k/v -> q_norm, k_norm, weightless v_norm ->
// 2-D rotate-half RoPE (first half of each head by the column, second by the
// row, theta^(-2j/(head_dim/2))) -> attention at scale 1 -> o_proj ->
// post_attention_layernorm -> residual; pre_feedforward_layernorm ->
// down(gelu_tanh(gate) * up) -> post_feedforward_layernorm -> residual; then
// k x k average pooling, times sqrt(hidden), (x - std_bias) * std_scale, a
// weightless RMSNorm and embedding_projection. No kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "format/tensor_source.h"
#include "model/vision_gemma4.h"
#include "naive_vision_tower.h"

namespace og::test {

inline void naive_rms(double* x, int64_t n, const double* w, double eps) {
  double ms = 0;
  for (int64_t e = 0; e < n; ++e) ms += x[e] * x[e];
  const double r = std::pow(ms / static_cast<double>(n) + eps, -0.5);
  for (int64_t e = 0; e < n; ++e) x[e] = x[e] * r * (w ? w[e] : 1.0);
}

// nn.Linear without bias, with Gemma4ClippableLinear's clamps when the source has them.
inline std::vector<double> naive_clipped(const TensorSource& src, const std::string& base, const std::vector<double>& x,
                                         int64_t n, int64_t in, int64_t out, bool clamps) {
  auto bound = [&](const char* which, double dflt) {
    if (!clamps || src.find(base + "." + which) == nullptr) return dflt;
    return naive_tensor(src, base + "." + which)[0];
  };
  const double in_min = bound("input_min", -INFINITY), in_max = bound("input_max", INFINITY);
  const double out_min = bound("output_min", -INFINITY), out_max = bound("output_max", INFINITY);
  std::vector<double> xc = x;
  for (double& v : xc) v = std::min(std::max(v, in_min), in_max);
  const std::vector<double> w = naive_tensor(src, base + ".linear.weight");
  std::vector<double> y = naive_linear(xc, n, in, w, std::vector<double>(static_cast<size_t>(out), 0.0), out);
  for (double& v : y) v = std::min(std::max(v, out_min), out_max);
  return y;
}

// Rotate-half RoPE of m values at position pos.
inline void naive_rope_half(double* x, int64_t m, int64_t pos, double theta) {
  for (int64_t j = 0; j < m / 2; ++j) {
    const double a = static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(j) / static_cast<double>(m));
    const double x0 = x[j], x1 = x[j + m / 2];
    x[j] = x0 * std::cos(a) - x1 * std::sin(a);
    x[j + m / 2] = x1 * std::cos(a) + x0 * std::sin(a);
  }
}

// pixels: planar [3, H, W] in [-1, 1]. Returns [tokens, text_hidden].
inline std::vector<double> naive_gemma4_tower(const Gemma4VisionConfig& c, const TensorSource& src,
                                              const std::vector<float>& pixels, int64_t H, int64_t W,
                                              const std::string& top = "model.") {
  const std::string vt = top + "vision_tower.";
  const int64_t P = c.patch_size, GH = H / P, GW = W / P, N = GH * GW, D = c.hidden, Dh = c.head_dim;
  const int64_t NH = c.n_heads, NKV = c.n_kv_heads, F = c.intermediate, M = Dh / 2;
  const double eps = c.rms_norm_eps;
  const bool clamps = c.clipped_linears;
  const std::vector<double> pw = naive_tensor(src, vt + "patch_embedder.input_proj.weight");
  const std::vector<double> pos = naive_tensor(src, vt + "patch_embedder.position_embedding_table");
  std::vector<double> x(static_cast<size_t>(N * D));
  for (int64_t py = 0; py < GH; ++py)
    for (int64_t px = 0; px < GW; ++px)
      for (int64_t o = 0; o < D; ++o) {
        double s = 0;
        for (int64_t y = 0; y < P; ++y)
          for (int64_t xx = 0; xx < P; ++xx)
            for (int64_t ch = 0; ch < 3; ++ch)
              s += pw[o * 3 * P * P + (y * P + xx) * 3 + ch] * pixels[(ch * H + py * P + y) * W + px * P + xx];
        x[(py * GW + px) * D + o] = s + pos[px * D + o] + pos[(c.position_table + py) * D + o];
      }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string lp = vt + "encoder.layers." + std::to_string(l) + ".";
    auto t = [&](const std::string& s) { return naive_tensor(src, lp + s); };
    auto norm_rows = [&](std::vector<double>& v, const std::vector<double>& w) {
      for (int64_t i = 0; i < N; ++i) naive_rms(v.data() + i * D, D, w.data(), eps);
    };
    std::vector<double> h = x;
    norm_rows(h, t("input_layernorm.weight"));
    auto q = naive_clipped(src, lp + "self_attn.q_proj", h, N, D, NH * Dh, clamps);
    auto k = naive_clipped(src, lp + "self_attn.k_proj", h, N, D, NKV * Dh, clamps);
    auto v = naive_clipped(src, lp + "self_attn.v_proj", h, N, D, NKV * Dh, clamps);
    const auto qn = t("self_attn.q_norm.weight"), kn = t("self_attn.k_norm.weight");
    for (int64_t i = 0; i < N; ++i) {
      const int64_t px = i % GW, py = i / GW;
      for (int64_t hd = 0; hd < NH; ++hd) {
        double* qh = q.data() + i * NH * Dh + hd * Dh;
        naive_rms(qh, Dh, qn.data(), eps);
        naive_rope_half(qh, M, px, c.rope_theta);
        naive_rope_half(qh + M, M, py, c.rope_theta);
      }
      for (int64_t hd = 0; hd < NKV; ++hd) {
        double* kh = k.data() + i * NKV * Dh + hd * Dh;
        naive_rms(kh, Dh, kn.data(), eps);
        naive_rope_half(kh, M, px, c.rope_theta);
        naive_rope_half(kh + M, M, py, c.rope_theta);
        naive_rms(v.data() + i * NKV * Dh + hd * Dh, Dh, nullptr, eps);
      }
    }
    std::vector<double> a(static_cast<size_t>(N * NH * Dh), 0.0);
    for (int64_t hd = 0; hd < NH; ++hd) {
      const int64_t kv = hd / (NH / NKV);
      for (int64_t i = 0; i < N; ++i) {
        std::vector<double> p(static_cast<size_t>(N));
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t e = 0; e < Dh; ++e) s += q[(i * NH + hd) * Dh + e] * k[(j * NKV + kv) * Dh + e];
          p[j] = s;  // scaling 1.0
          mx = std::max(mx, s);
        }
        for (int64_t j = 0; j < N; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int64_t j = 0; j < N; ++j)
          for (int64_t e = 0; e < Dh; ++e) a[(i * NH + hd) * Dh + e] += p[j] / sum * v[(j * NKV + kv) * Dh + e];
      }
    }
    auto o = naive_clipped(src, lp + "self_attn.o_proj", a, N, NH * Dh, D, clamps);
    norm_rows(o, t("post_attention_layernorm.weight"));
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    h = x;
    norm_rows(h, t("pre_feedforward_layernorm.weight"));
    auto g = naive_clipped(src, lp + "mlp.gate_proj", h, N, D, F, clamps);
    const auto u = naive_clipped(src, lp + "mlp.up_proj", h, N, D, F, clamps);
    for (size_t i = 0; i < g.size(); ++i) {
      const double z = g[i];
      g[i] = 0.5 * z * (1 + std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z))) * u[i];
    }
    auto m = naive_clipped(src, lp + "mlp.down_proj", g, N, F, D, clamps);
    norm_rows(m, t("post_feedforward_layernorm.weight"));
    for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  }
  const int64_t K = c.pooling, TW = GW / K, TH = GH / K, T = TH * TW, TD = c.text_hidden;
  std::vector<double> sb, ss;
  if (c.standardize) {
    sb = naive_tensor(src, vt + "std_bias");
    ss = naive_tensor(src, vt + "std_scale");
  }
  const std::vector<double> proj = naive_tensor(src, top + "embed_vision.embedding_projection.weight");
  std::vector<double> out(static_cast<size_t>(T * TD), 0.0);
  for (int64_t ty = 0; ty < TH; ++ty)
    for (int64_t tx = 0; tx < TW; ++tx) {
      std::vector<double> s(static_cast<size_t>(D), 0.0);
      for (int64_t e = 0; e < D; ++e) {
        for (int64_t dy = 0; dy < K; ++dy)
          for (int64_t dx = 0; dx < K; ++dx) s[e] += x[((ty * K + dy) * GW + tx * K + dx) * D + e];
        s[e] = s[e] / static_cast<double>(K * K) * std::sqrt(static_cast<double>(D));
        if (c.standardize) s[e] = (s[e] - sb[e]) * ss[e];
      }
      naive_rms(s.data(), D, nullptr, eps);
      for (int64_t o = 0; o < TD; ++o)
        for (int64_t e = 0; e < D; ++e) out[(ty * TW + tx) * TD + o] += s[e] * proj[o * D + e];
    }
  return out;
}

}  // namespace og::test
