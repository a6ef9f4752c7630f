// Reference elementwise ops (RMSNorm, RoPE, softmax, gates, add, scale),
// matmul and get_row against naive loops, and their bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/test_util.h"

namespace og::kernels {
namespace {

using testing::all_weight_dtypes;
using testing::random_normal;

TEST(RmsNorm, KnownValuesWithAndWithoutWeight) {
  std::vector<float> x = {1, 2, 3, 4}, w = {1, 0.5f, 2, -1}, y(4);
  const float inv = 1.0f / std::sqrt((1 + 4 + 9 + 16) / 4.0f + 1e-5f);
  rms_norm(x.data(), w.data(), 1e-5f, 4, y.data());
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], x[i] * inv * w[i], 1e-6f);
  rms_norm(x.data(), nullptr, 1e-5f, 4, x.data());  // aliasing allowed
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(x[i], (i + 1) * inv, 1e-6f);
  EXPECT_THROW(rms_norm(x.data(), nullptr, 1e-5f, 0, y.data()), Error);
}

std::vector<float> inv_freqs(int64_t n_rot, double base) {
  std::vector<float> f(static_cast<size_t>(n_rot / 2));
  for (int64_t i = 0; i < n_rot / 2; ++i) f[i] = static_cast<float>(std::pow(base, -2.0 * i / n_rot));
  return f;
}

TEST(Rope, PreservesNormAndPassesUnrotatedDims) {
  for (bool inter : {true, false}) {
    std::vector<float> x = random_normal(64, 3), y = x;
    std::vector<float> f = inv_freqs(48, 10000.0);
    rope(y.data(), 64, 48, 1234, f.data(), inter);
    double n0 = 0, n1 = 0;
    for (int i = 0; i < 64; ++i) {
      n0 += x[i] * x[i];
      n1 += y[i] * y[i];
    }
    EXPECT_NEAR(n0, n1, 1e-4 * n0);
    for (int i = 48; i < 64; ++i) EXPECT_EQ(x[i], y[i]);
    std::vector<float> z = x;
    rope(z.data(), 64, 48, 0, f.data(), inter);  // position 0: identity
    for (int i = 0; i < 64; ++i) EXPECT_FLOAT_EQ(z[i], x[i]);
  }
}

TEST(Rope, RotateHalfEqualsInterleavedAfterPermutingDims) {
  const int64_t d = 32;
  std::vector<float> f = inv_freqs(d, 500000.0);
  std::vector<float> a = random_normal(d, 5), b(d);
  for (int64_t i = 0; i < d / 2; ++i) {  // interleaved pair (2i, 2i+1) ↔ rotate-half (i, i + d/2)
    b[i] = a[2 * i];
    b[i + d / 2] = a[2 * i + 1];
  }
  rope(a.data(), d, d, 77, f.data(), true);
  rope(b.data(), d, d, 77, f.data(), false);
  for (int64_t i = 0; i < d / 2; ++i) {
    EXPECT_FLOAT_EQ(b[i], a[2 * i]);
    EXPECT_FLOAT_EQ(b[i + d / 2], a[2 * i + 1]);
  }
}

// The forward pass computes a position's angles once and rotates every head
// with them: the same bits as rope() per head, at small and large positions,
// in both layouts, with pass-through dims left alone.
TEST(Rope, AnglesOnceThenApplyPerHeadEqualsRopeBitForBit) {
  const int64_t hd = 64, n_rot = 48, heads = 5;
  const std::vector<float> f = inv_freqs(n_rot, 500000.0);
  for (bool inter : {true, false})
    for (int64_t pos : {0, 1, 77, 4095, 131071}) {
      std::vector<float> a = random_normal(hd * heads, static_cast<uint32_t>(pos + 7)), b = a;
      std::vector<double> cs(n_rot);
      rope_angles(pos, n_rot, f.data(), cs.data());
      for (int64_t h = 0; h < heads; ++h) {
        rope(a.data() + h * hd, hd, n_rot, pos, f.data(), inter);
        rope_apply(b.data() + h * hd, n_rot, cs.data(), inter);
      }
      for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "pos " << pos << " element " << i;
    }
  std::vector<double> cs(4);
  std::vector<float> x(4);
  EXPECT_THROW(rope_angles(1, 3, f.data(), cs.data()), Error);
  EXPECT_THROW(rope_apply(x.data(), 3, cs.data(), true), Error);
}

