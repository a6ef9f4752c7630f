// The dot-product table's kernels (ARMv8.2 FEAT_DotProd, sdot; compiled with
// -march=armv8.2-a+dotprod by src/kernels/isa.cmake, run only when HWCAP
// says the CPU has it): the int8 matmuls of 13 weight types over activations
// quantized once per matmul to int8 blocks of 32 (q8_blocks_arm.inc), and
// the layouts Q8_0, Q4_0, IQ4_NL, MXFP4, Q4_K and Q6_K are repacked to at load
// (q8_groups_arm.inc: 8 or 16 rows interleaved, one row per sdot lane), and
// Q5_K's regrouped blocks (matmul_q5k_dotprod.cpp). The table
// starts from the baseline NEON one (matmul_neon.cpp), which keeps every
// other weight type.
#include "kernels/arm/q8_blocks_arm.inc"
#include "kernels/arm/q8_groups_arm.inc"
#include "kernels/arm/probes_arm.h"

namespace og::kernels {
namespace q8arm {
namespace {

// One step's 4 activation levels (lane k of x) times 4 rows' levels.
#define OG_SDOT4(acc, lo, x, k) acc = vdotq_laneq_s32(acc, lo, x, k)

// A group of 8 weight rows (layout L, nb blocks) by N activation rows from
// i0: each block's levels and scales are read once for the N rows; output
// lanes are rows r..r+7 of each activation row.
template <class L, int N>
void group_sdot_n(const uint8_t* g, int64_t nb, const void* act, int64_t n_in, int64_t i0, float* y,
                  int64_t n_out, int64_t r) {
  float32x4_t acc[N][2];
  ActRow a[N];
  for (int t = 0; t < N; ++t) {
    acc[t][0] = acc[t][1] = vdupq_n_f32(0);
    a[t] = act_row(act, n_in, i0 + t);
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = g + b * L::kBlockBytes;
    GroupLevels l;
    L::levels(blk, l);
    float32x4_t d[2];
    L::scales(blk, d);
    for (int t = 0; t < N; ++t) {
      const int8x16_t x0 = vld1q_s8(a[t].q + 32 * b), x1 = vld1q_s8(a[t].q + 32 * b + 16);
      int32x4_t s0 = vdupq_n_s32(0), s1 = vdupq_n_s32(0);
      OG_SDOT4(s0, l.lo[0], x0, 0), OG_SDOT4(s0, l.lo[1], x0, 1), OG_SDOT4(s0, l.lo[2], x0, 2);
      OG_SDOT4(s0, l.lo[3], x0, 3), OG_SDOT4(s0, l.lo[4], x1, 0), OG_SDOT4(s0, l.lo[5], x1, 1);
      OG_SDOT4(s0, l.lo[6], x1, 2), OG_SDOT4(s0, l.lo[7], x1, 3);
      OG_SDOT4(s1, l.hi[0], x0, 0), OG_SDOT4(s1, l.hi[1], x0, 1), OG_SDOT4(s1, l.hi[2], x0, 2);
      OG_SDOT4(s1, l.hi[3], x0, 3), OG_SDOT4(s1, l.hi[4], x1, 0), OG_SDOT4(s1, l.hi[5], x1, 1);
      OG_SDOT4(s1, l.hi[6], x1, 2), OG_SDOT4(s1, l.hi[7], x1, 3);
      // fold(): fma(d_w·d_x, Σ, acc) per lane, as the plain kernels do.
      const float dx = a[t].dx(b);
      acc[t][0] = vfmaq_f32(acc[t][0], vmulq_n_f32(d[0], dx), vcvtq_f32_s32(s0));
      acc[t][1] = vfmaq_f32(acc[t][1], vmulq_n_f32(d[1], dx), vcvtq_f32_s32(s1));
    }
  }
  for (int t = 0; t < N; ++t) {
    vst1q_f32(y + (i0 + t) * n_out + r, acc[t][0]);
    vst1q_f32(y + (i0 + t) * n_out + r + 4, acc[t][1]);
  }
}
#undef OG_SDOT4

// Q4_K_R16: a group of 16 rows by N activation rows; sub-block l of every
// super-block is activation block 8·sb + l. Per lane, fold() of Q4_KT: the
// levels' sum by d·sc, then the activation block's sum by −dmin·m.
template <int N>
void group_q4k_sdot_n(const uint8_t* g, int64_t n_super, const void* act, int64_t n_in, int64_t i0, float* y,
                      int64_t n_out, int64_t r) {
  float32x4_t acc[N][4];
  ActRow a[N];
  for (int t = 0; t < N; ++t) {
    for (float32x4_t& v : acc[t]) v = vdupq_n_f32(0);
    a[t] = act_row(act, n_in, i0 + t);
  }
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = g + sb * Q4_KR16::kBlockBytes;
    Q4_KR16::Scales sc;
    Q4_KR16::scales(p, sc);
    for (int l = 0; l < 8; ++l) {
      const int64_t blk = 8 * sb + l;
      int8x16_t lo[4][4], hi[4][4];
      Q4_KR16::levels(p, l, lo, hi);
      for (int t = 0; t < N; ++t) {
        const int8x16_t x0 = vld1q_s8(a[t].q + 32 * blk), x1 = vld1q_s8(a[t].q + 32 * blk + 16);
        const float dx = a[t].dx(blk);
        const float32x4_t msum = vdupq_n_f32(static_cast<float>(a[t].sum32(blk)));
        for (int q = 0; q < 4; ++q) {
          int32x4_t s = vdupq_n_s32(0);
          s = vdotq_laneq_s32(s, lo[0][q], x0, 0), s = vdotq_laneq_s32(s, lo[1][q], x0, 1);
          s = vdotq_laneq_s32(s, lo[2][q], x0, 2), s = vdotq_laneq_s32(s, lo[3][q], x0, 3);
          s = vdotq_laneq_s32(s, hi[0][q], x1, 0), s = vdotq_laneq_s32(s, hi[1][q], x1, 1);
          s = vdotq_laneq_s32(s, hi[2][q], x1, 2), s = vdotq_laneq_s32(s, hi[3][q], x1, 3);
          acc[t][q] = vfmaq_f32(acc[t][q], vmulq_n_f32(vld1q_f32(sc.dsc[l] + 4 * q), dx), vcvtq_f32_s32(s));
          acc[t][q] = vfmaq_f32(acc[t][q], vmulq_n_f32(vld1q_f32(sc.dm[l] + 4 * q), dx), msum);
        }
      }
    }
  }
  for (int t = 0; t < N; ++t)
    for (int q = 0; q < 4; ++q) vst1q_f32(y + (i0 + t) * n_out + r + 4 * q, acc[t][q]);
}

// Q6_K_R16: a group of 16 rows by N activation rows; chunk c of every
// super-block is activation block 8·sb + c. Per lane, Q6_KT's fold: the two
// halves' sums by their int8 scales (exact in int32), then by d·d_x.
template <int N>
void group_q6k_sdot_n(const uint8_t* g, int64_t n_super, const void* act, int64_t n_in, int64_t i0, float* y,
                      int64_t n_out, int64_t r) {
  float32x4_t acc[N][4];
  ActRow a[N];
  for (int t = 0; t < N; ++t) {
    for (float32x4_t& v : acc[t]) v = vdupq_n_f32(0);
    a[t] = act_row(act, n_in, i0 + t);
  }
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = g + sb * Q6_KR16::kBlockBytes;
    float32x4_t d[4];
    Q6_KR16::scales(p, d);
    for (int c = 0; c < 8; ++c) {
      const int64_t blk = 8 * sb + c;
      int8x16_t lo[4][4], hi[4][4];
      Q6_KR16::levels(p, c, lo, hi);
      int32x4_t sc_lo[4], sc_hi[4];
      for (int q = 0; q < 4; ++q) sc_lo[q] = Q6_KR16::scale(p, 2 * c, q), sc_hi[q] = Q6_KR16::scale(p, 2 * c + 1, q);
      for (int t = 0; t < N; ++t) {
        const int8x16_t x0 = vld1q_s8(a[t].q + 32 * blk), x1 = vld1q_s8(a[t].q + 32 * blk + 16);
        const float dx = a[t].dx(blk);
        for (int q = 0; q < 4; ++q) {
          int32x4_t sl = vdupq_n_s32(0), sh = vdupq_n_s32(0);
          sl = vdotq_laneq_s32(sl, lo[0][q], x0, 0), sl = vdotq_laneq_s32(sl, lo[1][q], x0, 1);
          sl = vdotq_laneq_s32(sl, lo[2][q], x0, 2), sl = vdotq_laneq_s32(sl, lo[3][q], x0, 3);
          sh = vdotq_laneq_s32(sh, hi[0][q], x1, 0), sh = vdotq_laneq_s32(sh, hi[1][q], x1, 1);
          sh = vdotq_laneq_s32(sh, hi[2][q], x1, 2), sh = vdotq_laneq_s32(sh, hi[3][q], x1, 3);
          const int32x4_t tot = vmlaq_s32(vmulq_s32(sc_lo[q], sl), sc_hi[q], sh);
          acc[t][q] = vfmaq_f32(acc[t][q], vmulq_n_f32(d[q], dx), vcvtq_f32_s32(tot));
        }
      }
    }
  }
  for (int t = 0; t < N; ++t)
    for (int q = 0; q < 4; ++q) vst1q_f32(y + (i0 + t) * n_out + r + 4 * q, acc[t][q]);
}

template <class L, int N>
void group_n(const uint8_t* g, const void* act, int64_t n_in, int64_t i0, float* y, int64_t n_out, int64_t r) {
  if constexpr (std::is_same_v<L, Q4_KR16>) {
    group_q4k_sdot_n<N>(g, n_in / 256, act, n_in, i0, y, n_out, r);
  } else if constexpr (std::is_same_v<L, Q6_KR16>) {
    group_q6k_sdot_n<N>(g, n_in / 256, act, n_in, i0, y, n_out, r);
  } else {
    group_sdot_n<L, N>(g, n_in / 32, act, n_in, i0, y, n_out, r);
  }
}

template <class L>
void group_sdot(const uint8_t* g, const void* act, int64_t n_in, int64_t n_x, float* y, int64_t n_out, int64_t r) {
  int64_t i = 0;
  for (; i + 4 <= n_x; i += 4) group_n<L, 4>(g, act, n_in, i, y, n_out, r);
  switch (n_x - i) {
    case 3: group_n<L, 3>(g, act, n_in, i, y, n_out, r); break;
    case 2: group_n<L, 2>(g, act, n_in, i, y, n_out, r); break;
    case 1: group_n<L, 1>(g, act, n_in, i, y, n_out, r); break;
    default: break;
  }
}

template <class L>
void rows_grouped_sdot(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float*,
                  const void* act, int64_t n_x, float* y, int64_t n_out) {
  rows_grouped<L>(w, row_bytes, n_in, r0, r1, act, n_x, y, n_out, &group_sdot<L>, &rows_sdot<typename L::Plain>);
}

}  // namespace
}  // namespace q8arm

