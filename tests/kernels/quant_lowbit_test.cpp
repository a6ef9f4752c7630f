// The low-bit weight types Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4: hand-built
// blocks decoded to values worked out from the GGUF layouts (catches layout
// bugs the round trip through our own encoder cannot), and the encoders'
// choices on blocks with a known best answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/test_util.h"
#include "tensor/quant_blocks.h"

namespace og::kernels {
namespace {

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

std::vector<float> decode(DType t, const uint8_t* block) {
  std::vector<float> y(static_cast<size_t>(dtype_info(t).block));
  dequantize_row(t, block, y.data(), static_cast<int64_t>(y.size()));
  return y;
}

TEST(LowBitBlock, Q2_K) {
  uint8_t b[84] = {};
  for (int k = 0; k < 16; ++k) b[k] = static_cast<uint8_t>((k % 16) | ((15 - k) << 4));  // scale k, min 15 − k
  b[16 + 0] = 0xE4;   // qs[0]: levels 0, 1, 2, 3 in bit pairs 0..3 (elements 0, 32, 64, 96)
  b[16 + 32] = 0x1B;  // qs[32]: levels 3, 2, 1, 0 (elements 128, 160, 192, 224)
  b[16 + 17] = 0x03;  // qs[17]: element 17 (sub-block 1) level 3
  put_f16(b + 80, 0.5f);   // d
  put_f16(b + 82, 0.25f);  // dmin
  const std::vector<float> y = decode(DType::Q2_K, b);
  auto x = [](int k, int q) { return 0.5f * static_cast<float>(k * q) - 0.25f * static_cast<float>(15 - k); };
  EXPECT_EQ(y[0], x(0, 0));
  EXPECT_EQ(y[32], x(2, 1));
  EXPECT_EQ(y[64], x(4, 2));
  EXPECT_EQ(y[96], x(6, 3));
  EXPECT_EQ(y[128], x(8, 3));
  EXPECT_EQ(y[160], x(10, 2));
  EXPECT_EQ(y[224], x(14, 0));
  EXPECT_EQ(y[17], x(1, 3));
  EXPECT_EQ(y[255], x(15, 0));
}

TEST(LowBitBlock, Q3_K) {
  uint8_t b[110] = {};
  // 6-bit scales u_k = 20 + 2k (value u_k − 32): low 4 bits at byte k % 8
  // (nibble k / 8), high 2 bits at byte 8 + k % 4, bits 2·(k / 4).
  for (int k = 0; k < 16; ++k) {
    const int u = 20 + 2 * k;
    b[96 + k % 8] |= static_cast<uint8_t>((u & 15) << (4 * (k / 8)));
    b[96 + 8 + k % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (k / 4)));
  }
  b[0] = 0x0F;        // hmask[0]: high bit set for elements 0, 32, 64, 96 (bits 0..3), clear for 128..224
  b[32 + 0] = 0xE4;   // qs[0]: low bits 0, 1, 2, 3 for elements 0, 32, 64, 96
  b[32 + 32] = 0xE4;  // qs[32]: 0, 1, 2, 3 for elements 128, 160, 192, 224
  put_f16(b + 108, 0.5f);
  const std::vector<float> y = decode(DType::Q3_K, b);
  auto x = [](int k, int q) { return 0.5f * static_cast<float>((20 + 2 * k - 32) * q); };
  EXPECT_EQ(y[0], x(0, 0));
  EXPECT_EQ(y[32], x(2, 1));
  EXPECT_EQ(y[96], x(6, 3));
  EXPECT_EQ(y[128], x(8, -4));
  EXPECT_EQ(y[160], x(10, -3));
  EXPECT_EQ(y[224], x(14, -1));
  EXPECT_EQ(y[1], x(0, -4));  // all zero bits: level −4
  EXPECT_EQ(y[255], x(15, -4));
}

TEST(LowBitBlock, IQ4_NL) {
  uint8_t b[18];
  put_f16(b, 0.5f);
  for (int i = 0; i < 16; ++i) b[2 + i] = static_cast<uint8_t>(i | (15 - i) << 4);
  const std::vector<float> y = decode(DType::IQ4_NL, b);
  EXPECT_EQ(y[0], 0.5f * -127);
  EXPECT_EQ(y[8], 0.5f * 1);
  EXPECT_EQ(y[15], 0.5f * 113);
  EXPECT_EQ(y[16], 0.5f * 113);  // high nibble of qs[0] = 15
  EXPECT_EQ(y[31], 0.5f * -127);
  EXPECT_EQ(y[20], 0.5f * 38);  // high nibble of qs[4] = 11
}

TEST(LowBitBlock, IQ4_XS) {
  uint8_t b[136] = {};
  put_f16(b, 0.25f);
  // ls_j = 30 + j: low 4 bits in scales_l[j / 2] nibble j % 2, high 2 bits in scales_h bits 2j.
  int sh = 0;
  for (int j = 0; j < 8; ++j) {
    const int ls = 30 + j;
    b[4 + j / 2] |= static_cast<uint8_t>((ls & 15) << (4 * (j % 2)));
    sh |= (ls >> 4) << (2 * j);
  }
  b[2] = static_cast<uint8_t>(sh & 0xFF), b[3] = static_cast<uint8_t>(sh >> 8);
  for (int i = 0; i < 128; ++i) b[8 + i] = static_cast<uint8_t>((i % 16) | (15 - i % 16) << 4);
  const std::vector<float> y = decode(DType::IQ4_XS, b);
  for (int j = 0; j < 8; ++j) {
    const float s = 0.25f * static_cast<float>(30 + j - 32);
    EXPECT_EQ(y[32 * j], s * -127) << j;
    EXPECT_EQ(y[32 * j + 15], s * 113) << j;
    EXPECT_EQ(y[32 * j + 16], s * 113) << j;
    EXPECT_EQ(y[32 * j + 19], s * 53) << j;  // high nibble of byte 3 = 12
  }
}

TEST(LowBitBlock, MXFP4) {
  uint8_t b[17];
  b[0] = 127;  // E8M0 2^0: the codes decode to their plain E2M1 values
  for (int i = 0; i < 16; ++i) b[1 + i] = static_cast<uint8_t>(i | (15 - i) << 4);
  std::vector<float> y = decode(DType::MXFP4, b);
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(y[i], e2m1[i]) << i;
    EXPECT_EQ(y[16 + i], e2m1[15 - i]) << i;
  }
  b[0] = 130;  // 2^3
  y = decode(DType::MXFP4, b);
  EXPECT_EQ(y[7], 48.0f);
  b[0] = 0;  // 2^-127: subnormal, still exact
  y = decode(DType::MXFP4, b);
  EXPECT_EQ(y[2], std::ldexp(1.0f, -127));
}