TEST(Rope, KnownRotation) {
  std::vector<float> x = {1, 0, 0, 1};
  std::vector<float> f = {1.0f, 0.5f};
  rope(x.data(), 4, 4, 2, f.data(), true);  // pair 0 by 2 rad, pair 1 by 1 rad
  EXPECT_NEAR(x[0], std::cos(2.0), 1e-6);
  EXPECT_NEAR(x[1], std::sin(2.0), 1e-6);
  EXPECT_NEAR(x[2], -std::sin(1.0), 1e-6);
  EXPECT_NEAR(x[3], std::cos(1.0), 1e-6);
  EXPECT_THROW(rope(x.data(), 4, 3, 1, f.data(), true), Error);
  EXPECT_THROW(rope(x.data(), 4, 6, 1, f.data(), true), Error);
}

TEST(Softmax, SumsToOneAndIsStableForLargeInputs) {
  std::vector<float> x = {1000.0f, 1001.0f, 999.0f, -1e30f, -std::numeric_limits<float>::infinity()};
  softmax(x.data(), 5);
  double s = 0;
  for (float v : x) {
    EXPECT_TRUE(std::isfinite(v));
    s += v;
  }
  EXPECT_NEAR(s, 1.0, 1e-6);
  const double e = std::exp(1.0);
  EXPECT_NEAR(x[1], e / (1 + e + 1 / e), 1e-6);
  EXPECT_EQ(x[3], 0.0f);
  EXPECT_EQ(x[4], 0.0f);
  std::vector<float> r = random_normal(1000, 9, 10.0f);
  softmax(r.data(), 1000);
  s = 0;
  for (float v : r) s += v;
  EXPECT_NEAR(s, 1.0, 1e-5);
}

TEST(Softmax, FullyMaskedRowIsZero) {
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> x = {ninf, ninf, ninf};
  softmax(x.data(), 3);
  for (float v : x) EXPECT_EQ(v, 0.0f);
}

TEST(Gates, SiluAndGeluTanhKnownValues) {
  std::vector<float> g = {1.0f, -2.0f, 0.0f, 3.0f}, up = {2.0f, 1.0f, 5.0f, -1.0f};
  std::vector<float> s = g, t = g;
  silu_mul(s.data(), up.data(), 4);
  EXPECT_NEAR(s[0], 0.7310586f * 2, 1e-6f);
  EXPECT_NEAR(s[1], -2.0f / (1 + std::exp(2.0f)), 1e-6f);
  EXPECT_EQ(s[2], 0.0f);
  gelu_tanh_mul(t.data(), up.data(), 4);
  EXPECT_NEAR(t[0], 0.8411920f * 2, 1e-6f);  // PyTorch gelu(1, approximate="tanh")
  EXPECT_NEAR(t[1], -0.0454023f, 1e-6f);
  EXPECT_NEAR(t[3], -2.9963627f, 1e-6f);
}

TEST(Elementwise, AddAndScale) {
  std::vector<float> y = {1, 2, 3}, x = {0.5f, -2, 4};
  add(y.data(), x.data(), 3);
  EXPECT_EQ(y, (std::vector<float>{1.5f, 0, 7}));
  scale(y.data(), 2.0f, 3);
  EXPECT_EQ(y, (std::vector<float>{3, 0, 14}));
}

// ---- matmul / get_row ----

struct Weight {
  std::vector<float> deq;      // [n_out, n_in] dequantized
  std::vector<uint8_t> bytes;  // [n_out, n_in] in dtype
  TensorView view;
};

Weight make_weight(DType t, int64_t n_out, int64_t n_in, uint32_t seed) {
  Weight w;
  std::vector<float> src = random_normal(n_out * n_in, seed, 0.5f);
  const int64_t rb = dtype_row_bytes(t, n_in);
  w.bytes.resize(static_cast<size_t>(n_out * rb));
  w.deq.resize(src.size());
  for (int64_t r = 0; r < n_out; ++r) {
    quantize_row(t, src.data() + r * n_in, w.bytes.data() + r * rb, n_in);
    dequantize_row(t, w.bytes.data() + r * rb, w.deq.data() + r * n_in, n_in);
  }
  w.view = TensorView{w.bytes.data(), t, {n_out, n_in}, "test.weight"};
  return w;
}

TEST(Matmul, ReferenceEqualsNaiveLoopOverDequantizedWeights) {
  for (DType t : all_weight_dtypes()) {
    const int64_t n_in = 512, n_out = 37;
    Weight w = make_weight(t, n_out, n_in, 21);
    for (int64_t n_x : {1, 3}) {
      std::vector<float> x = random_normal(n_x * n_in, 22), y(static_cast<size_t>(n_x * n_out));
      matmul_with(kernel_table(Isa::kScalar), w.view, x.data(), n_x, y.data());
      for (int64_t i = 0; i < n_x; ++i)
        for (int64_t r = 0; r < n_out; ++r) {
          double ref = 0, mag = 0;
          for (int64_t c = 0; c < n_in; ++c) {
            ref += static_cast<double>(w.deq[r * n_in + c]) * x[i * n_in + c];
            mag += std::fabs(static_cast<double>(w.deq[r * n_in + c]) * x[i * n_in + c]);
          }
          ASSERT_NEAR(y[i * n_out + r], ref, 1e-5 * mag) << dtype_name(static_cast<uint32_t>(t));
        }
    }
  }
}

