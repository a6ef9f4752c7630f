// AVX2 + FMA + F16C attention kernels for the K/V storage dtypes (registered
// in the AVX2 kernel table; the AVX-512 table has attend_avx512.cpp). Same
// contract as the scalar kernels in ref/attend_ref.cpp (ops.h AttendKernels):
// K/V rows are read in their storage dtype, q8_0 block by block (the last
// block of a row zero-padded). Before these, AVX2 machines ran the scalar
// kernels: decode attention read f16 K/V at ~0.3 GB/s and was ~60 % of a
// 1B model's 512-token prefill.
//
// Guarantees, as the AVX-512 kernels: a score is the chain of FMAs over its
// 8-dim chunks in order from zero, then one fixed reduction tree (hsum8x8)
// and × scale, whatever the number of queries, rows or the tile it falls in;
// accum adds each row's product to each output element in row order, one FMA
// each; exp_sum's sum depends only on x and n. So a batch of rows equals the
// rows alone bit for bit (tests/kv/kv_tile_test.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/x86/attend_dispatch.h"

namespace og::kernels::avx2 {
namespace {

using x86::for_head_groups;
using x86::with_head_dim;

constexpr int kQ8Block = 32;                 // values per q8_0 block
constexpr int kQ8BlockBytes = 2 + kQ8Block;  // f16 scale + int8 values
// Rows accum() keeps one set of accumulators over before storing them (the
// driver in kv/ folds blocks of this many rows, still in L1).
constexpr int64_t kAccumRows = 64;

// All-ones in the first `left` of 8 lanes (left clamped to 0..8).
inline __m256i lane_mask(int left) {
  alignas(32) static const int32_t kOnes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kOnes + 8 - std::clamp(left, 0, 8)));
}

// Elements e..e+7 of a row as f32; `left` = elements of the row from e on
// (past it: zeros, nothing read).
struct F32 {
  static __m256 load(const uint8_t* row, int e, int left) {
    const float* p = reinterpret_cast<const float*>(row) + e;
    return left >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lane_mask(left));
  }
};
// Up to 8 16-bit values from p (left of them; the rest zero).
inline __m128i load_u16x8(const uint8_t* p, int left) {
  if (left >= 8) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  alignas(16) uint16_t t[8] = {};
  if (left > 0) std::memcpy(t, p, size_t(2 * left));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(t));
}
struct F16 {
  static __m256 load(const uint8_t* row, int e, int left) { return _mm256_cvtph_ps(load_u16x8(row + 2 * e, left)); }
};
struct BF16 {
  static __m256 load(const uint8_t* row, int e, int left) {
    const __m256i x = _mm256_cvtepu16_epi32(load_u16x8(row + 2 * e, left));
    return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
  }
};
// q8_0: a block's scale, and the 8 values of block e / 32 from e on (e % 8
// == 0); the kernels read the scale once per block and take d · q per chunk.
// A block is whole (zero-padded), so only a chunk past the row's last block
// must not be read.
struct Q8 {
  static __m256 scale(const uint8_t* row, int e) {
    uint16_t h;
    std::memcpy(&h, row + (e / kQ8Block) * kQ8BlockBytes, 2);
    return _mm256_set1_ps(_cvtsh_ss(h));
  }
  static __m256 values(const uint8_t* row, int e) {
    const uint8_t* q = row + (e / kQ8Block) * kQ8BlockBytes + 2 + e % kQ8Block;
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
  }
};

// q[e..e+7] with `left` valid floats (the rest zero, not read).
inline __m256 load_q(const float* q, int left) {
  return left >= 8 ? _mm256_loadu_ps(q) : _mm256_maskload_ps(q, lane_mask(left));
}

