// BF16 weights with bfmmla (FEAT_BF16; compiled with -march=armv8.2-a+bf16 by
// src/kernels/isa.cmake). cpu_arm.cpp adds this to the int8-matrix table
// only when HWCAP2 also reports BF16: the two features are separate, but
// every CPU known to have I8MM has BF16 too (Armv8.6 makes both mandatory;
// Graviton 3/4, Apple M2+, Neoverse V1/V2/N2), and the dotprod table keeps
// the plain f32 BF16 kernel as this one's twin (OFFGRAPH_ISA=dotprod).
//
// The activations are rounded to bf16 once per matmul (bfcvtn: nearest even
// under the default FPCR), so each product carries at most 2⁻⁹ of its size
// in error; bf16 × bf16 is exact in f32, and bfmmla adds in f32 in an order
// and a rounding of its own (fixed by the architecture, not the FPCR). The
// bound the tests use is x86's vdpbf16ps one: |y − y_exact| ≤ 2⁻⁸·Σ|w·x| +
// 1e-5·Σ|w·x| (tests/kernels/isa_test.cpp tolerance()).
//
// Every output is made by bfmmla alone: 2 weight rows × 2 activation rows
// per instruction, 4 values deep; an odd last row of either is paired with
// itself. A lane of bfmmla depends only on its own row pair and its
// accumulator, so y[i, r] is the same instruction sequence whatever the
// tile, the row count or the batch: a batch equals its rows alone bit for bit.
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"

namespace og::kernels {
namespace bf16mm {
namespace {

// Activation row stride in bf16 values: n_in rounded up to 8 (two bfmmla
// steps), zero padded.
inline int64_t stride_of(int64_t n_in) { return (n_in + 7) / 8 * 8; }
int64_t act_bytes(int64_t n_x, int64_t n_in) { return n_x * stride_of(n_in) * 2; }

inline bfloat16x8_t to_bf16x8(const float* p) {
  return vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(vld1q_f32(p)), vld1q_f32(p + 4));
}

void prepare(const float* x, int64_t n_x, int64_t n_in, void* act) {
  const int64_t stride = stride_of(n_in);
  for (int64_t i = 0; i < n_x; ++i) {
    const float* xr = x + i * n_in;
    bfloat16_t* out = static_cast<bfloat16_t*>(act) + i * stride;
    int64_t k = 0;
    for (; k + 8 <= n_in; k += 8) vst1q_bf16(out + k, to_bf16x8(xr + k));
    if (k < n_in) {
      float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      std::memcpy(t, xr + k, static_cast<size_t>(n_in - k) * 4);
      vst1q_bf16(out + k, to_bf16x8(t));
    }
  }
}

// bfmmla's operands from two rows' 8 values: the first 4 of each (lo) or the
// last 4 (hi), row a's then row b's.
inline bfloat16x8_t lo4(uint16x8_t a, uint16x8_t b) {
  return vreinterpretq_bf16_u64(vzip1q_u64(vreinterpretq_u64_u16(a), vreinterpretq_u64_u16(b)));
}
inline bfloat16x8_t hi4(uint16x8_t a, uint16x8_t b) {
  return vreinterpretq_bf16_u64(vzip2q_u64(vreinterpretq_u64_u16(a), vreinterpretq_u64_u16(b)));
}

// 8 values of a weight row from k (n_in − k of them; the rest zero).
inline uint16x8_t load_w(const uint8_t* row, int64_t k, int64_t n_in) {
  if (k + 8 <= n_in) return vld1q_u16(reinterpret_cast<const uint16_t*>(row) + k);
  uint16_t t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(t, row + 2 * k, static_cast<size_t>(n_in - k) * 2);
  return vld1q_u16(t);
}

// Weight rows w0, w1 by P pairs of activation rows a[2p], a[2p + 1]: out[p]
// lanes are w0·a[2p], w0·a[2p+1], w1·a[2p], w1·a[2p+1]. Two accumulators per
// pair (the first and last 4 of each 8), added at the end.
template <int P>
inline void tile(const uint8_t* w0, const uint8_t* w1, const uint16_t* const* a, int64_t n_in, float32x4_t out[P]) {
  float32x4_t lo[P], hi[P];
  for (int p = 0; p < P; ++p) lo[p] = hi[p] = vdupq_n_f32(0);
  for (int64_t k = 0; k < n_in; k += 8) {
    const uint16x8_t x0 = load_w(w0, k, n_in), x1 = load_w(w1, k, n_in);
    const bfloat16x8_t wl = lo4(x0, x1), wh = hi4(x0, x1);
    for (int p = 0; p < P; ++p) {
      const uint16x8_t y0 = vld1q_u16(a[2 * p] + k), y1 = vld1q_u16(a[2 * p + 1] + k);
      lo[p] = vbfmmlaq_f32(lo[p], wl, lo4(y0, y1));
      hi[p] = vbfmmlaq_f32(hi[p], wh, hi4(y0, y1));
    }
  }
  for (int p = 0; p < P; ++p) out[p] = vaddq_f32(lo[p], hi[p]);
}

template <int P>
void run_tile(const uint8_t* w0, const uint8_t* w1, bool two_w, const uint16_t* act, int64_t stride, int64_t i,
              int64_t n_x, int64_t n_in, int64_t r, float* y, int64_t n_out) {
  const uint16_t* a[2 * P];
  for (int q = 0; q < 2 * P; ++q) a[q] = act + std::min<int64_t>(i + q, n_x - 1) * stride;  // the last row repeated
  float32x4_t out[P];
  tile<P>(w0, w1, a, n_in, out);
  for (int p = 0; p < P; ++p) {
    float v[4];
    vst1q_f32(v, out[p]);
    for (int c = 0; c < 2 && i + 2 * p + c < n_x; ++c) {
      float* yr = y + (i + 2 * p + c) * n_out + r;
      yr[0] = v[c];
      if (two_w) yr[1] = v[2 + c];
    }
  }
}

void rows(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float*, const void* act,
          int64_t n_x, float* y, int64_t n_out) {
  const int64_t stride = stride_of(n_in);
  const uint16_t* a = static_cast<const uint16_t*>(act);
  for (int64_t r = r0; r < r1; r += 2) {
    const bool two_w = r + 1 < r1;
    const uint8_t* w0 = w + r * row_bytes;
    const uint8_t* w1 = two_w ? w0 + row_bytes : w0;  // an odd last row paired with itself
    for (int64_t i = 0; i < n_x;) {
      const int64_t left = n_x - i;
      if (left >= 7) {
        run_tile<4>(w0, w1, two_w, a, stride, i, n_x, n_in, r, y, n_out);
        i += 8;
      } else if (left >= 3) {
        run_tile<2>(w0, w1, two_w, a, stride, i, n_x, n_in, r, y, n_out);
        i += 4;
      } else {
        run_tile<1>(w0, w1, two_w, a, stride, i, n_x, n_in, r, y, n_out);
        i += 2;
      }
    }
  }
}

}  // namespace
}  // namespace bf16mm

void register_bf16(KernelTable& k) {
  k.matmul[static_cast<int>(DType::BF16)] = MatmulImpl{&bf16mm::act_bytes, &bf16mm::prepare, &bf16mm::rows, 2};
}

}  // namespace og::kernels
