// AVX-512 attention kernels for the K/V storage dtypes (compiled with
// -mavx512*, registered in the AVX-512 kernel table). Same contract as the
// scalar kernels in ref/attend_ref.cpp: K/V rows are read in their storage
// dtype, q8_0 block by block (the last block of a row zero-padded).
// GCC 12's AVX-512 headers build some intrinsics from _mm512_undefined_*(),
// which -Wuninitialized reports at every use: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__  // clang has no such warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <type_traits>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/x86/attend_dispatch.h"

namespace og::kernels::avx512 {
namespace {

using x86::for_head_groups;
using x86::with_head_dim;

constexpr int kQ8Block = 32;                 // values per q8_0 block
constexpr int kQ8BlockBytes = 2 + kQ8Block;  // f16 scale + int8 values
// Rows accum() keeps one set of accumulators over before storing them (the
// driver in kv/ folds blocks of this many rows, still in L1).
constexpr int64_t kAccumRows = 64;

inline __mmask16 tail_mask(int left) { return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1); }

struct F32 {
  static __m512 load(const uint8_t* row, int e, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + e);
  }
};
struct F16 {
  static __m512 load(const uint8_t* row, int e, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * e));
  }
};
struct BF16 {
  static __m512 load(const uint8_t* row, int e, __mmask16 m) {
    __m512i x = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, row + 2 * e));
    return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  }
};
// q8_0: element e of a row (16 of them, within one block) without the scale.
struct Q8 {
  static __m512 load(const uint8_t* row, int e, __mmask16 m) {
    const uint8_t* blk = row + (e / kQ8Block) * kQ8BlockBytes + 2 + (e % kQ8Block);
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, blk)));
  }
  static float scale(const uint8_t* row, int e) {
    uint16_t h;
    std::memcpy(&h, row + (e / kQ8Block) * kQ8BlockBytes, 2);
    return _cvtsh_ss(h);
  }
};

// Sums of the 16 lanes of a, b, c, d, in that order.
inline __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  __m512 t0 = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  __m512 t1 = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  __m512 s = _mm512_add_ps(_mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(t0, t1, _MM_SHUFFLE(3, 2, 3, 2)));
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// s[j * s_stride + r] = scale * Σ acc[r][j], four reductions at a time.
template <int R, int G>
inline void store_scores(__m512 (&acc)[R][G], float scale, float* s, int64_t s_stride) {
  constexpr int N = R * G;
  __m512* a = &acc[0][0];
  int i = 0;
#pragma GCC unroll 16
  for (; i + 4 <= N; i += 4) {
    alignas(16) float r4[4];
    _mm_store_ps(r4, _mm_mul_ps(hsum4(a[i], a[i + 1], a[i + 2], a[i + 3]), _mm_set1_ps(scale)));
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) s[((i + t) % G) * s_stride + (i + t) / G] = r4[t];
  }
  if (i < N) {  // the last 1-3 through the same reduction tree: a score never depends on its neighbours
    const __m512 z = _mm512_setzero_ps();
    alignas(16) float r4[4];
    _mm_store_ps(r4, _mm_mul_ps(hsum4(a[i], i + 1 < N ? a[i + 1] : z, i + 2 < N ? a[i + 2] : z, z),
                                _mm_set1_ps(scale)));
    for (int t = 0; i + t < N; ++t) s[((i + t) % G) * s_stride + (i + t) / G] = r4[t];
  }
}

