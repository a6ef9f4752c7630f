// The AArch64 tables' element-wise kernels (ARMv8.0 NEON; every table has
// them): RMSNorm, softmax, the SiLU and GELU-tanh gates, add, scale and f32 ->
// f16 rows. The arithmetic follows the x86 kernels (x86/elementwise_x86.inc)
// in 4-lane vectors: exp is a degree-6 polynomial after range reduction by
// ln 2 (relative error about 2e-7), and the tail of a row goes through a
// zero-padded vector so that every element sees the same arithmetic.
#include <arm_neon.h>

#include <cmath>  // INFINITY
#include <cstdint>
#include <cstring>

#include "kernels/arm/exp_neon.h"
#include "kernels/arm/probes_arm.h"
#include "kernels/kernel_table.h"
#include "tensor/dtype.h"

namespace og::kernels {
namespace neon_ew {
namespace {

inline float32x4_t silu4(float32x4_t g) { return vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(g)))); }

// 0.5·g·(1 + tanh(u)), u = √(2/π)·(g + 0.044715 g³), written as g / (1 + e^{−2u})
// (no cancellation where tanh(u) ≈ −1).
inline float32x4_t gelu_tanh4(float32x4_t g) {
  const float32x4_t g3 = vmulq_f32(vmulq_f32(g, g), g);
  const float32x4_t u2 =
      vmulq_f32(vdupq_n_f32(-2.0f * 0.7978845608028654f), vfmaq_f32(g, vdupq_n_f32(0.044715f), g3));
  return vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), exp4(u2)));
}

inline float32x4_t load_tail(const float* p, int64_t m) {
  float buf[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < m; ++i) buf[i] = p[i];
  return vld1q_f32(buf);
}
inline void store_tail(float* p, float32x4_t v, int64_t m) {
  float buf[4];
  vst1q_f32(buf, v);
  for (int64_t i = 0; i < m; ++i) p[i] = buf[i];
}

template <float32x4_t (*F)(float32x4_t)>
void gate_mul(float* gate, const float* up, int64_t n) {
  const int64_t n4 = n / 4 * 4;
  for (int64_t i = 0; i < n4; i += 4) vst1q_f32(gate + i, vmulq_f32(F(vld1q_f32(gate + i)), vld1q_f32(up + i)));
  if (n4 < n) store_tail(gate + n4, vmulq_f32(F(load_tail(gate + n4, n - n4)), load_tail(up + n4, n - n4)), n - n4);
}

void silu_mul(float* gate, const float* up, int64_t n) { gate_mul<silu4>(gate, up, n); }
void gelu_tanh_mul(float* gate, const float* up, int64_t n) { gate_mul<gelu_tanh4>(gate, up, n); }

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {
  const int64_t n4 = n / 4 * 4;
  float32x4_t a0 = vdupq_n_f32(0), a1 = a0;
  int64_t i = 0;
  for (; i + 8 <= n4; i += 8) {
    const float32x4_t v0 = vld1q_f32(x + i), v1 = vld1q_f32(x + i + 4);
    a0 = vfmaq_f32(a0, v0, v0);
    a1 = vfmaq_f32(a1, v1, v1);
  }
  for (; i < n4; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    a0 = vfmaq_f32(a0, v, v);
  }
  float ss = vaddvq_f32(vaddq_f32(a0, a1));
  for (int64_t k = n4; k < n; ++k) ss = std::fma(x[k], x[k], ss);
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  const float32x4_t invv = vdupq_n_f32(inv);
  for (int64_t k = 0; k < n4; k += 4) {
    float32x4_t v = vmulq_f32(vld1q_f32(x + k), invv);
    if (w) v = vmulq_f32(v, vld1q_f32(w + k));
    vst1q_f32(y + k, v);
  }
  for (int64_t k = n4; k < n; ++k) y[k] = x[k] * inv * (w ? w[k] : 1.0f);
}

