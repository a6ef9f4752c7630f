// The int8-matrix table's kernels (FEAT_I8MM, smmla; compiled with
// -march=armv8.2-a+dotprod+i8mm by src/kernels/isa.cmake, run only when
// HWCAP2 says the CPU has it): the dot-product table's int8 matmuls
// (q8_blocks_arm.inc) computed two weight rows by two activation rows at a
// time. smmla multiplies a 2×8 int8 tile by an 8×2 one into 2×2 int32 sums,
// so each weight block is decoded once for two activation rows and each
// activation block loaded once for two weight rows. Its half sums are the
// same integers sdot gives and fold() the same float steps, so the outputs
// equal the dotprod table's bit for bit, and a batch its rows alone (an odd
// row or activation left over takes the sdot path). The interleaved layouts
// (q8_groups_arm.inc) take two steps zipped per pair of rows.
#include "kernels/arm/q8_blocks_arm.inc"
#include "kernels/arm/q8_groups_arm.inc"
#include "kernels/arm/probes_arm.h"

namespace og::kernels {
namespace q8arm {
namespace {

// Weight rows w0, w1 (levels of type T) with activation rows a0, a1: out[0] =
// w0·a0, out[1] = w0·a1, out[2] = w1·a0, out[3] = w1·a1.
template <class T>
void dot_2x2(const uint8_t* w0, const uint8_t* w1, const ActRow& a0, const ActRow& a1, int64_t n_in, float out[4]) {
  float s[4] = {0, 0, 0, 0};
  const int64_t n_super = n_in / (32 * T::kSub);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* b0 = w0 + sb * T::kBytes;
    const uint8_t* b1 = w1 + sb * T::kBytes;
    typename T::Scales sc0, sc1;
    T::scales(b0, sc0);
    T::scales(b1, sc1);
    for (int j = 0; j < T::kSub; ++j) {
      const int64_t blk = sb * T::kSub + j;
      int8x16_t p0, p1, q0, q1;  // row 0's halves, row 1's halves
      T::decode(b0, sc0, j, p0, p1);
      T::decode(b1, sc1, j, q0, q1);
      const int8x16_t x0 = vld1q_s8(a0.q + 32 * blk), x1 = vld1q_s8(a0.q + 32 * blk + 16);
      const int8x16_t y0 = vld1q_s8(a1.q + 32 * blk), y1 = vld1q_s8(a1.q + 32 * blk + 16);
      // smmla's operands: 8 levels of one row, then 8 of the other.
      auto lo64 = [](int8x16_t u, int8x16_t v) {
        return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(u), vreinterpretq_s64_s8(v)));
      };
      auto hi64 = [](int8x16_t u, int8x16_t v) {
        return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(u), vreinterpretq_s64_s8(v)));
      };
      const int32x4_t z = vdupq_n_s32(0);
      const int32x4_t lo = vmmlaq_s32(vmmlaq_s32(z, lo64(p0, q0), lo64(x0, y0)), hi64(p0, q0), hi64(x0, y0));
      const int32x4_t hi = vmmlaq_s32(vmmlaq_s32(z, lo64(p1, q1), lo64(x1, y1)), hi64(p1, q1), hi64(x1, y1));
      s[0] = T::fold(sc0, j, vgetq_lane_s32(lo, 0), vgetq_lane_s32(hi, 0), a0, blk, s[0]);
      s[1] = T::fold(sc0, j, vgetq_lane_s32(lo, 1), vgetq_lane_s32(hi, 1), a1, blk, s[1]);
      s[2] = T::fold(sc1, j, vgetq_lane_s32(lo, 2), vgetq_lane_s32(hi, 2), a0, blk, s[2]);
      s[3] = T::fold(sc1, j, vgetq_lane_s32(lo, 3), vgetq_lane_s32(hi, 3), a1, blk, s[3]);
    }
  }
  for (int k = 0; k < 4; ++k) out[k] = s[k];
}