TEST(Matmul, PublicEntryUsesTheActiveTable) {
  for (DType t : all_weight_dtypes()) {
    Weight w = make_weight(t, 9, 256, 23);
    std::vector<float> x = random_normal(2 * 256, 24), y(18), ya(18);
    matmul(w.view, x.data(), 2, y.data());
    matmul_with(active_table(), w.view, x.data(), 2, ya.data());
    EXPECT_EQ(y, ya) << dtype_name(static_cast<uint32_t>(t));
  }
}

TEST(Matmul, BadWeightsThrowNamingTheTensor) {
  std::vector<uint8_t> buf(4096);
  std::vector<float> x(256), y(16);
  TensorView q3{buf.data(), DType::IQ3_S, {4, 256}, "blk.0.ffn_up.weight"};
  try {
    matmul(q3, x.data(), 1, y.data());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.ffn_up.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("iq3_s"), std::string::npos) << e.what();
  }
  TensorView one_d{buf.data(), DType::F32, {256}, "v"};
  EXPECT_THROW(matmul(one_d, x.data(), 1, y.data()), Error);
  TensorView partial{buf.data(), DType::Q4_0, {2, 48}, "p"};
  EXPECT_THROW(matmul(partial, x.data(), 1, y.data()), Error);
  TensorView ok{buf.data(), DType::F32, {2, 8}, "ok"};
  EXPECT_THROW(matmul(ok, x.data(), -1, y.data()), Error);
}

TEST(GetRow, CopiesOneDequantizedRowAndChecksRange) {
  for (DType t : all_weight_dtypes()) {
    Weight w = make_weight(t, 5, 256, 31);
    std::vector<float> row(256);
    get_row(w.view, 3, row.data());
    for (int c = 0; c < 256; ++c) ASSERT_EQ(row[c], w.deq[3 * 256 + c]);
    EXPECT_THROW(get_row(w.view, 5, row.data()), Error);
    EXPECT_THROW(get_row(w.view, -1, row.data()), Error);
  }
}

TEST(Info, IsaNameIsKnown) {
  std::string n = isa_name();
  EXPECT_TRUE(n == "scalar" || n == "avx2" || n == "avxvnni" || n == "avx512" || n == "neon" || n == "dotprod" ||
              n == "i8mm")
      << n;
}

}  // namespace
}  // namespace og::kernels

namespace og::kernels {
namespace {

// The benchmark's machine probes report positive rates (never a speed bound:
// the machine is shared) and refuse a useless buffer.
TEST(Probes, BandwidthAndPeakArePositive) {
  std::vector<uint64_t> buf(1 << 17, 1);
  EXPECT_GT(read_bandwidth(buf.data(), static_cast<int64_t>(buf.size() * 8), 2), 0.0);
  EXPECT_THROW(read_bandwidth(buf.data(), 8, 1), Error);
  EXPECT_GT(madd_peak(true, 0.01), 0.0);
  EXPECT_GT(madd_peak(false, 0.01), 0.0);
}

// Every ISA's read probe reads every word once: its sum equals the scalar
// twin's for lengths with tails (not a whole number of steps) and starts off
// any alignment, and a length that is not whole words is refused.
TEST(Probes, EveryIsaReadsEveryWordOnce) {
  std::vector<uint8_t> buf(9000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (Isa isa : available_isas()) {
    const Isa before = set_active_isa(isa);
    for (int64_t off : {0, 1, 8, 24, 63})
      for (int64_t bytes : {0, 8, 56, 64, 256, 264, 1024, 4096 - 8, 8000}) {
        uint64_t want = 0;
        for (int64_t i = 0; i < bytes / 8; ++i) {
          uint64_t w = 0;
          std::memcpy(&w, buf.data() + off + 8 * i, 8);
          want += w;
        }
        EXPECT_EQ(read_sum(buf.data() + off, bytes), want) << isa_str(isa) << " off " << off << " bytes " << bytes;
      }
    EXPECT_THROW(read_sum(buf.data(), 12), Error);
    set_active_isa(before);
  }
}

}  // namespace
}  // namespace og::kernels