// A row that is entirely −inf (fully masked) becomes all zeros, as in ref/.
void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const int64_t n4 = n / 4 * 4;
  float32x4_t mv = vdupq_n_f32(-INFINITY);
  for (int64_t i = 0; i < n4; i += 4) mv = vmaxq_f32(mv, vld1q_f32(x + i));
  float mx = vmaxvq_f32(mv);
  for (int64_t i = n4; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  if (mx == -INFINITY) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  const float32x4_t m = vdupq_n_f32(mx);
  float32x4_t sv = vdupq_n_f32(0);
  for (int64_t i = 0; i < n4; i += 4) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), m));
    vst1q_f32(x + i, e);
    sv = vaddq_f32(sv, e);
  }
  float sum = vaddvq_f32(sv);
  if (n4 < n) {
    float buf[4];
    vst1q_f32(buf, exp4(vsubq_f32(load_tail(x + n4, n - n4), m)));
    for (int64_t i = 0; i < n - n4; ++i) {
      x[n4 + i] = buf[i];
      sum += buf[i];
    }
  }
  const float inv = 1.0f / sum;
  const float32x4_t invv = vdupq_n_f32(inv);
  for (int64_t i = 0; i < n4; i += 4) vst1q_f32(x + i, vmulq_f32(vld1q_f32(x + i), invv));
  for (int64_t i = n4; i < n; ++i) x[i] *= inv;
}

void add(float* y, const float* x, int64_t n) {
  const int64_t n4 = n / 4 * 4;
  for (int64_t i = 0; i < n4; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vld1q_f32(x + i)));
  for (int64_t i = n4; i < n; ++i) y[i] += x[i];
}

void scale(float* y, float s, int64_t n) {
  const int64_t n4 = n / 4 * 4;
  const float32x4_t sv = vdupq_n_f32(s);
  for (int64_t i = 0; i < n4; i += 4) vst1q_f32(y + i, vmulq_f32(vld1q_f32(y + i), sv));
  for (int64_t i = n4; i < n; ++i) y[i] *= s;
}

// fcvtn rounds to nearest even (FPCR's default rounding), keeps subnormals
// (FPCR.FZ is off for user code on Linux) and overflows to inf. NaNs go
// through f32_to_f16 lane by lane: the instruction's payload handling is
// FPCR.DN's choice, not a contract.
void f32_to_f16_row(const float* x, void* dst, int64_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const int64_t n4 = n / 4 * 4;
  for (int64_t i = 0; i < n4; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    uint16x4_t h = vreinterpret_u16_f16(vcvt_f16_f32(v));
    if (vminvq_u32(vceqq_f32(v, v)) == 0) {  // a NaN lane
      uint16_t buf[4];
      vst1_u16(buf, h);
      for (int k = 0; k < 4; ++k)
        if (x[i + k] != x[i + k]) buf[k] = f32_to_f16(x[i + k]);
      h = vld1_u16(buf);
    }
    vst1_u8(d + 2 * i, vreinterpret_u8_u16(h));  // bytes: dst may be odd
  }
  for (int64_t i = n4; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(d + 2 * i, &h, 2);
  }
}

}  // namespace
}  // namespace neon_ew

void register_neon_elementwise(KernelTable& k) {
  k.rms_norm = &neon_ew::rms_norm;
  k.softmax = &neon_ew::softmax;
  k.silu_mul = &neon_ew::silu_mul;
  k.gelu_tanh_mul = &neon_ew::gelu_tanh_mul;
  k.add = &neon_ew::add;
  k.scale = &neon_ew::scale;
  k.f32_to_f16_row = &neon_ew::f32_to_f16_row;
  // The probes: f32 FMA, and for int8 smlal (8 int8 products into int16
  // lanes), the baseline's widest int8 multiply-add.
  k.madd_loop = [](bool int8, int64_t iters) -> int64_t {
    if (!int8) return arm_probe::f32_fma_loop(iters);
    const int8x8_t b = vdup_n_s8(3), c = vdup_n_s8(-2);
    return arm_probe::chains(vdupq_n_s16(0), iters, 8, [&](int16x8_t v) { return vmlal_s8(v, b, c); });
  };
  k.read_sum = &arm_probe::read_sum;
}

}  // namespace og::kernels