// Values that sit exactly on a block's levels come back exactly.
TEST(LowBitEncode, ExactLevelsRoundTrip) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(kIq4nlValues[(i * 7) % 16]) / 64.0f;
  for (DType t : {DType::IQ4_NL, DType::IQ4_XS}) {
    std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(t, 256)));
    std::vector<float> y(256);
    quantize_row(t, x.data(), q.data(), 256);
    dequantize_row(t, q.data(), y.data(), 256);
    for (int i = 0; i < 256; ++i) ASSERT_NEAR(y[i], x[i], 1e-3f * std::fabs(x[i])) << dtype_name(static_cast<uint32_t>(t)) << " " << i;
  }
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(kMxfp4Values[(i * 5) % 16]) * 0.125f;
  std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(DType::MXFP4, 256)));
  std::vector<float> y(256);
  quantize_row(DType::MXFP4, x.data(), q.data(), 256);
  dequantize_row(DType::MXFP4, q.data(), y.data(), 256);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(y[i], x[i]) << i;
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>((i * 3) % 8 - 4) * 0.5f;  // Q3_K levels −4..3
  q.assign(static_cast<size_t>(dtype_row_bytes(DType::Q3_K, 256)), 0);
  quantize_row(DType::Q3_K, x.data(), q.data(), 256);
  dequantize_row(DType::Q3_K, q.data(), y.data(), 256);
  for (int i = 0; i < 256; ++i) ASSERT_NEAR(y[i], x[i], 1e-3f) << i;
}

