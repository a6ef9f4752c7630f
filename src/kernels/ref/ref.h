// The scalar reference of every kernel (namespace og::kernels::ref): plain,
// obviously correct code that the fast variants are tested against. Callers
// outside kernels/ use ops.h; these functions do not validate their arguments.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/ops.h"
#include "tensor/dtype.h"

namespace og::kernels::ref {

// An f16 field of a quant block (blocks are packed, so fields are unaligned).
inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}
inline void store_f16(uint8_t* p, float f) {
  const uint16_t h = f32_to_f16(f);
  std::memcpy(p, &h, 2);
}

// std::lround(x) (nearest, halves away from zero) without the libm call the
// encoders spent a fifth of their time in: the truncated integer plus the
// exact fractional part (x - trunc(x) is exact in binary32). Magnitudes past
// 2^30 (never a level; callers clamp) go to std::lround.
inline long round_half_away(float x) {
  if (!(std::fabs(x) < 1073741824.0f)) return std::lround(x);
  const int t = static_cast<int>(x);
  const float f = x - static_cast<float>(t);
  return f >= 0.5f ? t + 1L : f <= -0.5f ? t - 1L : static_cast<long>(t);
}

// Block formats: one row of n elements (n a multiple of the block).
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
void quantize_row(DType t, const float* src, void* dst, int64_t n);
float dot_row(DType t, const void* w_row, const float* x, int64_t n);

// Rows [r0, r1) of y[n_x, n_out] = x[n_x, n_in] · W^T; w points at row 0 of W.
void matmul_rows(DType t, const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1,
                 const float* x, int64_t n_x, float* y, int64_t n_out);

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y);
void layer_norm(const float* x, const float* w, const float* b, float eps, int64_t n, float* y);
void gelu_erf(float* x, int64_t n);
void rope(float* x, int64_t head_dim, int64_t n_rot, int64_t pos, const float* inv_freq, bool interleaved);
void rope_angles(int64_t pos, int64_t n_rot, const float* inv_freq, double* cs);
void rope_apply(float* x, int64_t n_rot, const double* cs, bool interleaved);
void softmax(float* x, int64_t n);
void silu_mul(float* gate, const float* up, int64_t n);
void gelu_tanh_mul(float* gate, const float* up, int64_t n);
void add(float* y, const float* x, int64_t n);
void scale(float* y, float s, int64_t n);
void f32_to_f16_row(const float* x, void* dst, int64_t n);
// Attention kernels over K/V rows stored as t (ops.h's AttendKernels); nullptr
// for a dtype other than F32, F16, BF16, Q8_0.
const AttendKernels* attend_kernels(DType t);

// Per-format row codecs (n a multiple of the format's block).
void dequant_q4_0(const void* src, float* dst, int64_t n);
void dequant_q4_1(const void* src, float* dst, int64_t n);
void dequant_q5_0(const void* src, float* dst, int64_t n);
void dequant_q5_1(const void* src, float* dst, int64_t n);
void dequant_q8_0(const void* src, float* dst, int64_t n);
void dequant_q4_k(const void* src, float* dst, int64_t n);
void dequant_q5_k(const void* src, float* dst, int64_t n);
void dequant_q6_k(const void* src, float* dst, int64_t n);
void quant_q4_0(const float* src, void* dst, int64_t n);
void quant_q4_1(const float* src, void* dst, int64_t n);
void quant_q5_0(const float* src, void* dst, int64_t n);
void quant_q5_1(const float* src, void* dst, int64_t n);
void quant_q8_0(const float* src, void* dst, int64_t n);
void quant_q4_k(const float* src, void* dst, int64_t n);
void quant_q5_k(const float* src, void* dst, int64_t n);
void quant_q6_k(const float* src, void* dst, int64_t n);
// The low-bit types (tensor/quant_blocks.h; quant_lowbit_ref.cpp).
void dequant_q2_k(const void* src, float* dst, int64_t n);
void dequant_q3_k(const void* src, float* dst, int64_t n);
void dequant_iq4_nl(const void* src, float* dst, int64_t n);
void dequant_iq4_xs(const void* src, float* dst, int64_t n);
void dequant_mxfp4(const void* src, float* dst, int64_t n);
void quant_q2_k(const float* src, void* dst, int64_t n);
void quant_q3_k(const float* src, void* dst, int64_t n);
void quant_iq4_nl(const float* src, void* dst, int64_t n);
void quant_iq4_xs(const float* src, void* dst, int64_t n);
void quant_mxfp4(const float* src, void* dst, int64_t n);