// Lane p = the sum of the 8 lanes of v[p], each through the same tree:
// ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)).
inline __m256 hsum8x8(const __m256 (&v)[8]) {
  const __m256 h01 = _mm256_hadd_ps(v[0], v[1]), h23 = _mm256_hadd_ps(v[2], v[3]);
  const __m256 h45 = _mm256_hadd_ps(v[4], v[5]), h67 = _mm256_hadd_ps(v[6], v[7]);
  const __m256 a = _mm256_hadd_ps(h01, h23), b = _mm256_hadd_ps(h45, h67);  // [v0..v3 low | v0..v3 high]
  return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

// Asks for n rows of rb bytes at address p ahead of use (a prefetch never
// faults; the address is computed as an integer so that no pointer leaves
// its object).
__attribute__((always_inline)) inline void prefetch_rows(uintptr_t p, int64_t rb, int n) {
  for (int64_t o = 0; o < n * rb; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + uintptr_t(o)), _MM_HINT_T0);
}
constexpr int kPrefetchRows = 24;  // how far ahead of use K and V rows are prefetched

// s[j * s_stride + r] = scale · (the sum of acc[j * R + r]'s lanes), for the
// R x G scores of a tile; every score through hsum8x8's one tree.
template <int R, int G>
inline void store_scores(const __m256 (&acc)[8], float scale, float* s, int64_t s_stride) {
  alignas(32) float out[8];
  _mm256_store_ps(out, _mm256_mul_ps(hsum8x8(acc), _mm256_set1_ps(scale)));
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) s[j * s_stride + r] = out[j * R + r];
}

// q8_0 K (scores_tile passes it here): the same chunks and products (d · q,
// then the FMA), with each row's block scale read once per block instead of
// once per chunk.
template <int R, int G>
inline void scores_tile_q8(const float* q, int dk, const uint8_t* k, int64_t rbk, float scale, float* s,
                           int64_t s_stride) {
  static_assert(R * G <= 8);
  __m256 acc[8];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) acc[p] = _mm256_setzero_ps();
  for (int b0 = 0; b0 < dk; b0 += kQ8Block) {
    __m256 d[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) d[r] = Q8::scale(k + r * rbk, b0);
    for (int e = b0; e < std::min(dk, b0 + kQ8Block); e += 8) {
      const int left = dk - e;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 kv = _mm256_mul_ps(d[r], Q8::values(k + r * rbk, e));
#pragma GCC unroll 8
        for (int j = 0; j < G; ++j)
          acc[j * R + r] = _mm256_fmadd_ps(load_q(q + int64_t{j} * dk + e, left), kv, acc[j * R + r]);
      }
    }
  }
  store_scores<R, G>(acc, scale, s, s_stride);
}

// R rows x G heads of scores (R * G <= 8 accumulators, acc[j * R + r]), dk =
// DK (0: the runtime dk, the last chunk masked). Head j's score for row r
// goes to s[j * s_stride + r].
template <class L, int DK, int R, int G>
inline void scores_tile(const float* q, int dk_rt, const uint8_t* k, int64_t rbk, float scale, float* s,
                        int64_t s_stride) {
  static_assert(R * G <= 8);
  if constexpr (std::is_same_v<L, Q8>) {
    scores_tile_q8<R, G>(q, dk_rt, k, rbk, scale, s, s_stride);
  } else {
    const int dk = DK > 0 ? DK : dk_rt;
    __m256 acc[8];
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) acc[p] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int e = 0; e < dk; e += 8) {
      const int left = DK > 0 && DK % 8 == 0 ? 8 : dk - e;
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 kv = L::load(k + r * rbk, e, left);
#pragma GCC unroll 8
        for (int j = 0; j < G; ++j)
          acc[j * R + r] = _mm256_fmadd_ps(load_q(q + int64_t{j} * dk + e, left), kv, acc[j * R + r]);
      }
    }
    store_scores<R, G>(acc, scale, s, s_stride);
  }
}