// Lane p of the result = the sum of the 16 lanes of v[p], for 16 vectors at
// once (a transposing tree: 15 adds and 30 shuffles for 16 sums, where
// hsum4 takes 13 operations for 4 and then stores each sum alone). Every sum
// goes through hsum4's tree — pairs (x0+x2)+(x1+x3) within each 128-bit
// block, then blocks (B0+B2)+(B1+B3) — so both give the same bits.
inline __m512 hsum16(const __m512 (&v)[16]) {
  __m512 t[8], u[4], w[2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i)
    t[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)  // u[i]: block b, lane c = block b's part of the sum of v[4i + c]
    u[i] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * i], t[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(t[2 * i], t[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)  // w[i] blocks: u[2i] B0+B2, B1+B3, then u[2i+1]'s
    w[i] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// s[j * s_stride + r] = scale * Σ v[j * R + r] for the R x G scores of a tile
// (R * G <= 16; v[p] for p >= R * G are ignored), reduced by hsum16.
template <int R, int G>
inline void store16(const __m512 (&v)[16], float scale, float* s, int64_t s_stride) {
  const __m512 o = _mm512_mul_ps(hsum16(v), _mm512_set1_ps(scale));
  if constexpr (R * G == 16 && R == 16) {
    _mm512_storeu_ps(s, o);
  } else if constexpr (R * G == 16 && R == 8) {
    _mm256_storeu_ps(s, _mm512_castps512_ps256(o));
    _mm256_storeu_ps(s + s_stride, _mm512_extractf32x8_ps(o, 1));
  } else if constexpr (R * G == 16 && R == 4) {
    _mm_storeu_ps(s, _mm512_castps512_ps128(o));
    _mm_storeu_ps(s + s_stride, _mm512_extractf32x4_ps(o, 1));
    _mm_storeu_ps(s + 2 * s_stride, _mm512_extractf32x4_ps(o, 2));
    _mm_storeu_ps(s + 3 * s_stride, _mm512_extractf32x4_ps(o, 3));
  } else if constexpr (R * G == 16 && R == 2) {
    // The lane index of an extract must be a constant (clang checks it
    // before unrolling), so the four quarters are spelled out.
    const auto pair = [&](__m128 x, int b) {
      _mm_storel_pi(reinterpret_cast<__m64*>(s + (2 * b) * s_stride), x);
      _mm_storeh_pi(reinterpret_cast<__m64*>(s + (2 * b + 1) * s_stride), x);
    };
    pair(_mm512_castps512_ps128(o), 0);
    pair(_mm512_extractf32x4_ps(o, 1), 1);
    pair(_mm512_extractf32x4_ps(o, 2), 2);
    pair(_mm512_extractf32x4_ps(o, 3), 3);
  } else {
    alignas(64) float r16[16];
    _mm512_store_ps(r16, o);
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j)
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) s[j * s_stride + r] = r16[j * R + r];
  }
}

// q8_0: each 32-value block of K is converted and multiplied by its scale
// once, then dotted with the G heads' q.
template <int R, int G>
inline void scores_tile_q8(const float* q, int dk, const uint8_t* k, int64_t rbk, float scale, float* s,
                           int64_t s_stride) {
  __m512 acc[R][G];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) acc[r][j] = _mm512_setzero_ps();
  for (int b0 = 0; b0 < dk; b0 += kQ8Block) {
    const __mmask16 m0 = tail_mask(dk - b0), m1 = dk - b0 > 16 ? tail_mask(dk - b0 - 16) : 0;
    __m512 k0[R], k1[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const uint8_t* row = k + r * rbk;
      const __m512 d = _mm512_set1_ps(Q8::scale(row, b0));
      k0[r] = _mm512_mul_ps(d, Q8::load(row, b0, m0));
      k1[r] = _mm512_mul_ps(d, Q8::load(row, b0 + 16, m1));
    }
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) {
      const __m512 q0 = _mm512_maskz_loadu_ps(m0, q + int64_t{j} * dk + b0);
      const __m512 q1 = _mm512_maskz_loadu_ps(m1, q + int64_t{j} * dk + b0 + 16);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][j] = _mm512_fmadd_ps(q1, k1[r], _mm512_fmadd_ps(q0, k0[r], acc[r][j]));
    }
  }
  if constexpr (R * G == 16) {  // same bits as store_scores, 16 at a time
    __m512 v[16];
#pragma GCC unroll 16
    for (int p = 0; p < 16; ++p) v[p] = acc[p % R][p / R];
    store16<R, G>(v, scale, s, s_stride);
  } else {
    store_scores<R, G>(acc, scale, s, s_stride);
  }
}

