// The plain twin of model/vision_tower.h: Gemma 3's SigLIP tower and
// projector written with straight loops in double from the HF tensor names,
// the way transformers describes them (Conv2d patch embedding, learned
// positions, pre-LayerNorm layers with full attention and a GELU-tanh MLP,
// post-LayerNorm, AvgPool2d of the patch grid, Gemma3RMSNorm (1 + w), and a
// right multiplication by mm_input_projection_weight). No kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "format/tensor_source.h"
#include "model/vision_tower.h"

namespace og::test {

inline std::vector<double> naive_tensor(const TensorSource& src, const std::string& name) {
  const TensorInfo* t = src.find(name);
  if (t == nullptr || t->type_name != "f32") throw Error("naive tower: no f32 tensor " + name);
  const float* f = reinterpret_cast<const float*>(t->data);
  return std::vector<double>(f, f + t->nbytes / sizeof(float));
}

inline void naive_layer_norm(std::vector<double>& x, int64_t n, int64_t d, const std::vector<double>& w,
                             const std::vector<double>& b, double eps) {
  for (int64_t i = 0; i < n; ++i) {
    double mean = 0, var = 0;
    for (int64_t e = 0; e < d; ++e) mean += x[i * d + e];
    mean /= d;
    for (int64_t e = 0; e < d; ++e) var += (x[i * d + e] - mean) * (x[i * d + e] - mean);
    var /= d;
    for (int64_t e = 0; e < d; ++e) x[i * d + e] = (x[i * d + e] - mean) / std::sqrt(var + eps) * w[e] + b[e];
  }
}

// y[n, out] = x[n, in] · W[out, in]^T + b
inline std::vector<double> naive_linear(const std::vector<double>& x, int64_t n, int64_t in,
                                        const std::vector<double>& w, const std::vector<double>& b, int64_t out) {
  std::vector<double> y(static_cast<size_t>(n * out));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double s = b[o];
      for (int64_t e = 0; e < in; ++e) s += x[i * in + e] * w[o * in + e];
      y[i * out + o] = s;
    }
  return y;
}

// Returns [mm_tokens_per_image, text_hidden].
inline std::vector<double> naive_vision_tower(const VisionTowerConfig& c, const TensorSource& src,
                                              const std::vector<float>& pixels, const std::string& top = "") {
  const std::string vm = top + "vision_tower.vision_model.";
  const int64_t S = c.image_size, P = c.patch_size, G = S / P, N = G * G, D = c.hidden, H = c.n_heads;
  const int64_t Dh = D / H, F = c.intermediate;
  const std::vector<double> cw = naive_tensor(src, vm + "embeddings.patch_embedding.weight");
  const std::vector<double> cb = naive_tensor(src, vm + "embeddings.patch_embedding.bias");
  const std::vector<double> pos = naive_tensor(src, vm + "embeddings.position_embedding.weight");
  std::vector<double> x(static_cast<size_t>(N * D));
  for (int64_t py = 0; py < G; ++py)
    for (int64_t px = 0; px < G; ++px)
      for (int64_t o = 0; o < D; ++o) {
        double s = cb[o];
        for (int64_t ch = 0; ch < 3; ++ch)
          for (int64_t y = 0; y < P; ++y)
            for (int64_t xx = 0; xx < P; ++xx)
              s += cw[((o * 3 + ch) * P + y) * P + xx] * pixels[(ch * S + py * P + y) * S + px * P + xx];
        x[(py * G + px) * D + o] = s + pos[(py * G + px) * D + o];
      }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string lp = vm + "encoder.layers." + std::to_string(l) + ".";
    auto t = [&](const std::string& s) { return naive_tensor(src, lp + s); };
    std::vector<double> h = x;
    naive_layer_norm(h, N, D, t("layer_norm1.weight"), t("layer_norm1.bias"), c.layer_norm_eps);
    const auto q = naive_linear(h, N, D, t("self_attn.q_proj.weight"), t("self_attn.q_proj.bias"), D);
    const auto k = naive_linear(h, N, D, t("self_attn.k_proj.weight"), t("self_attn.k_proj.bias"), D);
    const auto v = naive_linear(h, N, D, t("self_attn.v_proj.weight"), t("self_attn.v_proj.bias"), D);
    std::vector<double> a(static_cast<size_t>(N * D), 0.0);
    for (int64_t hd = 0; hd < H; ++hd)
      for (int64_t i = 0; i < N; ++i) {
        std::vector<double> p(static_cast<size_t>(N));
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t e = 0; e < Dh; ++e) s += q[i * D + hd * Dh + e] * k[j * D + hd * Dh + e];
          p[j] = s / std::sqrt(static_cast<double>(Dh));
          mx = std::max(mx, p[j]);
        }
        for (int64_t j = 0; j < N; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int64_t j = 0; j < N; ++j)
          for (int64_t e = 0; e < Dh; ++e) a[i * D + hd * Dh + e] += p[j] / sum * v[j * D + hd * Dh + e];
      }
    const auto o = naive_linear(a, N, D, t("self_attn.out_proj.weight"), t("self_attn.out_proj.bias"), D);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    h = x;
    naive_layer_norm(h, N, D, t("layer_norm2.weight"), t("layer_norm2.bias"), c.layer_norm_eps);
    auto u = naive_linear(h, N, D, t("mlp.fc1.weight"), t("mlp.fc1.bias"), F);
    for (double& z : u) z = 0.5 * z * (1 + std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z)));
    const auto m = naive_linear(u, N, F, t("mlp.fc2.weight"), t("mlp.fc2.bias"), D);
    for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  }
  naive_layer_norm(x, N, D, naive_tensor(src, vm + "post_layernorm.weight"),
                   naive_tensor(src, vm + "post_layernorm.bias"), c.layer_norm_eps);
  // transformers: [N, D] -> [D, G, G] -> AvgPool2d(K) -> [D, T*T] -> [T*T, D]
  const int64_t T = c.tokens_per_side(), K = G / T, TH = c.text_hidden;
  const std::vector<double> nw = naive_tensor(src, top + "multi_modal_projector.mm_soft_emb_norm.weight");
  const std::vector<double> pw = naive_tensor(src, top + "multi_modal_projector.mm_input_projection_weight");
  std::vector<double> out(static_cast<size_t>(T * T * TH), 0.0);
  for (int64_t ty = 0; ty < T; ++ty)
    for (int64_t tx = 0; tx < T; ++tx) {
      std::vector<double> s(static_cast<size_t>(D), 0.0);
      for (int64_t e = 0; e < D; ++e) {
        for (int64_t dy = 0; dy < K; ++dy)
          for (int64_t dx = 0; dx < K; ++dx) s[e] += x[((ty * K + dy) * G + tx * K + dx) * D + e];
        s[e] /= static_cast<double>(K * K);
      }
      double ms = 0;
      for (double z : s) ms += z * z;
      const double r = 1 / std::sqrt(ms / D + c.layer_norm_eps);  // Gemma3RMSNorm(eps=vision layer_norm_eps)
      for (int64_t e = 0; e < D; ++e) s[e] = s[e] * r * (1 + nw[e]);
      for (int64_t o = 0; o < TH; ++o)
        for (int64_t e = 0; e < D; ++e) out[(ty * T + tx) * TH + o] += s[e] * pw[e * TH + o];
    }
  return out;
}

}  // namespace og::test