// Q4_K / Q5_K 6-bit scale and min j (0..7) from the 12 packed bytes, and the inverse.
void get_scale_min_k4(const uint8_t* s, int j, uint8_t* sc, uint8_t* m);
void pack_scale_min_k4(const uint8_t* sc, const uint8_t* m, uint8_t* s);

// Q4_K_R (dtype.h): a Q4_K block whose 128 quant bytes are regrouped so that
// byte 32t + 4l + k holds element 32l + 8t + k (low nibble) and element
// 32l + 8t + 4 + k (high nibble): a 32-byte load gives four consecutive
// quants of each of the 8 sub-blocks, one sub-block per 32-bit lane (the
// int8 matmul's dot products then sum each lane within one sub-block). The
// 16 header bytes are unchanged. In place allowed (src == dst).
void repack_q4_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks);
void unpack_q4_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks);

// Q6_K_R (dtype.h): a Q6_K block whose 192 level bytes are regrouped so that
// step s (0..7) of the int8 matmul, 32 levels, holds in byte 4l + k element
// 128·(s/4) + 16l + 4·(s%4) + k: lane l of a step is four levels of one
// 16-element sub-block (8·(s/4) + l), so a lane's dot products sum within one
// scale. Byte 32t + j (t = 0..3) holds step t's level j whole in bits 0-5 and
// the top two bits of step t + 4's level j in bits 6, 7; bytes 128 + 32u + j
// (u = 0, 1) hold the low four bits of steps 4 + 2u's (low nibble) and
// 5 + 2u's (high nibble) level j. So steps 0-3 are one AND each, and the
// 32 bytes a step 4-7 takes its top bits from are already loaded for step
// s - 4. The 16 scales and d (bytes 192..209) are unchanged. In place
// allowed (src == dst).
void repack_q6_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks);
void unpack_q6_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks);

// Q8_0_R (dtype.h): a Q8_0 matrix of n_rows rows whose first n_rows/8*8 rows
// are interleaved in groups of 8 (the rest stay plain Q8_0 rows). Group g
// occupies the bytes of its 8 rows; its 32-element block b is 272 bytes at
// 272·b: the 8 rows' f16 scales (16 bytes), then for step s = 0..7 32 bytes
// in which bytes 4j..4j+3 are quants 4s..4s+3 of row 8g + j. A 32-byte load
// then holds 4 quants of 8 rows, one row per 32-bit lane: one vpdpbusd
// against 4 broadcast activations gives 8 rows' partial sums, and one f32
// scale step per block serves 8 rows. Both rewrite in place.
void repack_q8_0_r(uint8_t* data, int64_t n_rows, int64_t n_in);
void unpack_q8_0_r(uint8_t* data, int64_t n_rows, int64_t n_in);
// Row r of a Q8_0_R matrix of n_rows rows as plain Q8_0 bytes (dst: its row bytes).
void q8_0_r_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst);

// Q4_0_R (dtype.h): Q8_0_R's interleaving of Q4_0 rows. Group g's 32-element
// block b is 144 bytes at 144·b: the 8 rows' f16 scales (16 bytes), then for
// step s = 0..3 32 bytes in which bytes 4j..4j+3 are quant bytes 4s..4s+3 of
// row 8g + j (low nibbles elements 4s..4s+3, high nibbles 16 + 4s..): one
// 32-byte load gives, per 32-bit lane, 4 nibble pairs of one row.
void repack_q4_0_r(uint8_t* data, int64_t n_rows, int64_t n_in);
void unpack_q4_0_r(uint8_t* data, int64_t n_rows, int64_t n_in);
// Row r of a Q4_0_R matrix as plain Q4_0 bytes (dst: its row bytes).
void q4_0_r_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst);
// IQ4_NL_R is the same interleaving of IQ4_NL's identical 18-byte blocks (the
// q4_0_r functions move its bytes). MXFP4_R: group g's block b is 136 bytes
// at 136·b, the 8 rows' exponent bytes, then for step s = 0..3 32 bytes in
// which bytes 4j..4j+3 are quant bytes 4s..4s+3 of row 8g + j.
void repack_mxfp4_r(uint8_t* data, int64_t n_rows, int64_t n_in);
void unpack_mxfp4_r(uint8_t* data, int64_t n_rows, int64_t n_in);
void mxfp4_r_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst);

