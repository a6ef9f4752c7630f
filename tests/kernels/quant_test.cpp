// Reference block codecs: quantize→dequantize error per dtype, hand-built
// blocks decoded to known values (catches layout bugs), dot_row against
// dequantize-then-dot, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "base/error.h"
#include "kernels/ops.h"
#include "kernels/ref/ref.h"
#include "kernels/test_util.h"

namespace og::kernels {
namespace {

using testing::all_weight_dtypes;
using testing::random_normal;
using testing::rel_rms;

std::vector<uint8_t> quantize(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(t, static_cast<int64_t>(x.size()))));
  quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> roundtrip(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q = quantize(t, x);
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

// Relative RMS error budgets of quantize→dequantize on Gaussian data: about
// 1.2× what the reference quantizers measure, which is close to the uniform
// quantizer's step/√12 for each format's levels and block size (measured in
// brackets; bits per weight after the '/').
const std::map<DType, double> kRoundtripBound = {
    {DType::F32, 0.0},
    {DType::F16, 2.5e-4},   // (2.1e-4) / 16
    {DType::BF16, 2e-3},    // (1.7e-3) / 16
    {DType::Q8_0, 6.5e-3},  // (5.4e-3) / 8.5
    {DType::Q6_K, 2.3e-2},  // (1.9e-2) / 6.56
    {DType::Q5_1, 4.6e-2},  // (3.8e-2) / 6
    {DType::Q5_0, 5.2e-2},  // (4.3e-2) / 5.5
    {DType::Q5_K, 4.5e-2},  // (3.7e-2) / 5.5
    {DType::Q4_1, 9.5e-2},  // (7.9e-2) / 5
    {DType::Q4_0, 0.105},   // (8.8e-2) / 4.5
    {DType::Q4_K, 9e-2},    // (7.4e-2) / 4.5
    {DType::IQ4_NL, 9e-2},  // (7.4e-2) / 4.5
    {DType::IQ4_XS, 9e-2},  // (7.4e-2) / 4.25
    {DType::MXFP4, 0.135},  // (0.11) / 4.25
    {DType::Q3_K, 0.175},   // (0.143) / 3.44
    {DType::Q2_K, 0.32},    // (0.267) / 2.63
};

TEST(QuantRoundtrip, ErrorWithinFormatBound) {
  for (DType t : all_weight_dtypes()) {
    for (uint32_t seed : {1u, 2u}) {
      std::vector<float> x = random_normal(4096, seed, seed == 1 ? 1.0f : 0.02f);
      double err = rel_rms(roundtrip(t, x), x);
      EXPECT_LE(err, kRoundtripBound.at(t)) << dtype_name(static_cast<uint32_t>(t)) << " seed " << seed;
      if (seed == 1) std::printf("  %-5s rel rms %.5f\n", dtype_name(static_cast<uint32_t>(t)).c_str(), err);
    }
  }
}

TEST(QuantRoundtrip, ZerosAndConstantsAreExactEnough) {
  for (DType t : all_weight_dtypes()) {
    std::vector<float> z(512, 0.0f);
    for (float v : roundtrip(t, z)) ASSERT_EQ(v, 0.0f) << dtype_name(static_cast<uint32_t>(t));
    std::vector<float> c(512, 0.75f);  // representable everywhere
    for (float v : roundtrip(t, c)) ASSERT_NEAR(v, 0.75f, 0.75f * 0.02f) << dtype_name(static_cast<uint32_t>(t));
  }
}

TEST(QuantRoundtrip, OutliersDoNotBreakTheBlock) {
  for (DType t : all_weight_dtypes()) {
    std::vector<float> x = random_normal(1024, 7);
    x[3] = 40.0f;
    x[700] = -55.0f;
    std::vector<float> y = roundtrip(t, x);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(std::isfinite(y[i]));
    // MXFP4's levels are a power of two times E2M1's 0 0.5 1 1.5 2 3 4 6:
    // neighbours up to 1.5x apart, so -55 lands on -48 or -64 at best.
    const float rel = t == DType::MXFP4 ? 0.15f : 0.07f;
    EXPECT_NEAR(y[700], -55.0f, 55.0f * rel) << dtype_name(static_cast<uint32_t>(t));
  }
}

// ---- hand-built blocks ----

void put_f16(uint8_t* p, float v) {
  uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

std::vector<float> decode(DType t, const uint8_t* block) {
  std::vector<float> y(static_cast<size_t>(dtype_info(t).block));
  dequantize_row(t, block, y.data(), static_cast<int64_t>(y.size()));
  return y;
}

TEST(HandBuiltBlock, Q4_0) {
  uint8_t b[18];
  put_f16(b, 0.5f);
  for (int i = 0; i < 16; ++i) b[2 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  std::vector<float> y = decode(DType::Q4_0, b);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(y[i], 0.5f * (i - 8)) << i;             // low nibble of qs[i]
    EXPECT_EQ(y[i + 16], 0.5f * (7 - i)) << i + 16;   // high nibble of qs[i]
  }
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[16], 3.5f);
}

TEST(HandBuiltBlock, Q4_1) {
  uint8_t b[20];
  put_f16(b, 0.25f);
  put_f16(b + 2, -1.0f);
  for (int i = 0; i < 16; ++i) b[4 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  std::vector<float> y = decode(DType::Q4_1, b);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(y[i], 0.25f * i - 1.0f) << i;
    EXPECT_EQ(y[i + 16], 0.25f * (15 - i) - 1.0f) << i + 16;
  }
}

TEST(HandBuiltBlock, Q5_0) {
  uint8_t b[22];
  put_f16(b, 1.0f);
  const uint32_t qh = 0x8000'0001u;  // bit 0 → element 0, bit 31 → element 31
  std::memcpy(b + 2, &qh, 4);
  for (int i = 0; i < 16; ++i) b[6 + i] = static_cast<uint8_t>(3 | (5 << 4));
  std::vector<float> y = decode(DType::Q5_0, b);
  EXPECT_EQ(y[0], 3.0f);      // 3 + 16 − 16
  EXPECT_EQ(y[1], -13.0f);    // 3 − 16
  EXPECT_EQ(y[15], -13.0f);
  EXPECT_EQ(y[16], -11.0f);   // 5 − 16
  EXPECT_EQ(y[30], -11.0f);
  EXPECT_EQ(y[31], 5.0f);     // 5 + 16 − 16
}

TEST(HandBuiltBlock, Q5_1) {
  uint8_t b[24];
  put_f16(b, 0.5f);
  put_f16(b + 2, 2.0f);
  const uint32_t qh = 0x0001'0002u;  // elements 1 and 16
  std::memcpy(b + 4, &qh, 4);
  for (int i = 0; i < 16; ++i) b[8 + i] = static_cast<uint8_t>(i | (1 << 4));
  std::vector<float> y = decode(DType::Q5_1, b);
  EXPECT_EQ(y[0], 2.0f);               // q 0
  EXPECT_EQ(y[1], 0.5f * 17 + 2.0f);   // q 1 + 16
  EXPECT_EQ(y[7], 0.5f * 7 + 2.0f);
  EXPECT_EQ(y[16], 0.5f * 17 + 2.0f);  // q 1 + 16
  EXPECT_EQ(y[17], 0.5f * 1 + 2.0f);
}

TEST(HandBuiltBlock, Q8_0) {
  uint8_t b[34];
  put_f16(b, 0.5f);
  for (int i = 0; i < 32; ++i) b[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(i * 8 - 128));
  std::vector<float> y = decode(DType::Q8_0, b);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * (i * 8 - 128)) << i;
}

// Scales sc = {1,2,3,4,17,33,50,63}, mins m = {5,6,7,8,20,40,60,18}, packed by hand.
const uint8_t kK4Scales[12] = {0x41, 0x82, 0xC3, 0xC4, 0x45, 0x86, 0xC7, 0x48, 0x41, 0x81, 0xC2, 0x2F};
const int kK4Sc[8] = {1, 2, 3, 4, 17, 33, 50, 63};
const int kK4M[8] = {5, 6, 7, 8, 20, 40, 60, 18};

TEST(HandBuiltBlock, Q4_K) {
  uint8_t b[144];
  put_f16(b, 1.0f);
  put_f16(b + 2, 0.5f);
  std::memcpy(b + 4, kK4Scales, 12);
  for (int i = 0; i < 128; ++i) b[16 + i] = static_cast<uint8_t>((i % 16) | (((i / 8) % 16) << 4));
  std::vector<float> y = decode(DType::Q4_K, b);
  // Element e: byte qs[32·(e/64) + e%32], low nibble in the first half of each 64.
  for (int e = 0; e < 256; ++e) {
    int byte = 32 * (e / 64) + e % 32, j = e / 32;
    int q = (e % 64) < 32 ? byte % 16 : (byte / 8) % 16;
    ASSERT_EQ(y[e], 1.0f * kK4Sc[j] * q - 0.5f * kK4M[j]) << e;
  }
  EXPECT_EQ(y[0], 0.0f - 2.5f);              // qs[0] low = 0, sc0 1, m0 5
  EXPECT_EQ(y[33], 2.0f * 0 - 3.0f);          // qs[1] high = 0, sc1 2, m1 6
  EXPECT_EQ(y[64 + 5], 3.0f * 5 - 3.5f);      // qs[37] low = 5, sc2 3
  EXPECT_EQ(y[128 + 31], 17.0f * 15 - 10.0f); // qs[95] low = 15, sc4 17, m4 20
  EXPECT_EQ(y[255], 63.0f * 15 - 9.0f);       // qs[127] high = 15, sc7 63, m7 18
}

TEST(HandBuiltBlock, Q5_K) {
  uint8_t b[176];
  put_f16(b, 1.0f);
  put_f16(b + 2, 0.5f);
  std::memcpy(b + 4, kK4Scales, 12);
  for (int l = 0; l < 32; ++l) b[16 + l] = static_cast<uint8_t>(l == 3 ? 0xFF : (1u << (l % 8)));
  for (int i = 0; i < 128; ++i) b[48 + i] = static_cast<uint8_t>((i % 16) | (((i / 8) % 16) << 4));
  std::vector<float> y = decode(DType::Q5_K, b);
  for (int e = 0; e < 256; ++e) {
    int byte = 32 * (e / 64) + e % 32, j = e / 32, l = e % 32;
    int q = (e % 64) < 32 ? byte % 16 : (byte / 8) % 16;
    int qh = l == 3 ? 0xFF : (1 << (l % 8));
    q += 16 * ((qh >> j) & 1);
    ASSERT_EQ(y[e], 1.0f * kK4Sc[j] * q - 0.5f * kK4M[j]) << e;
  }
  EXPECT_EQ(y[0], 1.0f * (0 + 16) - 2.5f);    // qh[0] bit 0 set
  EXPECT_EQ(y[3], 1.0f * (3 + 16) - 2.5f);    // qh[3] = 0xFF
  EXPECT_EQ(y[32 + 1], 2.0f * (0 + 16) - 3.0f);  // qh[1] bit 1: sub-block 1
  EXPECT_EQ(y[32 + 2], 2.0f * 0 - 3.0f);      // qh[2] bit 2 only
  EXPECT_EQ(y[224 + 7], 63.0f * (12 + 16) - 9.0f);  // qs[103] high = 12, qh[7] bit 7
}

TEST(HandBuiltBlock, Q6_K) {
  uint8_t b[210];
  for (int i = 0; i < 128; ++i) b[i] = static_cast<uint8_t>((i % 16) | ((15 - i % 16) << 4));
  for (int i = 0; i < 64; ++i) b[128 + i] = static_cast<uint8_t>(i % 4 == 0 ? 0xE4 : 0x00);  // g→g
  for (int s = 0; s < 16; ++s) b[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(s - 8));
  put_f16(b + 208, 0.5f);
  std::vector<float> y = decode(DType::Q6_K, b);
  for (int e = 0; e < 256; ++e) {
    int h = e / 128, g = (e % 128) / 32, l = e % 32;
    int byte = 64 * h + l + 32 * (g & 1);
    int low = g < 2 ? byte % 16 : 15 - byte % 16;
    int high = (32 * h + l) % 4 == 0 ? g : 0;  // 0xE4 = 0b11'10'01'00: bits 2g..2g+1 = g
    ASSERT_EQ(y[e], 0.5f * (e / 16 - 8) * (low + 16 * high - 32)) << e;
  }
  EXPECT_EQ(y[0], 0.5f * -8 * (0 - 32));        // ql[0] low 0, qh[0] bits 0–1 = 0
  EXPECT_EQ(y[32], 0.5f * -6 * (0 + 16 - 32));  // ql[32] low 0, qh[0] bits 2–3 = 1
  EXPECT_EQ(y[64], 0.5f * -4 * (15 + 32 - 32)); // ql[0] high 15, qh[0] bits 4–5 = 2
  EXPECT_EQ(y[96 + 4], 0.5f * -2 * (11 + 48 - 32));  // ql[36] high 11, qh[4] bits 6–7 = 3
  EXPECT_EQ(y[255], 0.5f * 7 * (0 - 32));       // ql[127] high 0, qh[63] 0
}

// ---- dot_row ----

TEST(DotRow, EqualsDotOfDequantized) {
  for (DType t : all_weight_dtypes()) {
    for (int64_t n : {256, 512 + 256}) {
      std::vector<float> w = random_normal(n, 11), x = random_normal(n, 12);
      std::vector<uint8_t> q = quantize(t, w);
      std::vector<float> wd(static_cast<size_t>(n));
      dequantize_row(t, q.data(), wd.data(), n);
      double ref = 0, mag = 0;
      for (int64_t i = 0; i < n; ++i) {
        ref += static_cast<double>(wd[i]) * x[i];
        mag += std::fabs(static_cast<double>(wd[i]) * x[i]);
      }
      EXPECT_NEAR(dot_row(t, q.data(), x.data(), n), ref, 1e-5 * mag) << dtype_name(static_cast<uint32_t>(t));
    }
  }
}

// ---- bad arguments ----

TEST(BadArguments, PartialBlockThrows) {
  std::vector<float> x(300, 1.0f);
  std::vector<uint8_t> buf(2000);
  EXPECT_THROW(quantize_row(DType::Q4_0, x.data(), buf.data(), 33), Error);
  EXPECT_THROW(dequantize_row(DType::Q4_K, buf.data(), x.data(), 128), Error);
  EXPECT_THROW(dot_row(DType::Q6_K, buf.data(), x.data(), 300), Error);
}

TEST(BadArguments, UnsupportedDtypeThrowsNamingIt) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> buf(2000);
  for (DType t : {DType::IQ2_XXS, DType::IQ3_S, DType::TQ1_0, DType::Q8_K, DType::I32, static_cast<DType>(40)}) {  // 40: nvfp4
    EXPECT_FALSE(weight_dtype_supported(t));
    try {
      dequantize_row(t, buf.data(), x.data(), 256);
      ADD_FAILURE() << "no error for " << dtype_name(static_cast<uint32_t>(t));
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(dtype_name(static_cast<uint32_t>(t))), std::string::npos) << e.what();
    }
    EXPECT_THROW(quantize_row(t, x.data(), buf.data(), 256), Error);
    EXPECT_THROW(dot_row(t, buf.data(), x.data(), 256), Error);
  }
  for (DType t : all_weight_dtypes()) EXPECT_TRUE(weight_dtype_supported(t));
}

}  // namespace
}  // namespace og::kernels

namespace og::kernels {
namespace {

// The encoders' rounding is std::lround exactly: halves, their neighbours,
// every magnitude, and the huge values the callers clamp.
TEST(RoundHalfAway, EqualsLround) {
  std::vector<float> xs = {0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 0.49999997f, -0.49999997f,
                           8388607.5f, -8388607.5f, 8388608.0f, 16777217.0f, 1073741823.0f, 1e9f, -1e9f, 3e9f,
                           -3e9f, 1e30f, -1e30f};
  for (int k = -300; k <= 300; ++k) {
    const float h = k + 0.5f;
    xs.push_back(h);
    xs.push_back(std::nextafter(h, 1e9f));
    xs.push_back(std::nextafter(h, -1e9f));
  }
  uint32_t s = 12345;
  for (int i = 0; i < 200000; ++i) {
    s = s * 1664525u + 1013904223u;
    const float u = static_cast<float>(s >> 8) / 16777216.0f;
    xs.push_back((u - 0.5f) * std::pow(2.0f, static_cast<float>(i % 40 - 8)));
  }
  for (float x : xs) ASSERT_EQ(ref::round_half_away(x), std::lround(x)) << x;
}

}  // namespace
}  // namespace og::kernels