// How far ahead of use K and V rows are prefetched: into L1 (T0) kNearRows
// ahead and into L2 only (T1) kFarRows ahead. On the Intel Xeon, f16 K/V at
// depth 4096 read from memory (attend_bench, alternately, 3-4 rounds each):
//   T0 at 24 rows:             ~10 GB/s on 1 thread, ~19 on 2
//   T0 at 48:                  ~11.3, ~20
//   T0 at 48 and T1 at 160:    ~13, ~24.5
// (no prefetch: 8 GB/s; T1 at 96 gained less, at 256 or 384 the same as
// 160). 1B Q4_K_M decode at depth 4096 on 2 threads, six pairs alternately,
// T1 added: 28.35 -> 29.08 tok/s, 88.0 -> 90.3 % of the bound (means).
// On the AMD Zen 5 (family 26) the T1 prefetch costs more than it brings,
// so there the table holds the kFarL2 = false kernels, T0 only
// (kernel_table.h X86Tuning::far_l2_prefetch). attend_bench, f16 at depth 4096,
// three rounds alternately: from memory 20.9-21.6 -> 22.4-23.2 GB/s on 1
// thread, 31.7-41.1 -> 35.6-43.4 on 2; 1B Q4_K_M decode at depth 4096 on 2
// threads, four pairs alternately: 45.2-49.0 -> 48.8-50.6 tok/s.
constexpr int kNearRows = 48, kFarRows = 160;

// Asks for rows [i + kNearRows, + n) (with kFarL2 also [i + kFarRows, + n),
// into L2 only) of rb bytes each (row i at address p) ahead of use. A
// prefetch never faults, so rows past the span are harmless; the addresses
// are computed as integers so that no pointer leaves its object.
template <bool kFarL2>
__attribute__((always_inline)) inline void prefetch_rows(uintptr_t p, int64_t rb, int n) {
  const uintptr_t near = p + uintptr_t(kNearRows * rb), far = p + uintptr_t(kFarRows * rb);
  for (int64_t o = 0; o < n * rb; o += 64) _mm_prefetch(reinterpret_cast<const char*>(near + uintptr_t(o)), _MM_HINT_T0);
  if constexpr (kFarL2)
    for (int64_t o = 0; o < n * rb; o += 64) _mm_prefetch(reinterpret_cast<const char*>(far + uintptr_t(o)), _MM_HINT_T1);
}

// R rows x G heads of scores (R * G <= 16 accumulators, acc[j * R + r]) for
// f32/f16/bf16 K, dk = DK (0: the runtime dk, chunks masked). Per chunk of 16
// dims the G q chunks are loaded once and each K chunk is converted once and
// used by the G heads. Each score is the chain of FMAs over its chunks in
// order from zero, then hsum16 and * scale: the same bits as scores_tile, for
// any R, G and position in the tile. Head j's R scores are lanes [j*R, j*R+R).
template <class L, int DK, int R, int G>
inline void scores_tile16(const float* q, int dk_rt, const uint8_t* k, int64_t rbk, float scale, float* s,
                          int64_t s_stride) {
  static_assert(R * G <= 16);
  const int dk = DK > 0 ? DK : dk_rt;
  __m512 acc[16];
#pragma GCC unroll 16
  for (int p = 0; p < 16; ++p) acc[p] = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int e = 0; e < dk; e += 16) {
    const __mmask16 m = DK > 0 && DK % 16 == 0 ? __mmask16(0xffff) : tail_mask(dk - e);
    __m512 qv[G];
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) qv[j] = _mm512_maskz_loadu_ps(m, q + int64_t{j} * dk + e);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 kv = L::load(k + r * rbk, e, m);
#pragma GCC unroll 8
      for (int j = 0; j < G; ++j) acc[j * R + r] = _mm512_fmadd_ps(qv[j], kv, acc[j * R + r]);
    }
  }
  store16<R, G>(acc, scale, s, s_stride);
}

// n rows, G heads: tiles of 16 / G rows, then the last rows one at a time.
template <class L, int DK, int G, bool kFarL2>
void scores_heads16(const float* q, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
                    int64_t ss) {
  constexpr int R = 16 / G;
  int64_t i = 0;
  for (; i + R <= n; i += R) {
    prefetch_rows<kFarL2>(reinterpret_cast<uintptr_t>(k) + uintptr_t(i * rbk), rbk, R);
    scores_tile16<L, DK, R, G>(q, dk, k + i * rbk, rbk, scale, s + i, ss);
  }
  for (; i < n; ++i) scores_tile16<L, DK, 1, G>(q, dk, k + i * rbk, rbk, scale, s + i, ss);
}

