// The baseline AArch64 Advanced SIMD table's kernels (ARMv8.0 NEON, which
// every AArch64 CPU a general-purpose OS runs on has; the dotprod and i8mm
// tables start from these): the F32, F16, BF16 and Q8_0 matmuls and the
// F32, F16 and BF16 dot products. The matmul of every other plain weight
// dtype dequantizes each weight row once with the reference and dots it in
// f32 NEON (the dotprod and i8mm tables replace those with int8 kernels).
// The interleaved layouts run the scalar reference on AArch64 (docs/arm.md).
//
// Each output y[i, r] is one dot product of weight row r and activation row
// i, in an order fixed by n_in alone, so a batch gives the same bits as its
// rows one at a time (kernel_table.h). Q8_0 quantizes the activations once
// per matmul to int8 blocks of 32 with an f32 scale (prepare_q8), as the
// x86 tables do; its int8 products are summed exactly in int32.
#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/ref/ref.h"
#include "tensor/dtype.h"

namespace og::kernels {
namespace neon {
namespace {

// Σ w[k]·x[k] in f32: four 4-lane accumulators over 16 elements a step, then
// 4 a step, then the scalar tail.
inline float dot_f32(const float* w, const float* x, int64_t n) {
  float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    a0 = vfmaq_f32(a0, vld1q_f32(w + k), vld1q_f32(x + k));
    a1 = vfmaq_f32(a1, vld1q_f32(w + k + 4), vld1q_f32(x + k + 4));
    a2 = vfmaq_f32(a2, vld1q_f32(w + k + 8), vld1q_f32(x + k + 8));
    a3 = vfmaq_f32(a3, vld1q_f32(w + k + 12), vld1q_f32(x + k + 12));
  }
  for (; k + 4 <= n; k += 4) a0 = vfmaq_f32(a0, vld1q_f32(w + k), vld1q_f32(x + k));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
  for (; k < n; ++k) s += w[k] * x[k];
  return s;
}

inline float32x4_t load_f16x4(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

// The same for f16 weights (widened exactly to f32 by fcvtl).
inline float dot_f16(const uint16_t* w, const float* x, int64_t n) {
  float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    a0 = vfmaq_f32(a0, load_f16x4(w + k), vld1q_f32(x + k));
    a1 = vfmaq_f32(a1, load_f16x4(w + k + 4), vld1q_f32(x + k + 4));
    a2 = vfmaq_f32(a2, load_f16x4(w + k + 8), vld1q_f32(x + k + 8));
    a3 = vfmaq_f32(a3, load_f16x4(w + k + 12), vld1q_f32(x + k + 12));
  }
  for (; k + 4 <= n; k += 4) a0 = vfmaq_f32(a0, load_f16x4(w + k), vld1q_f32(x + k));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
  for (; k < n; ++k) s += f16_to_f32(w[k]) * x[k];
  return s;
}

// bf16 is the top half of an f32: widened exactly by a shift.
inline float32x4_t load_bf16x4(const uint16_t* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }

inline float dot_bf16(const uint16_t* w, const float* x, int64_t n) {
  float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    a0 = vfmaq_f32(a0, load_bf16x4(w + k), vld1q_f32(x + k));
    a1 = vfmaq_f32(a1, load_bf16x4(w + k + 4), vld1q_f32(x + k + 4));
    a2 = vfmaq_f32(a2, load_bf16x4(w + k + 8), vld1q_f32(x + k + 8));
    a3 = vfmaq_f32(a3, load_bf16x4(w + k + 12), vld1q_f32(x + k + 12));
  }
  for (; k + 4 <= n; k += 4) a0 = vfmaq_f32(a0, load_bf16x4(w + k), vld1q_f32(x + k));
  float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
  for (; k < n; ++k) s += bf16_to_f32(w[k]) * x[k];
  return s;
}

float dot_row_bf16(const void* w, const float* x, int64_t n) { return dot_bf16(static_cast<const uint16_t*>(w), x, n); }
float dot_row_f32(const void* w, const float* x, int64_t n) { return dot_f32(static_cast<const float*>(w), x, n); }
float dot_row_f16(const void* w, const float* x, int64_t n) { return dot_f16(static_cast<const uint16_t*>(w), x, n); }

// Weight-row-major: each weight row is read once from memory and dotted with
// every activation row while it is in cache.
template <class Row, float (*Dot)(const Row*, const float*, int64_t)>
void rows_float(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
                const void*, int64_t n_x, float* y, int64_t n_out) {
  for (int64_t r = r0; r < r1; ++r) {
    const Row* wr = reinterpret_cast<const Row*>(w + r * row_bytes);
    for (int64_t i = 0; i < n_x; ++i) y[i * n_out + r] = Dot(wr, x + i * n_in, n_in);
  }
}

// Other plain weight dtypes: each weight row dequantized once by the
// reference into a per-thread buffer (sized once per thread, then reused),
// then dotted with every activation row.
template <DType T>
void rows_dequant(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
                  const void*, int64_t n_x, float* y, int64_t n_out) {
  thread_local std::vector<float> buf;
  buf.resize(static_cast<size_t>(n_in));
  for (int64_t r = r0; r < r1; ++r) {
    ref::dequantize_row(T, w + r * row_bytes, buf.data(), n_in);
    for (int64_t i = 0; i < n_x; ++i) y[i * n_out + r] = dot_f32(buf.data(), x + i * n_in, n_in);
  }
}

template <DType T>
void set_dequant(KernelTable& k) {
  k.matmul[static_cast<int>(T)] = MatmulImpl{nullptr, nullptr, &rows_dequant<T>, 1};
}

// ---- Q8_0: activations as int8 q[n_in] then f32 d[n_in / 32] per row ----

constexpr int64_t kQ8Bytes = 34;  // f16 d, then 32 int8 quants

inline int64_t act_stride(int64_t n_in) { return (n_in + 4 * (n_in / 32) + 63) / 64 * 64; }
int64_t act_bytes(int64_t n_x, int64_t n_in) { return n_x * act_stride(n_in); }

// Each block of 32: d = amax / 127, q = round-to-nearest-even(x / d) (|q| ≤ 127).
void prepare_q8(const float* x, int64_t n_x, int64_t n_in, void* act) {
  const int64_t nb = n_in / 32, stride = act_stride(n_in);
  for (int64_t i = 0; i < n_x; ++i) {
    int8_t* q = reinterpret_cast<int8_t*>(static_cast<uint8_t*>(act) + i * stride);
    float* d_out = reinterpret_cast<float*>(q + n_in);
    const float* xi = x + i * n_in;
    for (int64_t b = 0; b < nb; ++b) {
      float32x4_t v[8];
      float32x4_t amax = vdupq_n_f32(0);
      for (int k = 0; k < 8; ++k) {
        v[k] = vld1q_f32(xi + 32 * b + 4 * k);
        amax = vmaxq_f32(amax, vabsq_f32(v[k]));
      }
      const float d = vmaxvq_f32(amax) / 127.0f;
      const float32x4_t id = vdupq_n_f32(d != 0.0f ? 1.0f / d : 0.0f);
      int16x8_t h[4];
      for (int k = 0; k < 4; ++k)
        h[k] = vcombine_s16(vqmovn_s32(vcvtnq_s32_f32(vmulq_f32(v[2 * k], id))),
                            vqmovn_s32(vcvtnq_s32_f32(vmulq_f32(v[2 * k + 1], id))));
      vst1q_s8(q + 32 * b, vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1])));
      vst1q_s8(q + 32 * b + 16, vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3])));
      d_out[b] = d;
    }
  }
}

