// Reference codecs of the low-bit GGUF weight types Q2_K, Q3_K (256-element
// K-quant super-blocks), IQ4_NL, IQ4_XS (a 16-level non-linear table) and
// MXFP4 (FP4 E2M1 codes under a power-of-two scale); layouts in
// tensor/quant_blocks.h. Decoders follow the per-element formulas literally.
// Encoders search each block's scale without importance weights: a few
// candidate scales, each refitted by least squares, the lowest squared error kept.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/ref/ref.h"
#include "tensor/quant_blocks.h"

namespace og::kernels::ref {

namespace {

constexpr int kQK = 256;

float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

// ---- affine fits x ≈ scale·q − min, q in 0..nmax, scale ≥ 0, min ≥ 0 (Q2_K) ----

float affine_levels(const float* x, int n, int nmax, float scale, float min, int* q) {
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  float err = 0.0f;
  for (int i = 0; i < n; ++i) {
    q[i] = std::clamp(static_cast<int>(round_half_away((x[i] + min) * inv)), 0, nmax);
    const float e = x[i] - (scale * static_cast<float>(q[i]) - min);
    err += e * e;
  }
  return err;
}

// Least squares of x ≈ a·q + b over levels q with b ≤ 0; false when degenerate.
bool affine_refit(const float* x, const int* q, int n, float* scale, float* min) {
  double sq = 0, sqq = 0, sx = 0, sqx = 0;
  for (int i = 0; i < n; ++i) {
    sq += q[i];
    sqq += static_cast<double>(q[i]) * q[i];
    sx += x[i];
    sqx += static_cast<double>(q[i]) * x[i];
  }
  const double det = n * sqq - sq * sq;
  if (det <= 0) return false;
  double a = (n * sqx - sq * sx) / det, b = (sx - a * sq) / n;
  if (b > 0) b = 0, a = sqq > 0 ? sqx / sqq : 0;
  if (a <= 0) return false;
  *scale = static_cast<float>(a);
  *min = static_cast<float>(-b);
  return true;
}

// Tries level spacings around the min/max range (nmax + 0.1·s steps over it),
// each refitted once; keeps the (scale, min) of the lowest squared error.
void fit_affine(const float* x, int n, int nmax, float* scale_out, float* min_out) {
  float lo = 0.0f, hi = 0.0f;
  for (int i = 0; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  float best_scale = (hi - lo) / static_cast<float>(nmax), best_min = -lo;
  int q[32];
  float best = affine_levels(x, n, nmax, best_scale, best_min, q);
  if (hi - lo <= 0.0f) return *scale_out = best_scale, *min_out = best_min, void();
  for (int s = -6; s <= 6; ++s) {
    float scale = (hi - lo) / (static_cast<float>(nmax) + 0.1f * static_cast<float>(s)), min = -lo;
    affine_levels(x, n, nmax, scale, min, q);
    if (!affine_refit(x, q, n, &scale, &min)) continue;
    const float err = affine_levels(x, n, nmax, scale, min, q);
    if (err < best) best = err, best_scale = scale, best_min = min;
  }
  *scale_out = best_scale;
  *min_out = best_min;
}

// ---- symmetric fits x ≈ scale·v over a level set (Q3_K, IQ4_NL, IQ4_XS, MXFP4) ----

// A sorted level set: values[i] ascending, codes[i] the stored code of each.
struct Levels {
  float values[16];
  uint8_t codes[16];
  int n;
};

Levels uniform_levels(int lo, int hi) {  // codes are value − lo
  Levels l{};
  for (int v = lo; v <= hi; ++v) l.values[l.n] = static_cast<float>(v), l.codes[l.n] = static_cast<uint8_t>(v - lo), ++l.n;
  return l;
}

Levels table_levels(const int8_t* table) {  // the 16 codes of a table, duplicates (MXFP4's ±0) once
  Levels l{};
  int order[16];
  for (int i = 0; i < 16; ++i) order[i] = i;
  std::stable_sort(order, order + 16, [&](int a, int b) { return table[a] < table[b]; });
  for (int i : order)
    if (l.n == 0 || l.values[l.n - 1] != table[i]) l.values[l.n] = table[i], l.codes[l.n] = static_cast<uint8_t>(i), ++l.n;
  return l;
}

// The index of the level nearest t (ties to the lower level).
int nearest_level(const Levels& l, float t) {
  const int hi = static_cast<int>(std::lower_bound(l.values, l.values + l.n, t) - l.values);
  if (hi == 0) return 0;
  if (hi == l.n) return l.n - 1;
  return t - l.values[hi - 1] <= l.values[hi] - t ? hi - 1 : hi;
}

// Scale 0 maps every x to the level nearest 0. Tiny MXFP4 scales (2^-128)
// have no finite inverse, hence the division.
float sym_levels(const float* x, int n, const Levels& l, float scale, int* idx) {
  float err = 0.0f;
  for (int i = 0; i < n; ++i) {
    idx[i] = nearest_level(l, scale != 0.0f ? x[i] / scale : 0.0f);
    const float e = x[i] - scale * l.values[idx[i]];
    err += e * e;
  }
  return err;
}

// Candidate scales map the block's largest |x| onto either end of the level
// set, stretched by ±2 % steps; each is refitted once by least squares.
float fit_symmetric(const float* x, int n, const Levels& l) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  if (m == 0.0f) return 0.0f;
  int idx[32];
  float best_scale = 0.0f, best = 0.0f;
  for (int i = 0; i < n; ++i) best += x[i] * x[i];
  for (float end : {l.values[0], l.values[l.n - 1]}) {
    if (end == 0.0f) continue;
    for (int s = -5; s <= 5; ++s) {
      float scale = m / (end * (1.0f + 0.02f * static_cast<float>(s)));
      sym_levels(x, n, l, scale, idx);
      double sxv = 0, svv = 0;
      for (int i = 0; i < n; ++i) sxv += static_cast<double>(x[i]) * l.values[idx[i]], svv += static_cast<double>(l.values[idx[i]]) * l.values[idx[i]];
      if (svv > 0 && sxv != 0) scale = static_cast<float>(sxv / svv);
      const float err = sym_levels(x, n, l, scale, idx);
      if (err < best) best = err, best_scale = scale;
    }
  }
  return best_scale;
}

// Signed sub-block scales s[0..n) as d·(l_k) with l_k in −32..31 (Q3_K,
// IQ4_XS): the largest |s| maps to −32. Returns d (f16-rounded).
float quantize_sub_scales(const float* s, int n, int* l) {
  float m = 0.0f;
  for (int k = 0; k < n; ++k)
    if (std::fabs(s[k]) > std::fabs(m)) m = s[k];
  const float d = round_f16(m / -32.0f);
  for (int k = 0; k < n; ++k) l[k] = d != 0.0f ? static_cast<int>(std::clamp(round_half_away(s[k] / d), -32L, 31L)) : 0;
  return d;
}

const Levels& iq4_levels() {
  static const Levels l = table_levels(kIq4nlValues);
  return l;
}

}  // namespace

// ---- Q2_K ----
void dequant_q2_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ2K*>(src);
  for (int64_t k = 0; k < n / kQK; ++k) {
    const BlockQ2K& b = blocks[k];
    const float d = load_f16(b.d), dmin = load_f16(b.dmin);
    for (int e = 0; e < kQK; ++e) {
      const int h = e / 128, j = (e % 128) / 32, l = e % 32, sc = b.scales[e / 16];
      const int q = (b.qs[32 * h + l] >> (2 * j)) & 3;
      dst[k * kQK + e] = d * static_cast<float>(sc & 15) * static_cast<float>(q) - dmin * static_cast<float>(sc >> 4);
    }
  }
}

