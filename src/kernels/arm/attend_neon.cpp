// The AArch64 tables' attention kernels (ARMv8.0 NEON; every table has them)
// for K/V rows stored as F32, F16, BF16 or Q8_0: scores (q·k over rows),
// scores_blocked (keys in blocks of kKeyBlock, F32/F16/BF16), accum
// (weighted sum of V rows), exp_sum and max. Each score is one chain of
// operations in an order fixed by dk alone (and the key's own values), so
// its bits never depend on g, n, the lane or the key's place (ops.h); accum
// adds the rows in row order.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/arm/exp_neon.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "tensor/dtype.h"

namespace og::kernels {
namespace neon_att {
namespace {

// Four values of a row, widened to f32 exactly; one() for the tail.
struct F32Row {
  static constexpr int kBytes = 4;
  static float32x4_t four(const uint8_t* row, int e) { return vreinterpretq_f32_u8(vld1q_u8(row + 4 * e)); }
  static float one(const uint8_t* row, int e) {
    float f;
    std::memcpy(&f, row + 4 * e, 4);
    return f;
  }
};
struct F16Row {
  static constexpr int kBytes = 2;
  static float32x4_t four(const uint8_t* row, int e) {
    return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(row + 2 * e)));
  }
  static float one(const uint8_t* row, int e) {
    uint16_t h;
    std::memcpy(&h, row + 2 * e, 2);
    return f16_to_f32(h);
  }
};
struct BF16Row {
  static constexpr int kBytes = 2;
  static float32x4_t four(const uint8_t* row, int e) {
    return vreinterpretq_f32_u32(vshll_n_u16(vreinterpret_u16_u8(vld1_u8(row + 2 * e)), 16));
  }
  static float one(const uint8_t* row, int e) {
    uint16_t b;
    std::memcpy(&b, row + 2 * e, 2);
    return bf16_to_f32(b);
  }
};

template <class R>
inline float dot(const float* q, const uint8_t* row, int dk) {
  float32x4_t a0 = vdupq_n_f32(0), a1 = a0;
  int e = 0;
  for (; e + 8 <= dk; e += 8) {
    a0 = vfmaq_f32(a0, vld1q_f32(q + e), R::four(row, e));
    a1 = vfmaq_f32(a1, vld1q_f32(q + e + 4), R::four(row, e + 4));
  }
  for (; e + 4 <= dk; e += 4) a0 = vfmaq_f32(a0, vld1q_f32(q + e), R::four(row, e));
  float d = vaddvq_f32(vaddq_f32(a0, a1));
  for (; e < dk; ++e) d = std::fma(q[e], R::one(row, e), d);
  return d;
}

template <class R>
void scores(const float* q, int g, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
            int64_t s_stride) {
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < g; ++j) s[j * s_stride + i] = dot<R>(q + int64_t{j} * dk, k + i * rbk, dk) * scale;
}

template <class R>
void accum(const float* w, int64_t w_stride, int g, const uint8_t* v, int64_t rbv, int64_t n, int dv, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = v + i * rbv;
    for (int j = 0; j < g; ++j) {
      const float wj = w[j * w_stride + i];
      const float32x4_t wv = vdupq_n_f32(wj);
      float* o = out + int64_t{j} * dv;
      int e = 0;
      for (; e + 4 <= dv; e += 4) vst1q_f32(o + e, vfmaq_f32(vld1q_f32(o + e), wv, R::four(row, e)));
      for (; e < dv; ++e) o[e] = std::fma(wj, R::one(row, e), o[e]);
    }
  }
}


// x[i] = e^(x[i] − mx), returns their sum; the tail through a padded vector.
float exp_sum(float* x, int64_t n, float mx) {
  const float32x4_t m = vdupq_n_f32(mx);
  float32x4_t sv = vdupq_n_f32(0);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), m));
    vst1q_f32(x + i, e);
    sv = vaddq_f32(sv, e);
  }
  float sum = vaddvq_f32(sv);
  if (i < n) {
    float buf[4] = {0, 0, 0, 0};
    for (int64_t k = i; k < n; ++k) buf[k - i] = x[k];
    vst1q_f32(buf, exp4(vsubq_f32(vld1q_f32(buf), m)));
    for (int64_t k = i; k < n; ++k) sum += (x[k] = buf[k - i]);
  }
  return sum;
}

// ---- K in blocks of kKeyBlock = 16 keys (ops.h scores_blocked) ----
// Dim e of a block is four vectors of 4 keys: each lane is one key's score,
// no horizontal sums. A score is the chain of FMAs from zero over the dims in
// order, then × scale, whatever the tile, lane range or block it falls in.

