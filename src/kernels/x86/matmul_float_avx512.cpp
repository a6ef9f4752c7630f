// F32 and F16 weights on AVX-512 (part of the avx512 table; BF16 has its own
// vdpbf16ps kernel, matmul_bf16_avx512.cpp). The activations are read as the
// f32 they are; f16 weights are widened with vcvtph2ps as they are loaded.
//
// Why not the shared 256-bit float tile (matmul_x86.inc ftile): Zen 4/5 and
// the Xeons run 512-bit FMAs at full width, so a ymm FMA does half the work
// per instruction; and a large batch (the vision tower's 4096 patch rows,
// prefill) streamed every activation row past each 4-row weight block, from
// DRAM once the rows outgrew L2. Here a tile is RT weight rows × XT
// activation rows of 16-lane f32 accumulators, and large batches go in
// activation chunks that stay in L2 while this thread's weight rows pass
// (f16 rows of up to ~1300 values: in L2 panels, past L1-held activation tiles).
//
// Each output's lane sums run over k in the same order whatever the tile
// (the row's last n_in % 16 values under a mask), and every output is reduced
// by sum4's one tree, so a batch equals its rows one at a time bit for bit.
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

constexpr int RT = 4;                         // weight rows per tile
constexpr int XT = 6;                         // activation rows per tile: RT·XT + XT + 1 ≤ 32 zmm
constexpr int64_t kPrefetch = 1024;           // bytes ahead of use, per weight row, when streaming
constexpr int64_t kChunkBytes = 256 * 1024;  // activation rows kept in L2 while weight rows pass
constexpr int64_t kPanelBytes = 128 * 1024;  // weight rows kept in L2 while a chunk's tiles pass
constexpr int64_t kL1TileBytes = 32 * 1024;  // an activation tile this small stays in L1 (48 KiB on Zen 5)

// kPanels: whether prefill may take the weight-panel order (rows() below).
struct WF32 {
  static constexpr int kBytes = 4;
  static constexpr bool kPanels = false;  // 1152x1152, 1 thread: 4-19 % slower in panels (twice)
  static __m512 load(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static __m512 load_masked(const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};

struct WF16 {
  static constexpr int kBytes = 2;
  static constexpr bool kPanels = true;
  static __m512 load(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load_masked(const uint8_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
};

// The sums of a, b, c and d's 16 lanes as lanes 0..3. Every sum is the same
// tree of its own lanes: ((l_j + l_j+8) + (l_j+4 + l_j+12)) for j < 4, then
// (j0 + j2) + (j1 + j3); float addition commutes exactly, so which vectors
// share the call never changes a result.
inline __m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  const __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  const __m512 t = _mm512_add_ps(s, _mm512_permute_ps(s, 0x4E));  // lane pairs (0, 2), (1, 3)
  const __m512 u = _mm512_add_ps(t, _mm512_permute_ps(t, 0xB1));  // then (0, 1)
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), u));
}

// Weight rows [r, r + R) × activation rows [x0, x0 + X) into y.
template <class L, int R, int X, bool kStream>
void tile(const uint8_t* w, int64_t row_bytes, int64_t n_in, const float* x, int64_t r, int64_t x0, float* y,
          int64_t n_out) {
  __m512 acc[R][X];
  const uint8_t* wr[R];
  const float* xr[X];
  for (int ri = 0; ri < R; ++ri) {
    wr[ri] = w + (r + ri) * row_bytes;
    for (int xi = 0; xi < X; ++xi) acc[ri][xi] = _mm512_setzero_ps();
  }
  for (int xi = 0; xi < X; ++xi) xr[xi] = x + (x0 + xi) * n_in;
  const int64_t n16 = n_in / 16 * 16;
  for (int64_t k = 0; k < n16; k += 16) {
    __m512 a[X];  // X activation vectors in registers, then one weight row at a time
    for (int xi = 0; xi < X; ++xi) a[xi] = _mm512_loadu_ps(xr[xi] + k);
    for (int ri = 0; ri < R; ++ri) {
      if constexpr (kStream)
        _mm_prefetch(reinterpret_cast<const char*>(wr[ri] + k * L::kBytes + kPrefetch), _MM_HINT_T0);
      const __m512 wv = L::load(wr[ri] + k * L::kBytes);
      for (int xi = 0; xi < X; ++xi) acc[ri][xi] = _mm512_fmadd_ps(wv, a[xi], acc[ri][xi]);
    }
  }
  if (n16 < n_in) {  // the last n_in % 16 values under a mask: never a byte past a row
    const __mmask16 m = static_cast<__mmask16>((1u << (n_in - n16)) - 1);
    __m512 a[X];
    for (int xi = 0; xi < X; ++xi) a[xi] = _mm512_maskz_loadu_ps(m, xr[xi] + n16);
    for (int ri = 0; ri < R; ++ri) {
      const __m512 wv = L::load_masked(wr[ri] + n16 * L::kBytes, m);
      for (int xi = 0; xi < X; ++xi) acc[ri][xi] = _mm512_fmadd_ps(wv, a[xi], acc[ri][xi]);
    }
  }
  // Per activation row, the R outputs are contiguous: 4 at a time.
  for (int xi = 0; xi < X; ++xi) {
    float* out = y + (x0 + xi) * n_out + r;
    for (int g = 0; g < R; g += 4) {
      const __m512 a0 = acc[g][xi];
      const __m512 a1 = g + 1 < R ? acc[g + 1][xi] : a0;
      const __m512 a2 = g + 2 < R ? acc[g + 2][xi] : a0;
      const __m512 a3 = g + 3 < R ? acc[g + 3][xi] : a0;
      const __m128 s = sum4(a0, a1, a2, a3);
      if (g + 4 <= R)
        _mm_storeu_ps(out + g, s);
      else
        _mm_mask_storeu_ps(out + g, static_cast<__mmask8>((1u << (R - g)) - 1), s);
    }
  }
}