void quant_q2_k(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ2K*>(dst);
  for (int64_t k = 0; k < n / kQK; ++k) {
    const float* x = src + k * kQK;
    BlockQ2K& b = blocks[k];
    float scales[16], mins[16], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < 16; ++s) {
      fit_affine(x + 16 * s, 16, 3, &scales[s], &mins[s]);
      max_scale = std::max(max_scale, scales[s]);
      max_min = std::max(max_min, mins[s]);
    }
    const float d = round_f16(max_scale / 15.0f), dmin = round_f16(max_min / 15.0f);
    store_f16(b.d, d);
    store_f16(b.dmin, dmin);
    std::memset(b.qs, 0, sizeof b.qs);
    for (int s = 0; s < 16; ++s) {
      const long sc = d > 0 ? std::clamp(round_half_away(scales[s] / d), 0L, 15L) : 0;
      const long m = dmin > 0 ? std::clamp(round_half_away(mins[s] / dmin), 0L, 15L) : 0;
      b.scales[s] = static_cast<uint8_t>(sc | m << 4);
      int q[16];
      affine_levels(x + 16 * s, 16, 3, d * static_cast<float>(sc), dmin * static_cast<float>(m), q);
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * s + i, h = e / 128, j = (e % 128) / 32, l = e % 32;
        b.qs[32 * h + l] |= static_cast<uint8_t>(q[i] << (2 * j));
      }
    }
  }
}