// q8_0: rows in groups of R (4 for 1-4 heads, 2 for 8), heads in groups of 8/4/2/1.
template <int G, bool kFarL2>
void scores_heads_q8(const float* q, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
                     int64_t ss) {
  constexpr int R = G <= 4 ? 4 : 2;
  int64_t i = 0;
  for (; i + R <= n; i += R) {
    prefetch_rows<kFarL2>(reinterpret_cast<uintptr_t>(k) + uintptr_t(i * rbk), rbk, R);
    scores_tile_q8<R, G>(q, dk, k + i * rbk, rbk, scale, s + i, ss);
  }
  for (; i < n; ++i) scores_tile_q8<1, G>(q, dk, k + i * rbk, rbk, scale, s + i, ss);
}

// Head dims 64 and 128 (most models) get tiles compiled for them; every dk
// gives the same bits through either (the chunks and the tree are the same).
template <class L, bool kFarL2>
void scores(const float* q, int g, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
            int64_t ss) {
  if constexpr (std::is_same_v<L, Q8>) {
    for_head_groups<8, 4, 2, 1>(g, [&]<int G>(int j) {
      scores_heads_q8<G, kFarL2>(q + int64_t{j} * dk, dk, k, rbk, n, scale, s + j * ss, ss);
    });
  } else {
    with_head_dim(dk, [&]<int DK>() {
      for_head_groups<8, 4, 2, 1>(g, [&]<int G>(int j) {
        scores_heads16<L, DK, G, kFarL2>(q + int64_t{j} * dk, dk, k, rbk, n, scale, s + j * ss, ss);
      });
    });
  }
}

// ---- K in blocks of kKeyBlock = 16 keys (ops.h scores_blocked) ----
// Dim e of a block is one vector of 16 keys, so each lane is one key's score
// and no horizontal sum is needed: per key and KV head of a 4-query group
// this takes 4 conversions and 16 FMAs where the row tiles add ~11 shuffles
// and adds of hsum16 (1B f16 K at depth 4096, in cache: 7.9 -> ~5.1 ns per
// key and KV head).

// 16 values from element e of a row, unmasked (a whole block's lanes).
template <class L>
inline __m512 load_all(const uint8_t* row, int e) {
  if constexpr (std::is_same_v<L, F32>) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + e);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * e));
    if constexpr (std::is_same_v<L, F16>) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

// The G heads' scores of the lanes in m of one block (s: lane 0's score of
// head 0, head j at s + j * ss; only lanes in m are read and stored). Each
// score is two chains of FMAs from zero, over the even and the odd dims in
// order, added, then * scale: the same bits whatever G, m or the block.
template <class L, int DK, int G, bool kFull>
inline void block_tile(const float* q, int dk_rt, const uint8_t* kb, __mmask16 m, float scale, float* s,
                       int64_t ss) {
  const int dk = DK > 0 ? DK : dk_rt;
  const auto load = [&](int e) { return kFull ? load_all<L>(kb, e * kKeyBlock) : L::load(kb, e * kKeyBlock, m); };
  __m512 a0[G], a1[G];
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j) a0[j] = a1[j] = _mm512_setzero_ps();
  int e = 0;
#pragma GCC unroll 4
  for (; e + 2 <= dk; e += 2) {
    const __m512 k0 = load(e), k1 = load(e + 1);
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) {
      a0[j] = _mm512_fmadd_ps(_mm512_set1_ps(q[int64_t{j} * dk + e]), k0, a0[j]);
      a1[j] = _mm512_fmadd_ps(_mm512_set1_ps(q[int64_t{j} * dk + e + 1]), k1, a1[j]);
    }
  }
  if (e < dk) {
    const __m512 k0 = load(e);
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) a0[j] = _mm512_fmadd_ps(_mm512_set1_ps(q[int64_t{j} * dk + e]), k0, a0[j]);
  }
  const __m512 vs = _mm512_set1_ps(scale);
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j) {
    const __m512 o = _mm512_mul_ps(_mm512_add_ps(a0[j], a1[j]), vs);
    if constexpr (kFull) _mm512_storeu_ps(s + j * ss, o);
    else _mm512_mask_storeu_ps(s + j * ss, m, o);
  }
}