template <class T>
void rows_mmla(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float*,
               const void* act, int64_t n_x, float* y, int64_t n_out) {
  int64_t r = r0;
  for (; r + 2 <= r1; r += 2) {
    const uint8_t* w0 = w + r * row_bytes;
    const uint8_t* w1 = w0 + row_bytes;
    int64_t i = 0;
    for (; i + 2 <= n_x; i += 2) {
      float out[4];
      dot_2x2<T>(w0, w1, act_row(act, n_in, i), act_row(act, n_in, i + 1), n_in, out);
      y[i * n_out + r] = out[0];
      y[(i + 1) * n_out + r] = out[1];
      y[i * n_out + r + 1] = out[2];
      y[(i + 1) * n_out + r + 1] = out[3];
    }
    for (; i < n_x; ++i) {
      const ActRow a = act_row(act, n_in, i);
      y[i * n_out + r] = dot_row<T>(w0, a, n_in);
      y[i * n_out + r + 1] = dot_row<T>(w1, a, n_in);
    }
  }
  if (r < r1) rows_sdot<T>(w, row_bytes, n_in, r, r1, nullptr, act, n_x, y, n_out);
}

// A group of 8 weight rows (layout L) by activation rows i0 and i1 (i1 == i0
// for an odd last row: each lane depends on its own two rows alone, so the
// pairing changes no bit). Pair p of weight rows (2p, 2p + 1) gives one smmla
// tile per 8 levels: lanes w_2p·a0, w_2p·a1, w_2p+1·a0, w_2p+1·a1.
template <class L>
void group_pair_mmla(const uint8_t* g, int64_t nb, const ActRow& a0, const ActRow& a1, float32x4_t acc[4]) {
  for (int p = 0; p < 4; ++p) acc[p] = vdupq_n_f32(0);
  auto zip = [](int8x16_t u, int8x16_t v, bool second) {  // 4 levels of rows (2q, 2q+1) from steps u, v
    const uint32x4_t a = vreinterpretq_u32_s8(u), b = vreinterpretq_u32_s8(v);
    return vreinterpretq_s8_u32(second ? vzip2q_u32(a, b) : vzip1q_u32(a, b));
  };
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = g + b * L::kBlockBytes;
    GroupLevels l;
    L::levels(blk, l);
    float32x4_t d[2];
    L::scales(blk, d);
    int32x4_t s[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
    for (int c = 0; c < 4; ++c) {  // levels 8c..8c+7: steps 2c, 2c + 1
      const int8x16_t x = vcombine_s8(vld1_s8(a0.q + 32 * b + 8 * c), vld1_s8(a1.q + 32 * b + 8 * c));
      s[0] = vmmlaq_s32(s[0], zip(l.lo[2 * c], l.lo[2 * c + 1], false), x);
      s[1] = vmmlaq_s32(s[1], zip(l.lo[2 * c], l.lo[2 * c + 1], true), x);
      s[2] = vmmlaq_s32(s[2], zip(l.hi[2 * c], l.hi[2 * c + 1], false), x);
      s[3] = vmmlaq_s32(s[3], zip(l.hi[2 * c], l.hi[2 * c + 1], true), x);
    }
    // fold(): fma(d_w·d_x, Σ, acc) per lane, as the plain kernels do.
    const float32x2_t dx2 = {a0.dx(b), a1.dx(b)};
    const float32x4_t dx = vcombine_f32(dx2, dx2);
    for (int p = 0; p < 4; ++p) {
      const float32x4_t dw = p % 2 == 0 ? vzip1q_f32(d[p / 2], d[p / 2]) : vzip2q_f32(d[p / 2], d[p / 2]);
      acc[p] = vfmaq_f32(acc[p], vmulq_f32(dw, dx), vcvtq_f32_s32(s[p]));
    }
  }
}