// n rows, G heads: tiles of 8 / G rows, then the last rows one at a time.
template <class L, int DK, int G>
void scores_heads(const float* q, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
                  int64_t ss) {
  constexpr int R = 8 / G;
  int64_t i = 0;
  for (; i + R <= n; i += R) {
    prefetch_rows(reinterpret_cast<uintptr_t>(k) + uintptr_t((i + kPrefetchRows) * rbk), rbk, R);
    scores_tile<L, DK, R, G>(q, dk, k + i * rbk, rbk, scale, s + i, ss);
  }
  for (; i < n; ++i) scores_tile<L, DK, 1, G>(q, dk, k + i * rbk, rbk, scale, s + i, ss);
}

// Head dims 64 and 128 (most models) get tiles compiled for them; every dk
// gives the same bits through either (the chunks and the tree are the same).
template <class L>
void scores(const float* q, int g, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
            int64_t ss) {
  with_head_dim(dk, [&]<int DK>() {
    for_head_groups<8, 4, 2, 1>(g, [&]<int G>(int j) {
      scores_heads<L, DK, G>(q + int64_t{j} * dk, dk, k, rbk, n, scale, s + j * ss, ss);
    });
  });
}

// ---- K in blocks of kKeyBlock = 16 keys (ops.h scores_blocked) ----
// Dim e of a block is two vectors of 8 keys: each lane is one key's score,
// no horizontal sums.

// Element e of a row as f32 (a lone value of a partial block).
template <class L>
inline float value_at(const uint8_t* row, int e) {
  if constexpr (std::is_same_v<L, F32>) {
    float f;
    std::memcpy(&f, row + 4 * e, 4);
    return f;
  } else {
    uint16_t h;
    std::memcpy(&h, row + 2 * e, 2);
    if constexpr (std::is_same_v<L, F16>) return _cvtsh_ss(h);
    const uint32_t b = uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
}

// The G heads' scores of lanes [lo, hi) of one block (lane l's score of
// head j at s[j * ss + l - shift]; only those lanes are read and stored). Each
// score is one chain of FMAs from zero over the dims in order, then * scale:
// the same bits whatever G, lo, hi or the block.
template <class L, int DK, int G, bool kFull>
inline void block_tile(const float* q, int dk_rt, const uint8_t* kb, int lo, int hi, int shift, float scale,
                       float* s, int64_t ss) {
  const int dk = DK > 0 ? DK : dk_rt;
  const auto load = [&](int e, int h) {  // lanes 8h..8h+7 of dim e
    if constexpr (kFull) {
      return L::load(kb, e * kKeyBlock + 8 * h, 8);
    } else {
      alignas(32) float t[8] = {};
      for (int l = std::max(lo - 8 * h, 0); l < std::min(hi - 8 * h, 8); ++l)
        t[l] = value_at<L>(kb, e * kKeyBlock + 8 * h + l);
      return _mm256_load_ps(t);
    }
  };
  __m256 a[G][2];
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j) a[j][0] = a[j][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int e = 0; e < dk; ++e) {
    const __m256 k0 = load(e, 0), k1 = load(e, 1);
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) {
      const __m256 qe = _mm256_broadcast_ss(q + int64_t{j} * dk + e);
      a[j][0] = _mm256_fmadd_ps(qe, k0, a[j][0]);
      a[j][1] = _mm256_fmadd_ps(qe, k1, a[j][1]);
    }
  }
  const __m256 vs = _mm256_set1_ps(scale);
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j) {
    const __m256 o0 = _mm256_mul_ps(a[j][0], vs), o1 = _mm256_mul_ps(a[j][1], vs);
    if constexpr (kFull) {
      _mm256_storeu_ps(s + j * ss, o0);
      _mm256_storeu_ps(s + j * ss + 8, o1);
    } else {
      alignas(32) float t[kKeyBlock];
      _mm256_store_ps(t, o0);
      _mm256_store_ps(t + 8, o1);
      for (int l = lo; l < hi; ++l) s[j * ss + l - shift] = t[l];
    }
  }
}