// ---- Q3_K ----
namespace {
int q3_k_scale(const uint8_t* s, int k) {  // the 6-bit scale k (0..63; the value is this − 32)
  const int low = k < 8 ? s[k] & 15 : s[k - 8] >> 4;
  return low | ((s[8 + k % 4] >> (2 * (k / 4))) & 3) << 4;
}
}  // namespace

void dequant_q3_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ3K*>(src);
  for (int64_t k = 0; k < n / kQK; ++k) {
    const BlockQ3K& b = blocks[k];
    const float d = load_f16(b.d);
    for (int e = 0; e < kQK; ++e) {
      const int h = e / 128, j = (e % 128) / 32, l = e % 32;
      const int q = ((b.qs[32 * h + l] >> (2 * j)) & 3) + 4 * ((b.hmask[l] >> (4 * h + j)) & 1) - 4;
      dst[k * kQK + e] = d * static_cast<float>(q3_k_scale(b.scales, e / 16) - 32) * static_cast<float>(q);
    }
  }
}

void quant_q3_k(const float* src, void* dst, int64_t n) {
  static const Levels levels = uniform_levels(-4, 3);
  auto* blocks = static_cast<BlockQ3K*>(dst);
  for (int64_t k = 0; k < n / kQK; ++k) {
    const float* x = src + k * kQK;
    BlockQ3K& b = blocks[k];
    float s[16];
    int l[16];
    for (int j = 0; j < 16; ++j) s[j] = fit_symmetric(x + 16 * j, 16, levels);
    const float d = quantize_sub_scales(s, 16, l);
    store_f16(b.d, d);
    std::memset(&b, 0, offsetof(BlockQ3K, d));
    for (int j = 0; j < 16; ++j) {
      const int u = l[j] + 32;
      b.scales[j % 8] |= static_cast<uint8_t>((u & 15) << (4 * (j / 8)));
      b.scales[8 + j % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (j / 4)));
      int idx[16];
      sym_levels(x + 16 * j, 16, levels, d * static_cast<float>(l[j]), idx);
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * j + i, h = e / 128, g = (e % 128) / 32, r = e % 32, c = levels.codes[idx[i]];  // q + 4
        b.qs[32 * h + r] |= static_cast<uint8_t>((c & 3) << (2 * g));
        b.hmask[r] |= static_cast<uint8_t>((c >> 2) << (4 * h + g));
      }
    }
  }
}

// ---- IQ4_NL ----
namespace {
// 32 elements from 16 nibble bytes: i < 16 the low nibbles, i ≥ 16 the high ones.
void decode_nibbles(const uint8_t* qs, const int8_t* table, float scale, float* y) {
  for (int i = 0; i < 16; ++i) {
    y[i] = scale * static_cast<float>(table[qs[i] & 15]);
    y[i + 16] = scale * static_cast<float>(table[qs[i] >> 4]);
  }
}
void encode_nibbles(const float* x, const Levels& l, float scale, uint8_t* qs) {
  int idx[32];
  sym_levels(x, 32, l, scale, idx);
  for (int i = 0; i < 16; ++i) qs[i] = static_cast<uint8_t>(l.codes[idx[i]] | l.codes[idx[i + 16]] << 4);
}
}  // namespace

