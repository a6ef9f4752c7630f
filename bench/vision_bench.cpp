// Image encoding with a Gemma 3 4B-shaped vision tower (SigLIP: 896x896
// pixels in 14x14 patches = 4096 patches, width 1152, 16 heads, MLP 4304,
// 27 layers; pooled to 256 tokens, projected to the text width 2560) with
// random weights built in memory (no files needed): wall-clock ms per image
// on the process thread pool, and each phase's share (patch embed, attention
// projections, attention scores/softmax/sums, MLP, post-norm + pooling +
// projector). The matrices are stored as --dtype: f32, f16 (most mmproj
// files), or q8_0 (where a matrix's rows are not whole 32-value blocks, as
// fc2's 4304 and the patch conv's 588 are not, they stay f16, as llama.cpp's
// converter keeps them). --layers N runs N layers (fewer for a quick
// look); the per-image line then also gives the 27-layer estimate.
// Usage: bench_vision_bench [--dtype f32|f16|q8_0] [--layers N] [--reps R]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/ops.h"
#include "model/vision_tower.h"

namespace {

using og::DType;

// A quick deterministic generator (xorshift64*): uniform in [lo, hi).
struct Rng {
  uint64_t s;
  float next(float lo, float hi) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const uint64_t r = s * 0x2545F4914F6CDD1DULL;
    return lo + (hi - lo) * static_cast<float>(r >> 40) / 16777216.0f;
  }
  std::vector<float> values(int64_t n, float lo, float hi) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = next(lo, hi);
    return v;
  }
};

// Owns the matrices' bytes; views point into it.
struct Store {
  std::vector<std::vector<uint8_t>> blobs;
  og::TensorView matrix(Rng& rng, DType want, int64_t rows, int64_t cols, float amp, const char* name) {
    const DType t = (want == DType::Q8_0 && cols % 32 != 0) ? DType::F16 : want;
    const std::vector<float> v = rng.values(rows * cols, -amp, amp);
    const int64_t rb = og::dtype_row_bytes(t, cols);
    std::vector<uint8_t>& b = blobs.emplace_back(static_cast<size_t>(rows * rb));
    for (int64_t r = 0; r < rows; ++r) {
      if (t == DType::F32) std::memcpy(b.data() + r * rb, v.data() + r * cols, static_cast<size_t>(cols) * 4);
      else og::kernels::quantize_row(t, v.data() + r * cols, b.data() + r * rb, cols);
    }
    og::TensorView w;
    w.data = b.data();
    w.dtype = t;
    w.shape = {rows, cols};
    w.name = name;
    return w;
  }
};

og::VisionTowerConfig gemma3_4b(int64_t layers) {
  og::VisionTowerConfig c;
  c.image_size = 896;
  c.patch_size = 14;
  c.hidden = 1152;
  c.intermediate = 4304;
  c.n_layers = layers;
  c.n_heads = 16;
  c.layer_norm_eps = 1e-6f;
  c.mm_tokens_per_image = 256;
  c.text_hidden = 2560;
  return c;
}

