// BF16 weights on AVX-512 BF16 (part of the avx512 table, whose CPUs all have
// it: dispatch.cpp). vdpbf16ps multiplies 32 bf16 pairs and adds them into 16
// f32 lanes in one instruction, so the weights are used as stored, without
// the shift to f32 and the FMA per 16 products of the float path.
//
// The activations are rounded to bf16 (nearest even) once per matmul: each
// product then carries at most 2⁻⁸ of its size in error (bf16 × bf16 is
// exact in f32; the sums are f32), so |y − y_exact| ≤ 2⁻⁸·Σ|w·x| plus f32
// accumulation. Every output element is the same sequence of instructions for
// any tile shape, so a batch of rows equals the rows one by one bit for bit.
// GCC 12's AVX-512 headers build some intrinsics from _mm512_undefined_*(),
// which -Wuninitialized reports at every use: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__  // clang has no such warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "kernels/kernel_table.h"

namespace og::kernels::avx512 {
namespace {

constexpr int RT = 4;                   // weight rows per tile
constexpr int XT = 4;                   // activation rows per tile
constexpr int64_t kPrefetch = 4096;     // bytes ahead of use, per weight row, when streaming
constexpr int64_t kChunkBytes = 256 * 1024;  // activation rows kept in L2 while weight rows pass

// Activation row stride in bf16 values: n_in rounded up to 32 (one zmm), zero padded.
inline int64_t stride_of(int64_t n_in) { return (n_in + 31) / 32 * 32; }
int64_t act_bytes(int64_t n_x, int64_t n_in) { return n_x * stride_of(n_in) * 2; }

inline __mmask16 mask16(int64_t left) {
  return left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
}

void prepare(const float* x, int64_t n_x, int64_t n_in, void* act) {
  const int64_t stride = stride_of(n_in);
  for (int64_t i = 0; i < n_x; ++i) {
    const float* xr = x + i * n_in;
    uint16_t* out = static_cast<uint16_t*>(act) + i * stride;
    for (int64_t k = 0; k < stride; k += 32) {
      const __m512 lo = _mm512_maskz_loadu_ps(mask16(n_in - k), xr + k);
      const __m512 hi = _mm512_maskz_loadu_ps(mask16(n_in - k - 16), xr + k + 16);
      _mm512_store_si512(out + k, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
    }
  }
}

// Weight rows [r, r + R) × activation rows [x0, x0 + X); kStream prefetches
// the weights (they are read once per call: decode and small batches).
template <int R, int X, bool kStream>
void tile(const uint8_t* w, int64_t row_bytes, int64_t n_in, const uint16_t* act, int64_t r, int64_t x0, float* y,
          int64_t n_out) {
  const int64_t stride = stride_of(n_in);
  __m512 acc[R][X];
  const uint8_t* wr[R];
  for (int ri = 0; ri < R; ++ri) {
    wr[ri] = w + (r + ri) * row_bytes;
    for (int xi = 0; xi < X; ++xi) acc[ri][xi] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < n_in; k += 32) {
    // The row's last partial group is loaded under a mask (never past the row);
    // the padded activations are zero there.
    const __mmask32 m = n_in - k >= 32 ? ~__mmask32(0) : __mmask32((1u << (n_in - k)) - 1);
    __m512bh wv[R];
    for (int ri = 0; ri < R; ++ri) {
      if constexpr (kStream) _mm_prefetch(reinterpret_cast<const char*>(wr[ri] + 2 * k + kPrefetch), _MM_HINT_T0);
      wv[ri] = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, wr[ri] + 2 * k));
    }
    for (int xi = 0; xi < X; ++xi) {
      const __m512bh a = reinterpret_cast<__m512bh>(_mm512_load_si512(act + (x0 + xi) * stride + k));
      for (int ri = 0; ri < R; ++ri) acc[ri][xi] = _mm512_dpbf16_ps(acc[ri][xi], wv[ri], a);
    }
  }
  for (int ri = 0; ri < R; ++ri)
    for (int xi = 0; xi < X; ++xi) y[(x0 + xi) * n_out + r + ri] = _mm512_reduce_add_ps(acc[ri][xi]);
}

// One R-row tile over activation rows [x0, x0 + n), 1 ≤ n ≤ X, as one tile.
template <int R, int X, bool kStream>
void ntile(const uint8_t* w, int64_t row_bytes, int64_t n_in, const uint16_t* act, int64_t r, int64_t x0, int64_t n,
           float* y, int64_t n_out) {
  if (n == X) return tile<R, X, kStream>(w, row_bytes, n_in, act, r, x0, y, n_out);
  if constexpr (X > 1) return ntile<R, X - 1, kStream>(w, row_bytes, n_in, act, r, x0, n, y, n_out);
}

// Rows [r0, r1): up to XT activation rows stream the weights once (one tile
// per RT weight rows); more go in chunks that stay in L2 while this thread's
// weight rows pass over them, XT at a time.
void rows(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float*, const void* act_v,
          int64_t n_x, float* y, int64_t n_out) {
  const uint16_t* act = static_cast<const uint16_t*>(act_v);
  if (n_x <= XT) {
    int64_t r = r0;
    for (; r + RT <= r1; r += RT) ntile<RT, XT, true>(w, row_bytes, n_in, act, r, 0, n_x, y, n_out);
    for (; r < r1; ++r) ntile<1, XT, true>(w, row_bytes, n_in, act, r, 0, n_x, y, n_out);
    return;
  }
  int64_t chunk = kChunkBytes / (2 * stride_of(n_in)) / XT * XT;
  if (chunk < XT) chunk = XT;
  for (int64_t c0 = 0; c0 < n_x; c0 += chunk) {
    const int64_t c1 = c0 + chunk < n_x ? c0 + chunk : n_x;
    int64_t r = r0;
    for (; r + RT <= r1; r += RT) {
      int64_t x = c0;
      for (; x + XT <= c1; x += XT) tile<RT, XT, false>(w, row_bytes, n_in, act, r, x, y, n_out);
      if (x < c1) ntile<RT, XT, false>(w, row_bytes, n_in, act, r, x, c1 - x, y, n_out);
    }
    for (; r < r1; ++r) {
      int64_t x = c0;
      for (; x + XT <= c1; x += XT) tile<1, XT, false>(w, row_bytes, n_in, act, r, x, y, n_out);
      if (x < c1) ntile<1, XT, false>(w, row_bytes, n_in, act, r, x, c1 - x, y, n_out);
    }
  }
}

}  // namespace

void fill_matmul_bf16(KernelTable& k) {
  MatmulImpl& m = k.matmul[static_cast<int>(DType::BF16)];
  m.act_bytes = &act_bytes;
  m.prepare = &prepare;
  m.rows = &rows;
  m.row_tile = RT;
}

}  // namespace og::kernels::avx512
