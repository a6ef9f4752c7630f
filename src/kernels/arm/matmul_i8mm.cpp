// The int8-matrix table's kernels (FEAT_I8MM, smmla; compiled with
// -march=armv8.2-a+dotprod+i8mm by src/kernels/isa.cmake, run only when
// HWCAP2 says the CPU has it): the dot-product table's int8 matmuls
// (q8_blocks_arm.inc) computed two weight rows by two activation rows at a
// time. smmla multiplies a 2×8 int8 tile by an 8×2 one into 2×2 int32 sums,
// so each weight block is decoded once for two activation rows and each
// activation block loaded once for two weight rows. Its half sums are the
// same integers sdot gives and fold() the same float steps, so the outputs
// equal the dotprod table's bit for bit, and a batch its rows alone (an odd
// row or activation left over takes the sdot path).
#include "kernels/arm/q8_blocks_arm.inc"

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
}

}  // namespace og::kernels
