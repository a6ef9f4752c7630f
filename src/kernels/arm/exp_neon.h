// e^x on four floats in NEON, shared by the element-wise ops (softmax, silu,
// gelu) and the attention kernels of src/kernels/arm: one polynomial, so the
// two agree bit for bit. Internal to each including file (anonymous namespace).
#pragma once

#include <arm_neon.h>

namespace og::kernels {
namespace {

// e^x for x in [-87.3, 88.7]; below that 0 (exactly), above it clamped.
inline float32x4_t exp4(float32x4_t x) {
  const float32x4_t lo = vdupq_n_f32(-87.3f), hi = vdupq_n_f32(88.7f);
  const uint32x4_t underflow = vcltq_f32(x, lo);  // also −inf (NaN compares false: kept)
  x = vminq_f32(vmaxq_f32(x, lo), hi);
  // x = n·ln2 + r, |r| ≤ ln2/2 (ln2 split in two for exactness of n·ln2).
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  // e^r ≈ 1 + r + r²·P(r) (Taylor coefficients, Horner).
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
  // × 2^n in two steps so that n = 128 does not overflow the exponent field.
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t half = vshrq_n_s32(ni, 1);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(half, vdupq_n_s32(127)), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vsubq_s32(ni, half), vdupq_n_s32(127)), 23));
  p = vmulq_f32(vmulq_f32(p, s1), s2);
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(p), underflow));
}

}  // namespace
}  // namespace og::kernels