// Two whole blocks at once (kb and kb + bb, 32 keys), G <= 4 heads: each
// score the same two chains as block_tile's, so the same bits. One block has
// 2·G chains of dk/2 dependent FMAs, about as many as the two FMA pipes need
// in flight, so a lone block waits on its chains; two blocks interleaved have
// twice the chains. bench_attend_bench, f16 at depth 4096, scores alone in
// cache, three rounds alternately: 3.54-3.56 -> 2.95-3.36 ns per position and
// KV head.
template <class L, int DK, int G>
inline void block_tile2(const float* q, int dk_rt, const uint8_t* kb, int64_t bb, float scale, float* s,
                        int64_t ss) {
  static_assert(G <= 4);
  const int dk = DK > 0 ? DK : dk_rt;
  const uint8_t* kc = kb + bb;
  __m512 a0[G], a1[G], c0[G], c1[G];
#pragma GCC unroll 4
  for (int j = 0; j < G; ++j) a0[j] = a1[j] = c0[j] = c1[j] = _mm512_setzero_ps();
  int e = 0;
#pragma GCC unroll 2
  for (; e + 2 <= dk; e += 2) {
    const __m512 k0 = load_all<L>(kb, e * kKeyBlock), k1 = load_all<L>(kb, (e + 1) * kKeyBlock);
    const __m512 m0 = load_all<L>(kc, e * kKeyBlock), m1 = load_all<L>(kc, (e + 1) * kKeyBlock);
#pragma GCC unroll 4
    for (int j = 0; j < G; ++j) {
      const __m512 qe = _mm512_set1_ps(q[int64_t{j} * dk + e]), qo = _mm512_set1_ps(q[int64_t{j} * dk + e + 1]);
      a0[j] = _mm512_fmadd_ps(qe, k0, a0[j]);
      a1[j] = _mm512_fmadd_ps(qo, k1, a1[j]);
      c0[j] = _mm512_fmadd_ps(qe, m0, c0[j]);
      c1[j] = _mm512_fmadd_ps(qo, m1, c1[j]);
    }
  }
  if (e < dk) {
    const __m512 k0 = load_all<L>(kb, e * kKeyBlock), m0 = load_all<L>(kc, e * kKeyBlock);
#pragma GCC unroll 4
    for (int j = 0; j < G; ++j) {
      const __m512 qe = _mm512_set1_ps(q[int64_t{j} * dk + e]);
      a0[j] = _mm512_fmadd_ps(qe, k0, a0[j]);
      c0[j] = _mm512_fmadd_ps(qe, m0, c0[j]);
    }
  }
  const __m512 vs = _mm512_set1_ps(scale);
#pragma GCC unroll 4
  for (int j = 0; j < G; ++j) {
    _mm512_storeu_ps(s + j * ss, _mm512_mul_ps(_mm512_add_ps(a0[j], a1[j]), vs));
    _mm512_storeu_ps(s + j * ss + kKeyBlock, _mm512_mul_ps(_mm512_add_ps(c0[j], c1[j]), vs));
  }
}

// Block bytes of dk values of kKeyBlock keys stored as L.
template <class L>
constexpr int64_t block_bytes(int dk) {
  return int64_t{dk} * kKeyBlock * (std::is_same_v<L, F32> ? 4 : 2);
}

// n keys from lane `lane` of block kb, G heads: a partial first block, whole
// blocks (pairs of them for G <= 4; prefetched as the row tiles prefetch
// rows), a partial last block.
template <class L, int DK, int G, bool kFarL2>
void blocked_heads(const float* q, int dk, const uint8_t* kb, int lane, int64_t n, float scale, float* s,
                   int64_t ss) {
  const int64_t bb = block_bytes<L>(dk);
  int64_t i = 0;
  if (lane > 0) {  // the first block's lanes [lane, min(16, lane + n)), packed to s[0..)
    const int64_t take = std::min<int64_t>(n, kKeyBlock - lane);
    const __mmask16 m = __mmask16(((1u << take) - 1) << lane);
    alignas(64) float t[G][kKeyBlock];
    block_tile<L, DK, G, false>(q, dk, kb, m, scale, &t[0][0], kKeyBlock);
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) std::memcpy(s + j * ss, &t[j][lane], size_t(take) * sizeof(float));
    i = take;
    kb += bb;
  }
  if constexpr (G <= 4) {
    for (; i + 2 * kKeyBlock <= n; i += 2 * kKeyBlock, kb += 2 * bb) {
      prefetch_rows<kFarL2>(reinterpret_cast<uintptr_t>(kb), bb / kKeyBlock, 2 * kKeyBlock);
      block_tile2<L, DK, G>(q, dk, kb, bb, scale, s + i, ss);
    }
  }
  for (; i + kKeyBlock <= n; i += kKeyBlock, kb += bb) {
    prefetch_rows<kFarL2>(reinterpret_cast<uintptr_t>(kb), bb / kKeyBlock, kKeyBlock);
    block_tile<L, DK, G, true>(q, dk, kb, 0xffff, scale, s + i, ss);
  }
  if (i < n) block_tile<L, DK, G, false>(q, dk, kb, tail_mask(int(n - i)), scale, s + i, ss);
}