// Σ_k w[k]·a[k] over 32 int8 pairs, exact: pairs of products (|w|, |a| ≤
// 127, so each pair fits int16) widened into int32 lanes.
inline int32_t dot_i8x32(const int8_t* w, const int8_t* a) {
  const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
  int16x8_t p0 = vmull_s8(vget_low_s8(w0), vget_low_s8(a0));
  p0 = vmlal_s8(p0, vget_high_s8(w0), vget_high_s8(a0));
  int16x8_t p1 = vmull_s8(vget_low_s8(w1), vget_low_s8(a1));
  p1 = vmlal_s8(p1, vget_high_s8(w1), vget_high_s8(a1));
  return vaddvq_s32(vpadalq_s16(vpaddlq_s16(p0), p1));
}

inline float dot_q8_0(const uint8_t* w, const int8_t* q, const float* d, int64_t nb) {
  float s = 0;
  for (int64_t b = 0; b < nb; ++b) {
    uint16_t h;
    std::memcpy(&h, w + b * kQ8Bytes, 2);
    const int8_t* wq = reinterpret_cast<const int8_t*>(w + b * kQ8Bytes + 2);
    s += f16_to_f32(h) * d[b] * static_cast<float>(dot_i8x32(wq, q + 32 * b));
  }
  return s;
}

void rows_q8_0(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float*,
               const void* act, int64_t n_x, float* y, int64_t n_out) {
  const int64_t nb = n_in / 32, stride = act_stride(n_in);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t i = 0; i < n_x; ++i) {
      const int8_t* q = reinterpret_cast<const int8_t*>(static_cast<const uint8_t*>(act) + i * stride);
      y[i * n_out + r] = dot_q8_0(w + r * row_bytes, q, reinterpret_cast<const float*>(q + n_in), nb);
    }
}

}  // namespace
}  // namespace neon

void register_neon(KernelTable& k) {
  const int f32 = static_cast<int>(DType::F32), f16 = static_cast<int>(DType::F16);
  const int q8 = static_cast<int>(DType::Q8_0);
  k.matmul[f32] = MatmulImpl{nullptr, nullptr, &neon::rows_float<float, &neon::dot_f32>, 1};
  k.matmul[f16] = MatmulImpl{nullptr, nullptr, &neon::rows_float<uint16_t, &neon::dot_f16>, 1};
  k.matmul[q8] = MatmulImpl{&neon::act_bytes, &neon::prepare_q8, &neon::rows_q8_0, 1};
  k.dot[f32] = &neon::dot_row_f32;
  k.dot[f16] = &neon::dot_row_f16;
  const int bf16 = static_cast<int>(DType::BF16);
  k.matmul[bf16] = MatmulImpl{nullptr, nullptr, &neon::rows_float<uint16_t, &neon::dot_bf16>, 1};
  k.dot[bf16] = &neon::dot_row_bf16;
  neon::set_dequant<DType::Q4_0>(k);
  neon::set_dequant<DType::Q4_1>(k);
  neon::set_dequant<DType::Q5_0>(k);
  neon::set_dequant<DType::Q5_1>(k);
  neon::set_dequant<DType::Q4_K>(k);
  neon::set_dequant<DType::Q5_K>(k);
  neon::set_dequant<DType::Q6_K>(k);
  neon::set_dequant<DType::Q2_K>(k);
  neon::set_dequant<DType::Q3_K>(k);
  neon::set_dequant<DType::IQ4_NL>(k);
  neon::set_dequant<DType::IQ4_XS>(k);
  neon::set_dequant<DType::MXFP4>(k);
}

}  // namespace og::kernels