void dequant_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4NL*>(src);
  for (int64_t k = 0; k < n / 32; ++k) decode_nibbles(blocks[k].qs, kIq4nlValues, load_f16(blocks[k].d), dst + 32 * k);
}

void quant_iq4_nl(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockIQ4NL*>(dst);
  for (int64_t k = 0; k < n / 32; ++k) {
    const float d = round_f16(fit_symmetric(src + 32 * k, 32, iq4_levels()));
    store_f16(blocks[k].d, d);
    encode_nibbles(src + 32 * k, iq4_levels(), d, blocks[k].qs);
  }
}

// ---- IQ4_XS ----
void dequant_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4XS*>(src);
  for (int64_t k = 0; k < n / kQK; ++k) {
    const BlockIQ4XS& b = blocks[k];
    const float d = load_f16(b.d);
    const int sh = b.scales_h[0] | b.scales_h[1] << 8;
    for (int j = 0; j < 8; ++j) {
      const int ls = ((b.scales_l[j / 2] >> (4 * (j % 2))) & 15) | ((sh >> (2 * j)) & 3) << 4;
      decode_nibbles(b.qs + 16 * j, kIq4nlValues, d * static_cast<float>(ls - 32), dst + k * kQK + 32 * j);
    }
  }
}

void quant_iq4_xs(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockIQ4XS*>(dst);
  for (int64_t k = 0; k < n / kQK; ++k) {
    const float* x = src + k * kQK;
    BlockIQ4XS& b = blocks[k];
    float s[8];
    int l[8];
    for (int j = 0; j < 8; ++j) s[j] = fit_symmetric(x + 32 * j, 32, iq4_levels());
    const float d = quantize_sub_scales(s, 8, l);
    store_f16(b.d, d);
    int sh = 0;
    std::memset(b.scales_l, 0, sizeof b.scales_l);
    for (int j = 0; j < 8; ++j) {
      const int u = l[j] + 32;
      b.scales_l[j / 2] |= static_cast<uint8_t>((u & 15) << (4 * (j % 2)));
      sh |= (u >> 4) << (2 * j);
      encode_nibbles(x + 32 * j, iq4_levels(), d * static_cast<float>(l[j]), b.qs + 16 * j);
    }
    b.scales_h[0] = static_cast<uint8_t>(sh & 0xFF);
    b.scales_h[1] = static_cast<uint8_t>(sh >> 8);
  }
}

// ---- MXFP4 ----
namespace {
float mxfp4_scale(uint8_t e) { return std::ldexp(1.0f, static_cast<int>(e) - 128); }
}  // namespace

void dequant_mxfp4(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockMXFP4*>(src);
  for (int64_t k = 0; k < n / 32; ++k) decode_nibbles(blocks[k].qs, kMxfp4Values, mxfp4_scale(blocks[k].e), dst + 32 * k);
}

// The exponent whose scale puts the block's largest |x| near the top code
// (12), and its neighbours; the lowest squared error wins.
void quant_mxfp4(const float* src, void* dst, int64_t n) {
  static const Levels levels = table_levels(kMxfp4Values);
  auto* blocks = static_cast<BlockMXFP4*>(dst);
  for (int64_t k = 0; k < n / 32; ++k) {
    const float* x = src + 32 * k;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    int e_best = 0;
    if (amax > 0.0f && std::isfinite(amax)) {
      const int e0 = static_cast<int>(std::floor(std::log2(amax / 12.0f))) + 128;
      float best = INFINITY;
      int idx[32];
      for (int e = e0 - 1; e <= e0 + 2; ++e) {
        const int ec = std::clamp(e, 0, 254);
        const float err = sym_levels(x, 32, levels, mxfp4_scale(static_cast<uint8_t>(ec)), idx);
        if (err < best) best = err, e_best = ec;
      }
    }
    blocks[k].e = static_cast<uint8_t>(e_best);
    encode_nibbles(x, levels, mxfp4_scale(static_cast<uint8_t>(e_best)), blocks[k].qs);
  }
}

}  // namespace og::kernels::ref
