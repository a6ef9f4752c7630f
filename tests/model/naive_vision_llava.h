// The plain twin of model/vision_llava.h, in double with straight loops from
// transformers' names, as CLIPVisionTransformer and LlavaMultiModalProjector
// describe it: the conv patch embedding (no bias), the class token first,
// learned positions, pre_layrnorm, the first `feature_layers` pre-norm layers
// (quick GELU: x * sigmoid(1.702 x)), the class token dropped unless
// keep_class, then linear_1 -> GELU (erf) -> linear_2. No kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "format/tensor_source.h"
#include "model/vision_llava.h"
#include "naive_vision_tower.h"

namespace og::test {

inline std::vector<double> naive_llava_tower(const ClipTowerConfig& c, const TensorSource& src,
                                             const std::vector<float>& pixels, const std::string& top = "") {
  const std::string vm = top + "vision_tower.vision_model.";
  const int64_t S = c.image_size, P = c.patch_size, G = S / P, NP = G * G, N = NP + 1, D = c.hidden;
  const int64_t H = c.n_heads, Dh = D / H, F = c.intermediate;
  const std::vector<double> cw = naive_tensor(src, vm + "embeddings.patch_embedding.weight");
  const std::vector<double> cls = naive_tensor(src, vm + "embeddings.class_embedding");
  const std::vector<double> pos = naive_tensor(src, vm + "embeddings.position_embedding.weight");
  std::vector<double> x(static_cast<size_t>(N * D));
  for (int64_t o = 0; o < D; ++o) x[o] = cls[o] + pos[o];
  for (int64_t py = 0; py < G; ++py)
    for (int64_t px = 0; px < G; ++px)
      for (int64_t o = 0; o < D; ++o) {
        double s = 0;
        for (int64_t ch = 0; ch < 3; ++ch)
          for (int64_t y = 0; y < P; ++y)
            for (int64_t xx = 0; xx < P; ++xx)
              s += cw[((o * 3 + ch) * P + y) * P + xx] * pixels[(ch * S + py * P + y) * S + px * P + xx];
        const int64_t row = 1 + py * G + px;
        x[row * D + o] = s + pos[row * D + o];
      }
  naive_layer_norm(x, N, D, naive_tensor(src, vm + "pre_layrnorm.weight"), naive_tensor(src, vm + "pre_layrnorm.bias"),
                   c.layer_norm_eps);
  for (int64_t l = 0; l < c.feature_layers; ++l) {
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
    for (double& z : u)
      z = c.quick_gelu ? z / (1 + std::exp(-1.702 * z)) : 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
    const auto m = naive_linear(u, N, F, t("mlp.fc2.weight"), t("mlp.fc2.bias"), D);
    for (size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  }
  const int64_t first = c.keep_class ? 0 : 1, T = N - first;
  std::vector<double> f(x.begin() + first * D, x.end());
  const std::vector<double> w1 = naive_tensor(src, top + "multi_modal_projector.linear_1.weight");
  const std::vector<double> b1 = naive_tensor(src, top + "multi_modal_projector.linear_1.bias");
  const std::vector<double> w2 = naive_tensor(src, top + "multi_modal_projector.linear_2.weight");
  const std::vector<double> b2 = naive_tensor(src, top + "multi_modal_projector.linear_2.bias");
  const int64_t MID = static_cast<int64_t>(b1.size()), TD = static_cast<int64_t>(b2.size());
  auto hmid = naive_linear(f, T, D, w1, b1, MID);
  for (double& z : hmid) z = 0.5 * z * (1 + std::erf(z / std::sqrt(2.0)));
  return naive_linear(hmid, T, MID, w2, b2, TD);
}

}  // namespace og::test
