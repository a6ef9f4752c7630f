// The AArch64 tables' machine probes (kernel_table.h madd_loop, read_sum),
// header-only so that each table's file compiles its loop with its own
// target flags: a register-only loop of 8 independent chains of the table's
// multiply-add instruction, and a plain stream of 16-byte loads into four
// accumulators. bench divides by them (docs/performance.md); no ARM hardware
// has run them, so no ARM peak or bandwidth has been measured.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace og::kernels::arm_probe {

// `iters` rounds of 8 chains of step(v): a = step(a); returns iters · 8 · per_op.
template <class V, class Step>
inline int64_t chains(V init, int64_t iters, int64_t per_op, Step step) {
  V a[8];
  for (V& v : a) v = init;
  for (int64_t it = 0; it < iters; ++it)
    for (V& v : a) {
      v = step(v);
      asm volatile("" : "+w"(v));  // opaque to the compiler: no closed form for the loop
    }
  volatile uint8_t sink = 0;  // one byte of every chain, so none is dead code
  for (const V& v : a) {
    uint8_t b;
    std::memcpy(&b, &v, 1);
    sink = static_cast<uint8_t>(sink + b);
  }
  return iters * 8 * per_op;
}

// f32 FMA: a = a·0.999 + 1e-3 (4 lanes), every table.
inline int64_t f32_fma_loop(int64_t iters) {
  const float32x4_t m = vdupq_n_f32(0.999f), c = vdupq_n_f32(1e-3f);
  return chains(vdupq_n_f32(1.0f), iters, 4, [&](float32x4_t v) { return vfmaq_f32(c, v, m); });
}

// The sum of the 64-bit words of [buf, buf + bytes) (bytes a multiple of 8).
inline uint64_t read_sum(const void* buf, int64_t bytes) {
  const auto* p = static_cast<const uint8_t*>(buf);
  const int64_t words = bytes / 8;
  uint64x2_t s0 = vdupq_n_u64(0), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 8 <= words; i += 8) {
    const uint8_t* q = p + 8 * i;
    s0 = vaddq_u64(s0, vreinterpretq_u64_u8(vld1q_u8(q)));
    s1 = vaddq_u64(s1, vreinterpretq_u64_u8(vld1q_u8(q + 16)));
    s2 = vaddq_u64(s2, vreinterpretq_u64_u8(vld1q_u8(q + 32)));
    s3 = vaddq_u64(s3, vreinterpretq_u64_u8(vld1q_u8(q + 48)));
  }
  uint64_t s = vaddvq_u64(vaddq_u64(vaddq_u64(s0, s1), vaddq_u64(s2, s3)));
  for (; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    s += w;
  }
  return s;
}

}  // namespace og::kernels::arm_probe
