// Q5_K_R on the dot-product table (and the i8mm table, which starts from
// it): Q5_K super-blocks regrouped at load as the x86 tables regroup them
// (ref.h repack_q5_k_r: the same dtype and the same repack_rows), compiled
// with -march=armv8.2-a+dotprod by src/kernels/isa.cmake.
//
// A 16-byte vector of Q5_K_R's quants at 48 + 32t + 16u holds, in 32-bit lane
// l', four nibble pairs of sub-block 4u + l' (low nibbles elements
// 32l + 8t + k, high nibbles 32l + 8t + 4 + k, l = 4u + l'), and its fifth
// bits sit in the lanes of the qh vector at 16 + 16u. The activations are
// quantized as for the plain kernels and then permuted within each
// super-block to that order, once per matmul, so one plain sdot (no lane
// broadcast, no horizontal add) adds 4 levels of 4 sub-blocks: 16 sdots give
// a row's 8 sub-block sums in two vectors. The super-blocks of 4 weight rows
// are decoded, and their scales unpacked, once per chunk of up to 32
// activation rows, and each activation vector serves the 4 rows; the sums
// of the 4 rows are transposed (vld4q) so that one f32 vector folds them:
// lane by lane Q4_KT's fold (fma(d·sc·d_x, Σ, acc), then
// fma(−dmin·m·d_x, Σx, acc)), sub-blocks in order. Each lane's integer sums are exact and its f32 steps those of the
// plain kernel, so Q5_K_R equals the same table's plain Q5_K bit for bit, and
// a batch its rows alone (a lane depends on its own weight and activation
// row only; the 4-row tile's unused lanes repeat the last row and are
// dropped).
#include "kernels/arm/q8_blocks_arm.inc"

#include <algorithm>