// One R-row tile over activation rows [x0, x0 + n), 1 ≤ n ≤ X, as one tile.
template <class L, int R, int X, bool kStream>
void ntile(const uint8_t* w, int64_t row_bytes, int64_t n_in, const float* x, int64_t r, int64_t x0, int64_t n,
           float* y, int64_t n_out) {
  if (n == X) return tile<L, R, X, kStream>(w, row_bytes, n_in, x, r, x0, y, n_out);
  if constexpr (X > 1) return ntile<L, R, X - 1, kStream>(w, row_bytes, n_in, x, r, x0, n, y, n_out);
}

// Rows [r0, r1) × activation rows [c0, c1) in RT × XT tiles (the row and
// batch tails as narrower tiles). kActsOuter: for each XT activation rows,
// every RT weight rows (the activation tile stays in L1 while the weight rows
// stream past); else for each RT weight rows, every XT activation rows (the
// weight rows stay in L1).
template <class L, bool kStream, bool kActsOuter>
void block(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x, int64_t c0,
           int64_t c1, float* y, int64_t n_out) {
  auto rows_of = [&](int64_t i) {
    const int64_t n = c1 - i < XT ? c1 - i : XT;
    int64_t r = r0;
    for (; r + RT <= r1; r += RT) ntile<L, RT, XT, kStream>(w, row_bytes, n_in, x, r, i, n, y, n_out);
    for (; r < r1; ++r) ntile<L, 1, XT, kStream>(w, row_bytes, n_in, x, r, i, n, y, n_out);
  };
  if constexpr (kActsOuter) {
    for (int64_t i = c0; i < c1; i += XT) rows_of(i);
  } else {
    int64_t r = r0;
    for (; r + RT <= r1; r += RT)
      for (int64_t i = c0; i < c1; i += XT)
        ntile<L, RT, XT, kStream>(w, row_bytes, n_in, x, r, i, c1 - i < XT ? c1 - i : XT, y, n_out);
    for (; r < r1; ++r)
      for (int64_t i = c0; i < c1; i += XT)
        ntile<L, 1, XT, kStream>(w, row_bytes, n_in, x, r, i, c1 - i < XT ? c1 - i : XT, y, n_out);
  }
}

// Up to XT activation rows stream the weights once (prefetched). More go in
// chunks of activation rows that stay in L2. Where an activation tile fits
// in L1 (n_in up to ~1300), each chunk meets panels of weight rows that stay
// in L2 beside it, and the weight rows stream from there past each
// activation tile (bench_kernels_bench f16 1152x1152, 1 thread: 7-17 %
// faster in two A/B pairs; f32 was slower, L::kPanels); wider rows keep RT
// weight rows in L1 instead (their activation tile would not fit: f16
// 1152x4304 ran 7 % slower the other way, f32 25 %).
template <class L>
void rows(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x, const void*,
          int64_t n_x, float* y, int64_t n_out) {
  if (n_x <= XT) return block<L, true, false>(w, row_bytes, n_in, r0, r1, x, 0, n_x, y, n_out);
  int64_t chunk = kChunkBytes / (4 * n_in) / XT * XT, panel = kPanelBytes / row_bytes / RT * RT;
  if (chunk < XT) chunk = XT;
  if (panel < RT) panel = RT;
  const bool acts_outer = L::kPanels && XT * 4 * n_in <= kL1TileBytes;
  for (int64_t c0 = 0; c0 < n_x; c0 += chunk) {
    const int64_t c1 = c0 + chunk < n_x ? c0 + chunk : n_x;
    if (!acts_outer) {
      block<L, false, false>(w, row_bytes, n_in, r0, r1, x, c0, c1, y, n_out);
      continue;
    }
    for (int64_t p0 = r0; p0 < r1; p0 += panel)
      block<L, false, true>(w, row_bytes, n_in, p0, p0 + panel < r1 ? p0 + panel : r1, x, c0, c1, y, n_out);
  }
}

template <class L>
void set(KernelTable& k, DType t) {
  MatmulImpl& m = k.matmul[static_cast<int>(t)];
  m.act_bytes = nullptr;
  m.prepare = nullptr;
  m.rows = &rows<L>;
  m.row_tile = RT;
}

}  // namespace

void fill_matmul_float(KernelTable& k) {
  set<WF32>(k, DType::F32);
  set<WF16>(k, DType::F16);
}

}  // namespace og::kernels::avx512