// Q4_K_R16 (dtype.h): a Q4_K matrix of n_rows rows whose first n_rows/16*16
// rows are interleaved in groups of 16 (the rest stay plain Q4_K rows), one
// row per 32-bit lane of a 512-bit register. Group g occupies the bytes of
// its 16 rows; its 256-element block b is 2304 bytes at 2304·b:
//   0..31     the 16 rows' d (f16, row j at 2j); 32..63 their dmin;
//   64..255   scale byte i (0..11, Q4_K's packing) of row j at
//             64 + 64·(i / 4) + 4j + i % 4 (bytes 4i'..4i'+3 of a row in its
//             32-bit lane, so the scales widen into their row's lane in place);
//   256 + 256l + 64s + 4j + k   (sub-block l = 0..7, step s = 0..3, k = 0..3)
//             element 32l + 4s + k of row j in the low nibble and element
//             32l + 16 + 4s + k in the high nibble.
// A 64-byte load is then 4 nibble pairs of 16 rows: one vpdpbusd against 4
// broadcast activations gives 16 rows' partial sums of one sub-block, and
// the float steps serve 16 rows at once. Both rewrite in place.
void repack_q4_k_r16(uint8_t* data, int64_t n_rows, int64_t n_in);
void unpack_q4_k_r16(uint8_t* data, int64_t n_rows, int64_t n_in);
// Row r of a Q4_K_R16 matrix as plain Q4_K bytes (dst: its row bytes).
void q4_k_r16_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst);

// Q6_K_R16 (dtype.h): Q4_K_R16's interleaving of Q6_K rows, one row per
// 32-bit lane. Group g's 256-element block b is 3360 bytes at 3360·b; chunk
// c = 0..7 (32 elements) at 384c holds steps s = 4u + i (u = 0, 1; i = 0..3),
// step s being elements 32c + 4s + k (k = 0..3). In the 64-byte rows
// x_i = 384c + 192u + 64i (i = 0..2), byte 4j + k holds row j's
//             level (0..63) of step 4u + i in bits 0..5, and bits 2i, 2i + 1
//             of its level of step 4u + 3 in bits 6, 7;
//   3072..3103  the 16 rows' d (f16, row j at 3072 + 2j);
//   3104 + 16l + j  row j's int8 scale of sub-block l (elements 16l..16l+15).
// A 64-byte load is then 4 levels of 16 rows in one sub-block (steps 0-3 are
// sub-block 2c, steps 4-7 sub-block 2c + 1): three of every four steps are
// one AND away, and the scales of a sub-block are 16 consecutive bytes. Both
// rewrite in place.
void repack_q6_k_r16(uint8_t* data, int64_t n_rows, int64_t n_in);
void unpack_q6_k_r16(uint8_t* data, int64_t n_rows, int64_t n_in);
// Row r of a Q6_K_R16 matrix as plain Q6_K bytes (dst: its row bytes).
void q6_k_r16_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst);

// The matrix layouts whose rows are interleaved in groups (Q8_0_R, Q4_0_R,
// Q4_K_R16): a row pointer alone does not locate a row. interleaved_row
// writes row r of such a matrix as plain bytes of its file dtype, which it
// returns (dst: one row of that dtype).
bool is_interleaved(DType t);
DType interleaved_row(DType t, const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst);

// Q5_K_R (dtype.h): a Q5_K block whose 128 quant bytes (at 48) are regrouped
// as Q4_K_R's (byte 48 + 32t + 4l + k: element 32l + 8t + k low nibble,
// 32l + 8t + 4 + k high nibble) and whose fifth bits follow: the bit of
// element 32l + 8t + 4n + k is bit 4(t/2) + 2n + t%2 of qh byte 16 + 4l + k.
// A 64-byte load of steps 2u, 2u + 1 (nibble n) then finds its fifth bits in
// one 32-byte qh load, bit 4u + 2n in the low half, 4u + 2n + 1 in the high.
// The 16 header bytes are unchanged. In place allowed (src == dst).
void repack_q5_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks);
void unpack_q5_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks);

}  // namespace og::kernels::ref