// n keys from lane `lane` of block kb, G heads: a partial first block, whole
// blocks (prefetched kPrefetchRows keys ahead, as the row tiles), a partial last block.
template <class L, int DK, int G>
void blocked_heads(const float* q, int dk, const uint8_t* kb, int lane, int64_t n, float scale, float* s,
                   int64_t ss) {
  const int64_t kbytes = int64_t{dk} * (std::is_same_v<L, F32> ? 4 : 2);  // one key's share of a block
  const int64_t bb = kbytes * kKeyBlock;
  int64_t i = 0;
  if (lane > 0) {  // the first block's lanes [lane, min(16, lane + n)), to s[0..)
    const int hi = int(std::min<int64_t>(kKeyBlock, lane + n));
    block_tile<L, DK, G, false>(q, dk, kb, lane, hi, lane, scale, s, ss);
    i = hi - lane;
    kb += bb;
  }
  for (; i + kKeyBlock <= n; i += kKeyBlock, kb += bb) {
    prefetch_rows(reinterpret_cast<uintptr_t>(kb) + uintptr_t(kPrefetchRows * kbytes), kbytes, kKeyBlock);
    block_tile<L, DK, G, true>(q, dk, kb, 0, kKeyBlock, 0, scale, s + i, ss);
  }
  if (i < n) block_tile<L, DK, G, false>(q, dk, kb, 0, int(n - i), 0, scale, s + i, ss);
}

template <class L>
void scores_blocked(const float* q, int g, int dk, const uint8_t* kb, int lane, int64_t n, float scale, float* s,
                    int64_t ss) {
  with_head_dim(dk, [&]<int DK>() {
    for_head_groups<4, 2, 1>(g, [&]<int G>(int j) {  // 4 heads: 8 accumulators of the 16 ymm registers
      blocked_heads<L, DK, G>(q + int64_t{j} * dk, dk, kb, lane, n, scale, s + j * ss, ss);
    });
  });
}

// out_j += Σ_i w_ji v_i over the rows of one block (at most kAccumRows, still
// in L1), in tiles of G heads x C chunks of 8 dims (G * C = 8 accumulators):
// each V chunk is loaded and converted once per row and used by its G heads.
template <class L, int G, int C>
void accum_tile(const float* w, int64_t ws, const uint8_t* v, int64_t rbv, int64_t n, int dv, int d0, float* out) {
  int left[C];
  __m256 acc[G][C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) left[c] = dv - d0 - 8 * c;
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[j][c] = load_q(out + int64_t{j} * dv + d0 + 8 * c, left[c]);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = v + i * rbv;
    if (d0 == 0) prefetch_rows(reinterpret_cast<uintptr_t>(row) + uintptr_t(kPrefetchRows * rbv), rbv, 1);
    __m256 d = _mm256_setzero_ps();  // q8_0: the scale of the chunk's block
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {  // chunks past dv load zeros and are not stored
      __m256 x;
      if constexpr (std::is_same_v<L, Q8>) {
        if (c == 0 || (d0 + 8 * c) % kQ8Block == 0) d = left[c] > 0 ? Q8::scale(row, d0 + 8 * c) : d;
        x = left[c] > 0 ? _mm256_mul_ps(d, Q8::values(row, d0 + 8 * c)) : _mm256_setzero_ps();
      } else {
        x = L::load(row, d0 + 8 * c, left[c]);
      }
#pragma GCC unroll 8
      for (int j = 0; j < G; ++j) acc[j][c] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + j * ws + i), x, acc[j][c]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      float* o = out + int64_t{j} * dv + d0 + 8 * c;
      if (left[c] >= 8)
        _mm256_storeu_ps(o, acc[j][c]);
      else if (left[c] > 0)
        _mm256_maskstore_ps(o, lane_mask(left[c]), acc[j][c]);
    }
}