// Every level and scale at the largest magnitude its format allows against
// activations that all quantize to 127: the largest integer sums the fast
// kernels form (an int16 pair sum that wrapped would miss by far).
TEST(LowBitMatmul, TopLevelsStayExactOnEveryIsa) {
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::IQ4_XS, DType::IQ4_NL, DType::MXFP4}) {
    const int64_t n_out = 7, n_in = 512, rb = dtype_row_bytes(t, n_in), block = dtype_info(t).block;
    const int64_t bb = dtype_info(t).block_bytes;
    std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb), 0xFF);
    for (int64_t b = 0; b < n_out * n_in / block; ++b) {
      uint8_t* p = bytes.data() + b * bb;
      if (t == DType::Q2_K) put_f16(p + 80, 0.0078125f), put_f16(p + 82, 0.0f);
      if (t == DType::Q3_K) put_f16(p + 108, 0.0078125f);
      if (t == DType::IQ4_XS) put_f16(p, 0.0078125f), std::memset(p + 8, 0, 128);  // codes 0: −127
      if (t == DType::IQ4_NL) put_f16(p, 0.0078125f), std::memset(p + 2, 0, 16);
      if (t == DType::MXFP4) p[0] = 120;  // codes 15: −12
    }
    std::vector<float> deq(static_cast<size_t>(n_out * n_in));
    for (int64_t r = 0; r < n_out; ++r) dequantize_row(t, bytes.data() + r * rb, deq.data() + r * n_in, n_in);
    for (Isa isa : available_isas())
      for (int64_t n_x : {1, 3, 7}) {
        TensorView w{bytes.data(), t, {n_out, n_in}, "w"};
        std::vector<float> x(static_cast<size_t>(n_x * n_in), 1.0f), y(static_cast<size_t>(n_x * n_out));
        matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
        for (int64_t i = 0; i < n_x; ++i)
          for (int64_t r = 0; r < n_out; ++r) {
            double ref = 0, mag = 0;
            for (int64_t k = 0; k < n_in; ++k) ref += deq[r * n_in + k], mag += std::fabs(deq[r * n_in + k]);
            ASSERT_NEAR(y[i * n_out + r], ref, 1e-5 * mag + 1e-6)
                << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(t)) << " n_x " << n_x;
          }
      }
  }
}

// The AVX-512 table's zmm tiles for Q2_K, Q3_K and IQ4_XS (KLowZ, KIQ4XSZ)
// add their two 256-bit halves into the ymm tiles' exact int32 lanes before
// the same float epilogue, so their outputs equal the AVX-VNNI table's (the
// ymm tiles with the same VNNI instructions) bit for bit: decode, small
// batches and chunked prefill, rows of one and several blocks.
TEST(LowBitMatmul, ZmmTilesEqualTheYmmTilesBitForBit) {
  if (!isa_available(Isa::kAvx512) || !isa_available(Isa::kAvxVnni))
    GTEST_SKIP() << "needs a CPU with both AVX-512 and AVX-VNNI";
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::IQ4_XS})
    for (int64_t n_out : {7, 64})
      for (int64_t n_in : {256, 1024}) {
        const int64_t rb = dtype_row_bytes(t, n_in);
        const std::vector<float> src = testing::random_normal(n_out * n_in, 40 + static_cast<uint32_t>(n_out + n_in));
        std::vector<uint8_t> q(static_cast<size_t>(n_out * rb));
        for (int64_t r = 0; r < n_out; ++r) quantize_row(t, src.data() + r * n_in, q.data() + r * rb, n_in);
        const TensorView w{q.data(), t, {n_out, n_in}, "w"};
        for (int64_t n_x : {1, 3, 8, 13, 300}) {
          const std::vector<float> x = testing::random_normal(n_x * n_in, 7 + static_cast<uint32_t>(n_x));
          std::vector<float> zmm(static_cast<size_t>(n_x * n_out)), ymm(zmm.size());
          matmul_with(kernel_table(Isa::kAvx512), w, x.data(), n_x, zmm.data());
          matmul_with(kernel_table(Isa::kAvxVnni), w, x.data(), n_x, ymm.data());
          ASSERT_EQ(std::memcmp(zmm.data(), ymm.data(), zmm.size() * sizeof(float)), 0)
              << dtype_name(static_cast<uint32_t>(t)) << " " << n_out << "x" << n_in << " n_x " << n_x;
        }
      }
}