// Q4_K_R16: a group of 16 rows by activation rows a0, a1; acc[p] as in
// group_pair_mmla for rows (2p, 2p + 1), p = 0..7. Per lane, Q4_KT's fold:
// the levels' sum by d·sc, then the activation block's sum by −dmin·m.
void group_pair_q4k_mmla(const uint8_t* g, int64_t n_super, const ActRow& a0, const ActRow& a1, float32x4_t acc[8]) {
  for (int p = 0; p < 8; ++p) acc[p] = vdupq_n_f32(0);
  auto zip = [](int8x16_t u, int8x16_t v, bool second) {
    const uint32x4_t a = vreinterpretq_u32_s8(u), b = vreinterpretq_u32_s8(v);
    return vreinterpretq_s8_u32(second ? vzip2q_u32(a, b) : vzip1q_u32(a, b));
  };
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = g + sb * Q4_KR16::kBlockBytes;
    Q4_KR16::Scales sc;
    Q4_KR16::scales(p, sc);
    for (int l = 0; l < 8; ++l) {
      const int64_t blk = 8 * sb + l;
      int8x16_t lo[4][4], hi[4][4];
      Q4_KR16::levels(p, l, lo, hi);
      int32x4_t s[8];
      for (int32x4_t& v : s) v = vdupq_n_s32(0);
      for (int c = 0; c < 2; ++c) {  // steps 2c, 2c + 1: elements 8c.. (low nibbles) and 16 + 8c.. (high)
        const int8x16_t xl = vcombine_s8(vld1_s8(a0.q + 32 * blk + 8 * c), vld1_s8(a1.q + 32 * blk + 8 * c));
        const int8x16_t xh = vcombine_s8(vld1_s8(a0.q + 32 * blk + 16 + 8 * c), vld1_s8(a1.q + 32 * blk + 16 + 8 * c));
        for (int q = 0; q < 4; ++q) {
          s[2 * q] = vmmlaq_s32(s[2 * q], zip(lo[2 * c][q], lo[2 * c + 1][q], false), xl);
          s[2 * q + 1] = vmmlaq_s32(s[2 * q + 1], zip(lo[2 * c][q], lo[2 * c + 1][q], true), xl);
          s[2 * q] = vmmlaq_s32(s[2 * q], zip(hi[2 * c][q], hi[2 * c + 1][q], false), xh);
          s[2 * q + 1] = vmmlaq_s32(s[2 * q + 1], zip(hi[2 * c][q], hi[2 * c + 1][q], true), xh);
        }
      }
      const float32x2_t dx2 = {a0.dx(blk), a1.dx(blk)};
      const float32x2_t m2 = {static_cast<float>(a0.sum32(blk)), static_cast<float>(a1.sum32(blk))};
      const float32x4_t dx = vcombine_f32(dx2, dx2), msum = vcombine_f32(m2, m2);
      for (int q = 0; q < 4; ++q) {
        const float32x4_t dsc = vld1q_f32(sc.dsc[l] + 4 * q), dm = vld1q_f32(sc.dm[l] + 4 * q);
        for (int h = 0; h < 2; ++h) {  // rows 4q + 2h, 4q + 2h + 1
          const float32x4_t dw = h == 0 ? vzip1q_f32(dsc, dsc) : vzip2q_f32(dsc, dsc);
          const float32x4_t mw = h == 0 ? vzip1q_f32(dm, dm) : vzip2q_f32(dm, dm);
          float32x4_t& o = acc[2 * q + h];
          o = vfmaq_f32(o, vmulq_f32(dw, dx), vcvtq_f32_s32(s[2 * q + h]));
          o = vfmaq_f32(o, vmulq_f32(mw, dx), msum);
        }
      }
    }
  }
}