template <class L>
void accum(const float* w, int64_t ws, int g, const uint8_t* v, int64_t rbv, int64_t n, int dv, float* out) {
  for (int64_t i0 = 0; i0 < n; i0 += kAccumRows) {
    const int64_t nb = std::min(n - i0, kAccumRows);
    const float* wb = w + i0;
    const uint8_t* vb = v + i0 * rbv;
    int j = 0;
    for (; j + 8 <= g; j += 8)
      for (int d0 = 0; d0 < dv; d0 += 8) accum_tile<L, 8, 1>(wb + j * ws, ws, vb, rbv, nb, dv, d0, out + int64_t{j} * dv);
    for (; j + 4 <= g; j += 4)
      for (int d0 = 0; d0 < dv; d0 += 16) accum_tile<L, 4, 2>(wb + j * ws, ws, vb, rbv, nb, dv, d0, out + int64_t{j} * dv);
    for (; j + 2 <= g; j += 2)
      for (int d0 = 0; d0 < dv; d0 += 32) accum_tile<L, 2, 4>(wb + j * ws, ws, vb, rbv, nb, dv, d0, out + int64_t{j} * dv);
    for (; j < g; ++j)
      for (int d0 = 0; d0 < dv; d0 += 64) accum_tile<L, 1, 8>(wb + j * ws, ws, vb, rbv, nb, dv, d0, out + int64_t{j} * dv);
  }
}

// exp(y) for y <= 0 (x - max): 2^k · p(r), r = y − k·ln2 in [−ln2/2, ln2/2],
// degree-6 Taylor; y below −87 is taken as −87 (2^−126 stays normal).
inline __m256 exp8(__m256 y) {
  y = _mm256_min_ps(_mm256_max_ps(y, _mm256_set1_ps(-87.f)), _mm256_set1_ps(88.f));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(y, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693145752f), y);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.42860677e-6f), r);
  __m256 p = _mm256_set1_ps(1.f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline float hsum(__m256 v) {
  const __m256 z = _mm256_setzero_ps();
  const __m256 all[8] = {v, z, z, z, z, z, z, z};
  return _mm256_cvtss_f32(hsum8x8(all));
}

float exp_sum(float* x, int64_t n, float mx) {
  __m256 sum = _mm256_setzero_ps();
  const __m256 vmx = _mm256_set1_ps(mx);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < n) {
    const __m256i m = lane_mask(int(n - i));
    const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), vmx)), _mm256_castsi256_ps(m));
    _mm256_maskstore_ps(x + i, m, e);
    sum = _mm256_add_ps(sum, e);
  }
  return hsum(sum);
}

// Four independent running maxima of 8 lanes.
float max_of(const float* x, int64_t n) {
  const __m256 first = _mm256_set1_ps(x[0]);
  __m256 m[4] = {first, first, first, first};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) m[t] = _mm256_max_ps(m[t], _mm256_loadu_ps(x + i + 8 * t));
  for (; i + 8 <= n; i += 8) m[0] = _mm256_max_ps(m[0], _mm256_loadu_ps(x + i));
  if (i < n) {  // lanes past n keep their maximum
    const __m256i k = lane_mask(int(n - i));
    m[1] = _mm256_blendv_ps(m[1], _mm256_max_ps(m[1], _mm256_maskload_ps(x + i, k)), _mm256_castsi256_ps(k));
  }
  __m256 a = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

const AttendKernels kF32{scores<F32>, scores_blocked<F32>, accum<F32>, exp_sum, max_of};
const AttendKernels kF16{scores<F16>, scores_blocked<F16>, accum<F16>, exp_sum, max_of};
const AttendKernels kBF16{scores<BF16>, scores_blocked<BF16>, accum<BF16>, exp_sum, max_of};
const AttendKernels kQ8{scores<Q8>, nullptr, accum<Q8>, exp_sum, max_of};

}  // namespace

void fill_attend(KernelTable& k) {
  k.attend[static_cast<int>(DType::F32)] = kF32;
  k.attend[static_cast<int>(DType::F16)] = kF16;
  k.attend[static_cast<int>(DType::BF16)] = kBF16;
  k.attend[static_cast<int>(DType::Q8_0)] = kQ8;
}

}  // namespace og::kernels::avx2
