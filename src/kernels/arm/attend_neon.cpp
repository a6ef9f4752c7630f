// The AArch64 tables' attention kernels (ARMv8.0 NEON; every table has them)
// for K/V rows stored as F32, F16 or BF16: scores (q·k over rows), accum
// (weighted sum of V rows) and exp_sum. Each score is one dot product in an
// order fixed by dk alone, so its bits never depend on g, n or the key's
// place (ops.h); accum adds the rows in row order. Keys stored in blocks
// (scores_blocked), Q8_0 caches and max stay the reference's (docs/arm.md).
#include <arm_neon.h>

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
  static float32x4_t four(const uint8_t* row, int e) { return vreinterpretq_f32_u8(vld1q_u8(row + 4 * e)); }
  static float one(const uint8_t* row, int e) {
    float f;
    std::memcpy(&f, row + 4 * e, 4);
    return f;
  }
};
struct F16Row {
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

template <class R>
void set(KernelTable& k, DType t) {
  AttendKernels& a = k.attend[static_cast<int>(t)];
  a.scores = &scores<R>;
  a.accum = &accum<R>;
  a.exp_sum = &exp_sum;
}

}  // namespace
}  // namespace neon_att

void register_neon_attend(KernelTable& k) {
  neon_att::set<neon_att::F32Row>(k, DType::F32);
  neon_att::set<neon_att::F16Row>(k, DType::F16);
  neon_att::set<neon_att::BF16Row>(k, DType::BF16);
  k.attend[static_cast<int>(DType::Q8_0)].exp_sum = &neon_att::exp_sum;
}

}  // namespace og::kernels