void register_dotprod_q5k(KernelTable& k);  // matmul_q5k_dotprod.cpp: Q5_K -> Q5_K_R

void register_dotprod(KernelTable& k) {
  auto set = [&k](DType t, auto rows) { k.matmul[static_cast<int>(t)] = MatmulImpl{&q8arm::act_bytes, &q8arm::prepare, rows, 1}; };
  set(DType::Q8_0, &q8arm::rows_sdot<q8arm::Q8_0T>);
  set(DType::Q4_0, &q8arm::rows_sdot<q8arm::Q4_0T>);
  set(DType::Q4_K, &q8arm::rows_sdot<q8arm::Q4_KT>);
  set(DType::Q6_K, &q8arm::rows_sdot<q8arm::Q6_KT>);
  set(DType::Q4_1, &q8arm::rows_sdot<q8arm::Q4_1T>);
  set(DType::Q5_0, &q8arm::rows_sdot<q8arm::Q5_0T>);
  set(DType::Q5_1, &q8arm::rows_sdot<q8arm::Q5_1T>);
  set(DType::Q5_K, &q8arm::rows_sdot<q8arm::Q5_KT>);
  set(DType::IQ4_NL, &q8arm::rows_sdot<q8arm::IQ4_NLT>);
  set(DType::IQ4_XS, &q8arm::rows_sdot<q8arm::IQ4_XST>);
  set(DType::MXFP4, &q8arm::rows_sdot<q8arm::MXFP4T>);
  set(DType::Q2_K, &q8arm::rows_sdot<q8arm::Q2_KT>);
  set(DType::Q3_K, &q8arm::rows_sdot<q8arm::Q3_KT>);
  // The interleaved layouts, repacked at load (ops.h matmul_layout); the
  // i8mm table starts from this one, so it repacks the same way.
  auto grouped = [&k](DType file, DType layout, auto rows, int64_t group_rows) {
    k.matmul[static_cast<int>(layout)] = MatmulImpl{&q8arm::act_bytes, &q8arm::prepare, rows, group_rows};
    k.repack_to[static_cast<int>(file)] = static_cast<int>(layout);
  };
  grouped(DType::Q8_0, DType::Q8_0_R, &q8arm::rows_grouped_sdot<q8arm::Q8_0R>, 8);
  grouped(DType::Q4_0, DType::Q4_0_R, &q8arm::rows_grouped_sdot<q8arm::Q4_0R>, 8);
  grouped(DType::IQ4_NL, DType::IQ4_NL_R, &q8arm::rows_grouped_sdot<q8arm::IQ4_NLR>, 8);
  grouped(DType::MXFP4, DType::MXFP4_R, &q8arm::rows_grouped_sdot<q8arm::MXFP4R>, 8);
  grouped(DType::Q4_K, DType::Q4_K_R16, &q8arm::rows_grouped_sdot<q8arm::Q4_KR16>, 16);
  grouped(DType::Q6_K, DType::Q6_K_R16, &q8arm::rows_grouped_sdot<q8arm::Q6_KR16>, 16);
  register_dotprod_q5k(k);
  k.madd_loop = [](bool int8, int64_t iters) -> int64_t {  // int8: sdot, 16 products per instruction
    if (!int8) return arm_probe::f32_fma_loop(iters);
    const int8x16_t b = vdupq_n_s8(3), c = vdupq_n_s8(-2);
    return arm_probe::chains(vdupq_n_s32(0), iters, 16, [&](int32x4_t v) { return vdotq_s32(v, b, c); });
  };
}

}  // namespace og::kernels