// Q6_K_R16: a group of 16 rows by activation rows a0, a1; acc[p] as in
// group_pair_mmla for rows (2p, 2p + 1). Per lane, Q6_KT's fold: the two
// halves' sums by their int8 scales (exact in int32), then by d·d_x.
void group_pair_q6k_mmla(const uint8_t* g, int64_t n_super, const ActRow& a0, const ActRow& a1, float32x4_t acc[8]) {
  for (int p = 0; p < 8; ++p) acc[p] = vdupq_n_f32(0);
  auto zip = [](int8x16_t u, int8x16_t v, bool second) {
    const uint32x4_t a = vreinterpretq_u32_s8(u), b = vreinterpretq_u32_s8(v);
    return vreinterpretq_s8_u32(second ? vzip2q_u32(a, b) : vzip1q_u32(a, b));
  };
  auto dup = [](int32x4_t v, int h) { return h == 0 ? vzip1q_s32(v, v) : vzip2q_s32(v, v); };
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = g + sb * Q6_KR16::kBlockBytes;
    float32x4_t d[4];
    Q6_KR16::scales(p, d);
    for (int c = 0; c < 8; ++c) {
      const int64_t blk = 8 * sb + c;
      int8x16_t lo[4][4], hi[4][4];
      Q6_KR16::levels(p, c, lo, hi);
      int32x4_t sl[8], sh[8];
      for (int k = 0; k < 8; ++k) sl[k] = sh[k] = vdupq_n_s32(0);
      for (int e = 0; e < 2; ++e) {  // steps 2e, 2e + 1 of each half: elements 8e.. and 16 + 8e..
        const int8x16_t xl = vcombine_s8(vld1_s8(a0.q + 32 * blk + 8 * e), vld1_s8(a1.q + 32 * blk + 8 * e));
        const int8x16_t xh = vcombine_s8(vld1_s8(a0.q + 32 * blk + 16 + 8 * e), vld1_s8(a1.q + 32 * blk + 16 + 8 * e));
        for (int q = 0; q < 4; ++q) {
          sl[2 * q] = vmmlaq_s32(sl[2 * q], zip(lo[2 * e][q], lo[2 * e + 1][q], false), xl);
          sl[2 * q + 1] = vmmlaq_s32(sl[2 * q + 1], zip(lo[2 * e][q], lo[2 * e + 1][q], true), xl);
          sh[2 * q] = vmmlaq_s32(sh[2 * q], zip(hi[2 * e][q], hi[2 * e + 1][q], false), xh);
          sh[2 * q + 1] = vmmlaq_s32(sh[2 * q + 1], zip(hi[2 * e][q], hi[2 * e + 1][q], true), xh);
        }
      }
      const float32x2_t dx2 = {a0.dx(blk), a1.dx(blk)};
      const float32x4_t dx = vcombine_f32(dx2, dx2);
      for (int q = 0; q < 4; ++q) {
        const int32x4_t scl = Q6_KR16::scale(p, 2 * c, q), sch = Q6_KR16::scale(p, 2 * c + 1, q);
        for (int h = 0; h < 2; ++h) {  // rows 4q + 2h, 4q + 2h + 1
          const int32x4_t tot = vmlaq_s32(vmulq_s32(dup(scl, h), sl[2 * q + h]), dup(sch, h), sh[2 * q + h]);
          const float32x4_t dw = h == 0 ? vzip1q_f32(d[q], d[q]) : vzip2q_f32(d[q], d[q]);
          acc[2 * q + h] = vfmaq_f32(acc[2 * q + h], vmulq_f32(dw, dx), vcvtq_f32_s32(tot));
        }
      }
    }
  }
}

template <class L>
void group_mmla(const uint8_t* g, const void* act, int64_t n_in, int64_t n_x, float* y, int64_t n_out, int64_t r) {
  constexpr int kPairs = L::kRows / 2;
  for (int64_t i = 0; i < n_x; i += 2) {
    const bool pair = i + 1 < n_x;
    const ActRow a0 = act_row(act, n_in, i), a1 = pair ? act_row(act, n_in, i + 1) : a0;
    float32x4_t acc[kPairs];
    if constexpr (std::is_same_v<L, Q4_KR16>) {
      group_pair_q4k_mmla(g, n_in / 256, a0, a1, acc);
    } else if constexpr (std::is_same_v<L, Q6_KR16>) {
      group_pair_q6k_mmla(g, n_in / 256, a0, a1, acc);
    } else {
      group_pair_mmla<L>(g, n_in / 32, a0, a1, acc);
    }
    float* y0 = y + i * n_out + r;
    for (int p = 0; p < kPairs; ++p) {
      float v[4];
      vst1q_f32(v, acc[p]);
      y0[2 * p] = v[0], y0[2 * p + 1] = v[2];
      if (pair) y0[n_out + 2 * p] = v[1], y0[n_out + 2 * p + 1] = v[3];
    }
  }
}