template <class L, bool kFarL2>
void scores_blocked(const float* q, int g, int dk, const uint8_t* kb, int lane, int64_t n, float scale, float* s,
                    int64_t ss) {
  with_head_dim(dk, [&]<int DK>() {
    for_head_groups<8, 4, 2, 1>(g, [&]<int G>(int j) {
      blocked_heads<L, DK, G, kFarL2>(q + int64_t{j} * dk, dk, kb, lane, n, scale, s + j * ss, ss);
    });
  });
}

// out_j += Σ_i w_ji v_i over the rows of one block (at most kAccumRows, still
// in L1), in tiles of G heads x C chunks of 16 dims: each V chunk is loaded and
// converted once per tile and used by its G heads; the G*C accumulators stay
// in registers over the rows. kFull: all C chunks lie within dv, so each is
// one unmasked load that the conversion takes as its memory operand
// (vcvtph2ps zmm, m256: one vector uop where a masked load into a register
// and the register form cost two; the same values, so the same bits).
template <class L, int G, int C, bool kFarL2, bool kFull = false>
void accum_tile(const float* w, int64_t ws, const uint8_t* v, int64_t rbv, int64_t n, int dv, int d0, float* out) {
  __mmask16 masks[C];
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) masks[c] = d0 + 16 * c < dv ? tail_mask(dv - d0 - 16 * c) : 0;
  __m512 acc[G][C];
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[j][c] = _mm512_maskz_loadu_ps(masks[c], out + int64_t{j} * dv + d0 + 16 * c);
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = v + i * rbv;
    if (d0 == 0) prefetch_rows<kFarL2>(reinterpret_cast<uintptr_t>(row), rbv, 1);
    __m512 wv[G];
#pragma GCC unroll 8
    for (int j = 0; j < G; ++j) wv[j] = _mm512_set1_ps(w[j * ws + i]);
    __m512 d = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {  // chunks past dv have mask 0: they load and add zeros
      __m512 x;
      if constexpr (std::is_same_v<L, Q8>) {
        // d0 is a multiple of 32: chunks 2b and 2b+1 share block b's scale, read only
        // when the block lies within the head dim (mask of its first chunk non-zero).
        if (c % 2 == 0) d = masks[c] != 0 ? _mm512_set1_ps(Q8::scale(row, d0 + 16 * c)) : _mm512_setzero_ps();
        x = _mm512_mul_ps(d, Q8::load(row, d0 + 16 * c, masks[c]));
      } else if constexpr (kFull) {
        x = load_all<L>(row, d0 + 16 * c);
      } else {
        x = L::load(row, d0 + 16 * c, masks[c]);
      }
#pragma GCC unroll 8
      for (int j = 0; j < G; ++j) acc[j][c] = _mm512_fmadd_ps(wv[j], x, acc[j][c]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < G; ++j)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) _mm512_mask_storeu_ps(out + int64_t{j} * dv + d0 + 16 * c, masks[c], acc[j][c]);
}

// One group of G heads over the whole head dim, in tiles of C chunks of 16
// dims: the tiles that lie wholly within dv take the unmasked path (not q8_0,
// whose loads carry their block scales).
template <class L, int G, int C, bool kFarL2>
void accum_heads(const float* w, int64_t ws, const uint8_t* v, int64_t rbv, int64_t n, int dv, float* out) {
  for (int d0 = 0; d0 < dv; d0 += 16 * C) {
    if constexpr (!std::is_same_v<L, Q8>) {
      if (d0 + 16 * C <= dv) {
        accum_tile<L, G, C, kFarL2, true>(w, ws, v, rbv, n, dv, d0, out);
        continue;
      }
    }
    accum_tile<L, G, C, kFarL2>(w, ws, v, rbv, n, dv, d0, out);
  }
}