og::VisionTowerWeights random_weights(const og::VisionTowerConfig& c, DType t, Store& st) {
  Rng rng{0x9E3779B97F4A7C15ULL};
  const int64_t d = c.hidden, f = c.intermediate, pp = 3 * c.patch_size * c.patch_size;
  // Amplitudes near a trained SigLIP's (uniform, std ~ 1/sqrt(fan-in)), so LayerNorm inputs stay ordinary.
  const float ad = 1.7f / std::sqrt(static_cast<float>(d)), af = 1.7f / std::sqrt(static_cast<float>(f));
  og::VisionTowerWeights w;
  w.patch = st.matrix(rng, t, d, pp, 1.7f / std::sqrt(static_cast<float>(pp)), "patch");
  w.patch_b = rng.values(d, -0.1f, 0.1f);
  w.pos = rng.values(c.n_patches() * d, -0.5f, 0.5f);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    og::VisionLayerWeights L;
    L.ln1_w = rng.values(d, 0.8f, 1.2f);
    L.ln1_b = rng.values(d, -0.1f, 0.1f);
    L.ln2_w = rng.values(d, 0.8f, 1.2f);
    L.ln2_b = rng.values(d, -0.1f, 0.1f);
    L.wq = st.matrix(rng, t, d, d, ad, "wq");
    L.wk = st.matrix(rng, t, d, d, ad, "wk");
    L.wv = st.matrix(rng, t, d, d, ad, "wv");
    L.wo = st.matrix(rng, t, d, d, ad, "wo");
    L.bq = rng.values(d, -0.1f, 0.1f);
    L.bk = rng.values(d, -0.1f, 0.1f);
    L.bv = rng.values(d, -0.1f, 0.1f);
    L.bo = rng.values(d, -0.1f, 0.1f);
    L.fc1 = st.matrix(rng, t, f, d, ad, "fc1");
    L.b1 = rng.values(f, -0.1f, 0.1f);
    L.fc2 = st.matrix(rng, t, d, f, af, "fc2");
    L.b2 = rng.values(d, -0.1f, 0.1f);
    w.layers.push_back(std::move(L));
  }
  w.post_w = rng.values(d, 0.8f, 1.2f);
  w.post_b = rng.values(d, -0.1f, 0.1f);
  w.soft_norm = rng.values(d, 0.8f, 1.2f);
  w.proj = rng.values(c.text_hidden * d, -ad, ad);
  return w;
}

int usage(const char* why) {
  std::fprintf(stderr, "vision_bench: %s\nusage: bench_vision_bench [--dtype f32|f16|q8_0] [--layers N] [--reps R]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dts = "f16";
  int64_t layers = 27;
  int reps = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--dtype") dts = v;
    else if (a == "--layers") layers = std::atoll(v.c_str());
    else if (a == "--reps") reps = std::atoi(v.c_str());
    else return usage(("unknown option " + a).c_str());
  }
  DType t = DType::F16;
  if (dts == "f32") t = DType::F32;
  else if (dts == "q8_0") t = DType::Q8_0;
  else if (dts != "f16") return usage(("unknown dtype " + dts).c_str());
  if (layers < 1 || layers > 27 || reps < 1) return usage("--layers takes 1..27, --reps 1 or more");

  const og::VisionTowerConfig c = gemma3_4b(layers);
  Store st;
  const auto t0 = std::chrono::steady_clock::now();
  const og::VisionTower tower(c, random_weights(c, t, st));
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Rng rng{42};
  const std::vector<float> pixels = rng.values(3 * c.image_size * c.image_size, -1.0f, 1.0f);
  std::printf("vision tower: Gemma 3 4B shape, %lld layers, weights %s, isa %s, %d threads (built in %.1f s)\n",
              static_cast<long long>(layers), dts.c_str(), og::kernels::isa_name(), og::thread_pool().size(), load_s);
  double best = 1e30;
  og::VisionTowerTimes best_times;
  for (int r = 0; r < reps; ++r) {
    og::VisionTowerTimes times;
    const auto s = std::chrono::steady_clock::now();
    const std::vector<float> out = tower.encode(pixels, &times);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count();
    float check = 0;
    for (float x : out) check += x;
    std::printf("  rep %d: %.0f ms (checksum %.4g)\n", r + 1, secs * 1e3, static_cast<double>(check));
    if (secs < best) {
      best = secs;
      best_times = times;
    }
  }
  const og::VisionTowerTimes& b = best_times;
  const double tot = b.total() > 0 ? b.total() : 1;
  auto row = [&](const char* name, double s) {
    std::printf("  %-12s %9.0f ms %5.1f %%\n", name, s * 1e3, 100.0 * s / tot);
  };
  row("patch embed", b.patch_embed);
  row("attn proj", b.attn_proj);
  row("attn core", b.attn_core);
  row("mlp", b.mlp);
  row("project", b.project);
  const double per_layer = (b.attn_proj + b.attn_core + b.mlp) / static_cast<double>(layers);
  const double est27 = b.patch_embed + b.project + 27 * per_layer;
  std::printf("image encode: %.0f ms per image, %.3f images/s (%lld layers; %.0f ms per layer; 27 layers: ~%.0f ms)\n",
              best * 1e3, 1.0 / best, static_cast<long long>(layers), per_layer * 1e3, est27 * 1e3);
  return 0;
}