namespace og::kernels {
namespace q8arm {
namespace {

constexpr int64_t kQ5Bytes = 176;

// The plain activations (prepare), then each super-block's 256 levels moved
// so that bytes 128u + 32t + 16n + 4l' + k hold element 32(4u + l') + 8t +
// 4n + k: the order of Q5_K_R's nibble n of quant vector (t, u). The scales
// and half sums stay those of the original blocks.
void prepare_q5kr(const float* x, int64_t n_x, int64_t n_in, void* act) {
  prepare(x, n_x, n_in, act);
  for (int64_t i = 0; i < n_x; ++i) {
    uint8_t* q = static_cast<uint8_t*>(act) + i * act_stride(n_in);
    for (int64_t sb = 0; sb < n_in / 256; ++sb) {
      uint8_t in[256];
      std::memcpy(in, q + 256 * sb, 256);
      for (int u = 0; u < 2; ++u)
        for (int t = 0; t < 4; ++t)
          for (int n = 0; n < 2; ++n)
            for (int l = 0; l < 4; ++l)
              std::memcpy(q + 256 * sb + 128 * u + 32 * t + 16 * n + 4 * l, in + 32 * (4 * u + l) + 8 * t + 4 * n, 4);
    }
  }
}

// A super-block's levels (0..31): w[u][t][n] is nibble n of quant vector
// (t, u) with its fifth bit, bit 4(t/2) + 2n + t%2 of the qh vector u.
inline void q5kr_levels(const uint8_t* b, int8x16_t w[2][4][2]) {
  const uint8x16_t low = vdupq_n_u8(0x0F), sixteen = vdupq_n_u8(16);
  for (int u = 0; u < 2; ++u) {
    const uint8x16_t qh = vld1q_u8(b + 16 + 16 * u);
    for (int t = 0; t < 4; ++t) {
      const uint8x16_t v = vld1q_u8(b + 48 + 32 * t + 16 * u);
      for (int n = 0; n < 2; ++n) {
        const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << (4 * (t / 2) + 2 * n + t % 2)));
        const uint8x16_t nib = n == 0 ? vandq_u8(v, low) : vshrq_n_u8(v, 4);
        w[u][t][n] = vreinterpretq_s8_u8(vorrq_u8(nib, vandq_u8(vtstq_u8(qh, bit), sixteen)));
      }
    }
  }
}

// Activation rows per pass over a tile's super-blocks: each super-block of
// the 4 weight rows is decoded and its scales unpacked once per chunk, and
// the chunk's f32 sums (one vector per activation row) stay on the stack.
constexpr int kXChunk = 32;

// 4 weight rows (super-blocks at rows[q]) by activation rows a[0..n_x):
// acc[x] lane q is row q's dot product with activation row x.
void q5kr_tile(const uint8_t* const rows[4], int64_t n_super, const ActRow* a, int n_x, float32x4_t* acc) {
  for (int x = 0; x < n_x; ++x) acc[x] = vdupq_n_f32(0);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    float dsc[8][4], dm[8][4];  // [sub-block][row]
    int8x16_t w[4][2][4][2];    // [row][u][t][n]
    for (int q = 0; q < 4; ++q) {
      const uint8_t* b = rows[q] + sb * kQ5Bytes;
      Q4_KT::Scales sc;
      Q4_KT::scales(b, sc);
      for (int j = 0; j < 8; ++j) dsc[j][q] = sc.dsc[j], dm[j][q] = sc.dm[j];
      q5kr_levels(b, w[q]);
    }
    for (int x = 0; x < n_x; ++x) {
      const int8_t* xq = a[x].q + 256 * sb;
      for (int u = 0; u < 2; ++u) {
        int32x4_t s[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
        for (int t = 0; t < 4; ++t)
          for (int n = 0; n < 2; ++n) {
            const int8x16_t xv = vld1q_s8(xq + 128 * u + 32 * t + 16 * n);
            for (int q = 0; q < 4; ++q) s[q] = vdotq_s32(s[q], w[q][u][t][n], xv);
          }
        int32_t sums[4][4];  // [row][sub-block 4u + l']
        for (int q = 0; q < 4; ++q) vst1q_s32(sums[q], s[q]);
        const int32x4x4_t v = vld4q_s32(&sums[0][0]);  // val[l']: the 4 rows' sums of sub-block 4u + l'
        for (int l = 0; l < 4; ++l) {
          const int j = 4 * u + l;
          const int64_t blk = 8 * sb + j;
          const float dx = a[x].dx(blk);
          acc[x] = vfmaq_f32(acc[x], vmulq_n_f32(vld1q_f32(dsc[j]), dx), vcvtq_f32_s32(v.val[l]));
          acc[x] = vfmaq_f32(acc[x], vmulq_n_f32(vld1q_f32(dm[j]), dx), vdupq_n_f32(static_cast<float>(a[x].sum32(blk))));
        }
      }
    }
  }
}

void rows_q5kr_sdot(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float*,
                    const void* act, int64_t n_x, float* y, int64_t n_out) {
  for (int64_t r = r0; r < r1; r += 4) {
    const int n_rows = static_cast<int>(std::min<int64_t>(4, r1 - r));
    const uint8_t* rows[4];
    for (int q = 0; q < 4; ++q) rows[q] = w + (r + std::min(q, n_rows - 1)) * row_bytes;
    for (int64_t i = 0; i < n_x; i += kXChunk) {
      const int nx = static_cast<int>(std::min<int64_t>(kXChunk, n_x - i));
      ActRow a[kXChunk];
      for (int x = 0; x < nx; ++x) a[x] = act_row(act, n_in, i + x);
      float32x4_t acc[kXChunk];
      q5kr_tile(rows, n_in / 256, a, nx, acc);
      for (int x = 0; x < nx; ++x) {
        float v[4];
        vst1q_f32(v, acc[x]);
        for (int q = 0; q < n_rows; ++q) y[(i + x) * n_out + r + q] = v[q];
      }
    }
  }
}

}  // namespace
}  // namespace q8arm

// Called by register_dotprod (matmul_dotprod.cpp): Q5_K matrices become
// Q5_K_R at load, in this table and in the i8mm one built on it.
void register_dotprod_q5k(KernelTable& k) {
  k.matmul[static_cast<int>(DType::Q5_K_R)] = MatmulImpl{&q8arm::act_bytes, &q8arm::prepare_q5kr, &q8arm::rows_q5kr_sdot, 1};
  k.repack_to[static_cast<int>(DType::Q5_K)] = static_cast<int>(DType::Q5_K_R);
}

}  // namespace og::kernels