template <class L, bool kFarL2>
void accum(const float* w, int64_t ws, int g, const uint8_t* v, int64_t rbv, int64_t n, int dv, float* out) {
  for (int64_t i0 = 0; i0 < n; i0 += kAccumRows) {
    const int64_t nb = std::min(n - i0, kAccumRows);
    const float* wb = w + i0;
    const uint8_t* vb = v + i0 * rbv;
    int j = 0;
    for (; j + 8 <= g; j += 8) accum_heads<L, 8, 2, kFarL2>(wb + j * ws, ws, vb, rbv, nb, dv, out + int64_t{j} * dv);
    for (; j + 4 <= g; j += 4) accum_heads<L, 4, 4, kFarL2>(wb + j * ws, ws, vb, rbv, nb, dv, out + int64_t{j} * dv);
    for (; j + 2 <= g; j += 2) accum_heads<L, 2, 8, kFarL2>(wb + j * ws, ws, vb, rbv, nb, dv, out + int64_t{j} * dv);
    for (; j < g; ++j) accum_heads<L, 1, 8, kFarL2>(wb + j * ws, ws, vb, rbv, nb, dv, out + int64_t{j} * dv);
  }
}

// exp(x - mx) for x <= mx: 2^k * p(r), r = y - k ln2 in [-ln2/2, ln2/2], degree-6 Taylor.
inline __m512 exp512(__m512 y) {
  y = _mm512_max_ps(y, _mm512_set1_ps(-87.f));
  __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(y, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693145752f), y);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.42860677e-6f), r);
  __m512 p = _mm512_set1_ps(1.f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, k);
}

float exp_sum(float* x, int64_t n, float mx) {
  __m512 sum = _mm512_setzero_ps(), vmx = _mm512_set1_ps(mx);
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tail_mask(int(std::min<int64_t>(16, n - i)));
    __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vmx));
    _mm512_mask_storeu_ps(x + i, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  return _mm512_reduce_add_ps(sum);
}

// Four independent running maxima of 16 lanes (the serial scalar chain it
// replaces was ~15% of decode attention's time at depth 4096).
float max_of(const float* x, int64_t n) {
  const __m512 first = _mm512_set1_ps(x[0]);
  __m512 m[4] = {first, first, first, first};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) m[t] = _mm512_max_ps(m[t], _mm512_loadu_ps(x + i + 16 * t));
  for (; i < n; i += 16) {  // lanes past n keep their maximum
    const __mmask16 k = tail_mask(int(std::min<int64_t>(16, n - i)));
    m[0] = _mm512_mask_max_ps(m[0], k, m[0], _mm512_maskz_loadu_ps(k, x + i));
  }
  return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
}

// The kernels of one storage type, with or without the far T1 prefetch.
template <class L, bool kFarL2>
AttendKernels kernels_of() {
  if constexpr (std::is_same_v<L, Q8>) return {scores<Q8, kFarL2>, nullptr, accum<Q8, kFarL2>, exp_sum, max_of};
  else return {scores<L, kFarL2>, scores_blocked<L, kFarL2>, accum<L, kFarL2>, exp_sum, max_of};
}

template <bool kFarL2>
void fill_attend_as(KernelTable& k) {
  k.attend[static_cast<int>(DType::F32)] = kernels_of<F32, kFarL2>();
  k.attend[static_cast<int>(DType::F16)] = kernels_of<F16, kFarL2>();
  k.attend[static_cast<int>(DType::BF16)] = kernels_of<BF16, kFarL2>();
  k.attend[static_cast<int>(DType::Q8_0)] = kernels_of<Q8, kFarL2>();
}

}  // namespace

// Both variants compute the same values; the CPU's tuning picks one.
void fill_attend(KernelTable& k, const X86Tuning& tuning) {
  if (tuning.far_l2_prefetch) fill_attend_as<true>(k);
  else fill_attend_as<false>(k);
}

}  // namespace og::kernels::avx512