template <class L>
void rows_grouped_mmla(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float*,
                  const void* act, int64_t n_x, float* y, int64_t n_out) {
  rows_grouped<L>(w, row_bytes, n_in, r0, r1, act, n_x, y, n_out, &group_mmla<L>, &rows_mmla<typename L::Plain>);
}

}  // namespace
}  // namespace q8arm

void register_i8mm(KernelTable& k) {
  auto set = [&k](DType t, auto rows) { k.matmul[static_cast<int>(t)] = MatmulImpl{&q8arm::act_bytes, &q8arm::prepare, rows, 1}; };
  set(DType::Q8_0, &q8arm::rows_mmla<q8arm::Q8_0T>);
  set(DType::Q4_0, &q8arm::rows_mmla<q8arm::Q4_0T>);
  set(DType::Q4_K, &q8arm::rows_mmla<q8arm::Q4_KT>);
  set(DType::Q6_K, &q8arm::rows_mmla<q8arm::Q6_KT>);
  set(DType::Q4_1, &q8arm::rows_mmla<q8arm::Q4_1T>);
  set(DType::Q5_0, &q8arm::rows_mmla<q8arm::Q5_0T>);
  set(DType::Q5_1, &q8arm::rows_mmla<q8arm::Q5_1T>);
  set(DType::Q5_K, &q8arm::rows_mmla<q8arm::Q5_KT>);
  set(DType::IQ4_NL, &q8arm::rows_mmla<q8arm::IQ4_NLT>);
  set(DType::IQ4_XS, &q8arm::rows_mmla<q8arm::IQ4_XST>);
  set(DType::MXFP4, &q8arm::rows_mmla<q8arm::MXFP4T>);
  set(DType::Q2_K, &q8arm::rows_mmla<q8arm::Q2_KT>);
  set(DType::Q3_K, &q8arm::rows_mmla<q8arm::Q3_KT>);
  // The interleaved layouts the dotprod table (registered first) repacks to.
  auto grouped = [&k](DType layout, auto rows, int64_t group_rows) {
    k.matmul[static_cast<int>(layout)] = MatmulImpl{&q8arm::act_bytes, &q8arm::prepare, rows, group_rows};
  };
  grouped(DType::Q8_0_R, &q8arm::rows_grouped_mmla<q8arm::Q8_0R>, 8);
  grouped(DType::Q4_0_R, &q8arm::rows_grouped_mmla<q8arm::Q4_0R>, 8);
  grouped(DType::IQ4_NL_R, &q8arm::rows_grouped_mmla<q8arm::IQ4_NLR>, 8);
  grouped(DType::MXFP4_R, &q8arm::rows_grouped_mmla<q8arm::MXFP4R>, 8);
  grouped(DType::Q4_K_R16, &q8arm::rows_grouped_mmla<q8arm::Q4_KR16>, 16);
  grouped(DType::Q6_K_R16, &q8arm::rows_grouped_mmla<q8arm::Q6_KR16>, 16);
  k.madd_loop = [](bool int8, int64_t iters) -> int64_t {  // int8: smmla, 2·8·2 = 32 products per instruction
    if (!int8) return arm_probe::f32_fma_loop(iters);
    const int8x16_t b = vdupq_n_s8(3), c = vdupq_n_s8(-2);
    return arm_probe::chains(vdupq_n_s32(0), iters, 32, [&](int32x4_t v) { return vmmlaq_s32(v, b, c); });
  };
}

}  // namespace og::kernels