// Lanes 4h..4h+3 of dim e of a block, only lanes [lo, hi) read (the others 0:
// a block's unwritten lanes may hold anything, NaN included).
template <class R, bool kFull>
inline float32x4_t block_lanes(const uint8_t* kb, int e, int h, int lo, int hi) {
  if constexpr (kFull) {
    return R::four(kb, e * kKeyBlock + 4 * h);
  } else {
    float t[4] = {0, 0, 0, 0};
    for (int l = std::max(lo - 4 * h, 0); l < std::min(hi - 4 * h, 4); ++l) t[l] = R::one(kb, e * kKeyBlock + 4 * h + l);
    return vld1q_f32(t);
  }
}

// The G heads' scores of lanes [lo, hi) of one block: lane l of head j to
// s[j * ss + l - shift].
template <class R, int G, bool kFull>
inline void block_tile(const float* q, int dk, const uint8_t* kb, int lo, int hi, int shift, float scale, float* s,
                       int64_t ss) {
  float32x4_t a[G][4];
  for (int j = 0; j < G; ++j) a[j][0] = a[j][1] = a[j][2] = a[j][3] = vdupq_n_f32(0);
  for (int e = 0; e < dk; ++e) {
    float32x4_t k[4];
    for (int h = 0; h < 4; ++h) k[h] = block_lanes<R, kFull>(kb, e, h, lo, hi);
    for (int j = 0; j < G; ++j) {
      const float32x4_t qe = vdupq_n_f32(q[int64_t{j} * dk + e]);
      for (int h = 0; h < 4; ++h) a[j][h] = vfmaq_f32(a[j][h], qe, k[h]);
    }
  }
  for (int j = 0; j < G; ++j) {
    float t[kKeyBlock];
    for (int h = 0; h < 4; ++h) vst1q_f32(t + 4 * h, vmulq_n_f32(a[j][h], scale));
    for (int l = lo; l < hi; ++l) s[j * ss + l - shift] = t[l];
  }
}

// n keys from lane `lane` of block kb for G heads: a partial first block,
// whole blocks, a partial last block.
template <class R, int G>
void blocked_heads(const float* q, int dk, const uint8_t* kb, int lane, int64_t n, float scale, float* s, int64_t ss) {
  const int64_t bb = int64_t{dk} * kKeyBlock * R::kBytes;
  int64_t i = 0;
  if (lane > 0) {
    const int hi = int(std::min<int64_t>(kKeyBlock, lane + n));
    block_tile<R, G, false>(q, dk, kb, lane, hi, lane, scale, s, ss);
    i = hi - lane;
    kb += bb;
  }
  for (; i + kKeyBlock <= n; i += kKeyBlock, kb += bb) block_tile<R, G, true>(q, dk, kb, 0, kKeyBlock, 0, scale, s + i, ss);
  if (i < n) block_tile<R, G, false>(q, dk, kb, 0, int(n - i), 0, scale, s + i, ss);
}

// Heads in tiles of 4 (16 accumulators), then 2, then 1: each head's
// operations are the same in any tile.
template <class R>
void scores_blocked(const float* q, int g, int dk, const uint8_t* kb, int lane, int64_t n, float scale, float* s,
                    int64_t ss) {
  int j = 0;
  for (; j + 4 <= g; j += 4) blocked_heads<R, 4>(q + int64_t{j} * dk, dk, kb, lane, n, scale, s + j * ss, ss);
  for (; j + 2 <= g; j += 2) blocked_heads<R, 2>(q + int64_t{j} * dk, dk, kb, lane, n, scale, s + j * ss, ss);
  for (; j < g; ++j) blocked_heads<R, 1>(q + int64_t{j} * dk, dk, kb, lane, n, scale, s + j * ss, ss);
}

// ---- Q8_0 rows: blocks of an f16 scale d and 32 int8 values; a row's last
// block is whole (zero-padded past dk), so reading all 32 values is safe ----

constexpr int kQ8Block = 32;
constexpr int kQ8BlockBytes = 2 + kQ8Block;

// The 32 values of a block as f32, in 8 vectors of 4 (exact: |q| ≤ 128).
inline void q8_values(const uint8_t* blk, float32x4_t v[8]) {
  const int8x16_t lo = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2));
  const int8x16_t hi = vld1q_s8(reinterpret_cast<const int8_t*>(blk + 2 + 16));
  const int16x8_t h[4] = {vmovl_s8(vget_low_s8(lo)), vmovl_s8(vget_high_s8(lo)), vmovl_s8(vget_low_s8(hi)),
                          vmovl_s8(vget_high_s8(hi))};
  for (int c = 0; c < 4; ++c) {
    v[2 * c] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(h[c])));
    v[2 * c + 1] = vcvtq_f32_s32(vmovl_s16(vget_high_s16(h[c])));
  }
}

inline float q8_scale(const uint8_t* blk) {
  uint16_t h;
  std::memcpy(&h, blk, 2);
  return f16_to_f32(h);
}