// IQ4_NL_R and MXFP4_R (rows interleaved by 8 at load): repacking changes no
// value (unpacking restores the bytes, get_row reads each row), and every
// ISA's matmul matches the double product of the dequantized weights within
// the activation-rounding budget (6σ of the 8-bit step, as isa_test.cpp's),
// with the n_out % 8 tail rows plain; a batch equals single rows bit for bit.
TEST(LowBitMatmul, InterleavedLayoutsAgreeWithReference) {
  const struct { DType file, layout; } cases[] = {{DType::IQ4_NL, DType::IQ4_NL_R}, {DType::MXFP4, DType::MXFP4_R}};
  for (const auto& c : cases)
    for (int64_t n_out : {5, 8, 16, 37, 203})
      for (int64_t n_in : {96, 1024}) {
        const int64_t rb = dtype_row_bytes(c.file, n_in);
        const std::vector<float> src = testing::random_normal(n_out * n_in, 900 + static_cast<uint32_t>(n_out), 0.3f);
        std::vector<float> deq(src.size());
        std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
        for (int64_t r = 0; r < n_out; ++r) {
          quantize_row(c.file, src.data() + r * n_in, bytes.data() + r * rb, n_in);
          dequantize_row(c.file, bytes.data() + r * rb, deq.data() + r * n_in, n_in);
        }
        std::vector<uint8_t> packed = bytes;
        repack_rows(c.file, c.layout, packed.data(), n_out, n_in);
        const TensorView w{packed.data(), c.layout, {n_out, n_in}, "w"};
        std::vector<float> row(static_cast<size_t>(n_in));
        for (int64_t r = 0; r < n_out; ++r) {
          get_row(w, r, row.data());
          for (int64_t k = 0; k < n_in; ++k) ASSERT_EQ(row[k], deq[r * n_in + k]) << dtype_name(static_cast<uint32_t>(c.layout));
        }
        for (Isa isa : available_isas())
          for (int64_t n_x : {1, 3, 9}) {
            const std::vector<float> x = testing::random_normal(n_x * n_in, 77 + static_cast<uint32_t>(n_x));
            std::vector<float> y(static_cast<size_t>(n_x * n_out)), y1(static_cast<size_t>(n_out));
            matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
            for (int64_t i = 0; i < n_x; ++i) {
              matmul_with(kernel_table(isa), w, x.data() + i * n_in, 1, y1.data());
              for (int64_t r = 0; r < n_out; ++r) {
                double ref = 0, w2 = 0, amax = 0, sabs = 0;
                for (int64_t k = 0; k < n_in; ++k) {
                  const double wv = deq[r * n_in + k], xv = x[i * n_in + k];
                  ref += wv * xv, w2 += wv * wv, sabs += std::fabs(wv * xv), amax = std::max(amax, std::fabs(xv));
                }
                const double tol = 6.0 * std::sqrt(w2) * amax / (127.0 * std::sqrt(12.0)) + 1e-5 * sabs + 1e-6;
                ASSERT_NEAR(y[i * n_out + r], ref, tol) << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(c.layout))
                                                        << " n_out " << n_out << " n_in " << n_in << " n_x " << n_x;
                ASSERT_EQ(y[i * n_out + r], y1[r]) << isa_str(isa) << " batch row " << i << " of " << n_x;
              }
            }
          }
        repack_rows(c.layout, c.file, packed.data(), n_out, n_in);
        ASSERT_EQ(packed, bytes) << dtype_name(static_cast<uint32_t>(c.layout));
      }
}

}  // namespace
}  // namespace og::kernels