// q[e..e+3], the elements at or past dk read as 0 (never read).
inline float32x4_t q_four(const float* q, int e, int dk) {
  if (e + 4 <= dk) return vld1q_f32(q + e);
  float t[4] = {0, 0, 0, 0};
  for (int l = 0; e + l < dk; ++l) t[l] = q[e + l];
  return vld1q_f32(t);
}

// One row's scores for G heads: per block, the 32 values times d once, then
// each head's FMAs into two accumulators (even and odd chunks of 4), summed
// at the end: a fixed order for a given dk.
template <int G>
inline void q8_row_scores(const float* q, int dk, const uint8_t* row, float scale, float* s, int64_t ss) {
  float32x4_t a[G][2];
  for (int j = 0; j < G; ++j) a[j][0] = a[j][1] = vdupq_n_f32(0);
  for (int b0 = 0; b0 < dk; b0 += kQ8Block) {
    const uint8_t* blk = row + (b0 / kQ8Block) * kQ8BlockBytes;
    float32x4_t v[8];
    q8_values(blk, v);
    const float32x4_t d = vdupq_n_f32(q8_scale(blk));
    const int chunks = std::min(8, (dk - b0 + 3) / 4);
    for (int c = 0; c < chunks; ++c) {
      const float32x4_t kv = vmulq_f32(d, v[c]);
      for (int j = 0; j < G; ++j) a[j][c & 1] = vfmaq_f32(a[j][c & 1], q_four(q + int64_t{j} * dk, b0 + 4 * c, dk), kv);
    }
  }
  for (int j = 0; j < G; ++j) s[j * ss] = vaddvq_f32(vaddq_f32(a[j][0], a[j][1])) * scale;
}

void scores_q8(const float* q, int g, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
               int64_t ss) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = k + i * rbk;
    int j = 0;
    for (; j + 4 <= g; j += 4) q8_row_scores<4>(q + int64_t{j} * dk, dk, row, scale, s + j * ss + i, ss);
    for (; j < g; ++j) q8_row_scores<1>(q + int64_t{j} * dk, dk, row, scale, s + j * ss + i, ss);
  }
}

// out_j += (w_ji · d) · v per block, row by row; each block's values widened once per row.
void accum_q8(const float* w, int64_t w_stride, int g, const uint8_t* v, int64_t rbv, int64_t n, int dv, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = v + i * rbv;
    for (int b0 = 0; b0 < dv; b0 += kQ8Block) {
      const uint8_t* blk = row + (b0 / kQ8Block) * kQ8BlockBytes;
      float32x4_t vals[8];
      q8_values(blk, vals);
      const float d = q8_scale(blk);
      const int m = std::min(kQ8Block, dv - b0);
      for (int j = 0; j < g; ++j) {
        const float wd = w[j * w_stride + i] * d;
        const float32x4_t wv = vdupq_n_f32(wd);
        float* o = out + int64_t{j} * dv + b0;
        int e = 0;
        for (; e + 4 <= m; e += 4) vst1q_f32(o + e, vfmaq_f32(vld1q_f32(o + e), wv, vals[e / 4]));
        for (; e < m; ++e) o[e] = std::fma(wd, float(int8_t(blk[2 + e])), o[e]);
      }
    }
  }
}

// The largest of x[0..n): four running maxima of 4 lanes (a max is exact).
float max_of(const float* x, int64_t n) {
  float32x4_t m[4];
  m[0] = m[1] = m[2] = m[3] = vdupq_n_f32(x[0]);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int t = 0; t < 4; ++t) m[t] = vmaxq_f32(m[t], vld1q_f32(x + i + 4 * t));
  for (; i + 4 <= n; i += 4) m[0] = vmaxq_f32(m[0], vld1q_f32(x + i));
  float r = vmaxvq_f32(vmaxq_f32(vmaxq_f32(m[0], m[1]), vmaxq_f32(m[2], m[3])));
  for (; i < n; ++i) r = std::max(r, x[i]);
  return r;
}

template <class R>
void set(KernelTable& k, DType t) {
  AttendKernels& a = k.attend[static_cast<int>(t)];
  a.scores = &scores<R>;
  a.scores_blocked = &scores_blocked<R>;
  a.accum = &accum<R>;
  a.exp_sum = &exp_sum;
  a.max = &max_of;
}

}  // namespace
}  // namespace neon_att

void register_neon_attend(KernelTable& k) {
  neon_att::set<neon_att::F32Row>(k, DType::F32);
  neon_att::set<neon_att::F16Row>(k, DType::F16);
  neon_att::set<neon_att::BF16Row>(k, DType::BF16);
  AttendKernels& q8 = k.attend[static_cast<int>(DType::Q8_0)];
  q8.scores = &neon_att::scores_q8;
  q8.accum = &neon_att::accum_q8;
  q8.exp_sum = &neon_att::exp_sum;
  q8.max = &neon_att::max_of;  // scores_blocked stays null: q8_0 keys are never blocked (ops.h)
}

}  // namespace og::kernels
