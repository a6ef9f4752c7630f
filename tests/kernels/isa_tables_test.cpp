// Which kernel tables this run exercised: one test per table this build has
// (x86-64: scalar, avx2, avxvnni, avx512; AArch64: scalar, neon, dotprod,
// i8mm), skipped with the reason when the CPU lacks it, so a run on a machine
// without AVX-512 (or under an emulated CPU without i8mm) says so instead of
// passing silently. The other tests in this folder loop over
// available_isas(); this file names what that list was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/arch.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/test_util.h"

#if defined(__linux__) && defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace og::kernels {
namespace {

using testing::all_weight_dtypes;
using testing::random_normal;
using testing::rel_rms;

std::string names(const std::vector<Isa>& v) {
  std::string s;
  for (Isa isa : v) s += std::string(s.empty() ? "" : " ") + isa_str(isa);
  return s.empty() ? "none" : s;
}

TEST(IsaTables, SayWhichRan) {
  std::vector<Isa> ran = available_isas(), skipped;
  for (Isa isa : compiled_isas())
    if (!isa_available(isa)) skipped.push_back(isa);
  std::printf("[ isa ] tables exercised: %s; skipped (this CPU lacks them): %s\n", names(ran).c_str(),
              names(skipped).c_str());
  ASSERT_FALSE(ran.empty());
  EXPECT_EQ(ran.front(), Isa::kScalar);
  const std::vector<Isa> compiled = compiled_isas();
  for (Isa isa : ran) EXPECT_NE(std::find(compiled.begin(), compiled.end(), isa), compiled.end()) << isa_str(isa);
  // Without OFFGRAPH_ISA the best table the CPU has is the one in use.
  if (!std::getenv("OFFGRAPH_ISA")) {
    EXPECT_EQ(active_table().isa, ran.back()) << isa_summary();
  }
}

// Another architecture's instruction sets are known names (OFFGRAPH_ISA
// refuses them as unsupported, not unknown) but never available.
TEST(IsaTables, OtherArchitecturesAreNeverAvailable) {
  const std::vector<Isa> own = compiled_isas();
  int foreign = 0;
  for (int i = 0; i < kNumIsas; ++i) {
    const Isa isa = static_cast<Isa>(i);
    EXPECT_NE(std::string(isa_str(isa)), "") << i;
    if (std::find(own.begin(), own.end(), isa) != own.end()) continue;
    ++foreign;
    EXPECT_FALSE(isa_available(isa)) << isa_str(isa);
    EXPECT_THROW(kernel_table(isa), Error) << isa_str(isa);
  }
  EXPECT_EQ(foreign, kNumIsas - static_cast<int>(own.size()));
  EXPECT_GT(foreign, 0);
}

// The AArch64 tables' own kernels (arm/matmul_neon.cpp, elementwise_neon.cpp):
// the matmul of every plain weight dtype (F32, F16, BF16 and Q8_0 in NEON;
// the others dequantized by the reference, dotted in NEON), the F32, F16 and
// BF16 dot products, the element-wise ops and attention (arm/attend_neon.cpp)
// over f32/f16/bf16 rows and blocked keys and q8_0 caches (docs/arm.md).
TEST(IsaTables, ArmTablesHaveNeonKernels) {
  const std::vector<Isa> compiled = compiled_isas();
  if (std::find(compiled.begin(), compiled.end(), Isa::kNeon) == compiled.end())
    GTEST_SKIP() << "not an AArch64 build (EveryVectorIsaHasItsOwnKernels covers the x86 tables)";
  const KernelTable& ref = kernel_table(Isa::kScalar);
  int checked = 0;
  for (Isa isa : available_isas()) {
    if (isa == Isa::kScalar) continue;
    const KernelTable& k = kernel_table(isa);
    for (DType t : all_weight_dtypes())
      EXPECT_NE(k.matmul[static_cast<int>(t)].rows, ref.matmul[static_cast<int>(t)].rows)
          << isa_str(isa) << " " << dtype_info(t).name;
    EXPECT_NE(k.dot[static_cast<int>(DType::F32)], nullptr) << isa_str(isa);
    EXPECT_NE(k.dot[static_cast<int>(DType::F16)], nullptr) << isa_str(isa);
    EXPECT_NE(k.dot[static_cast<int>(DType::BF16)], nullptr) << isa_str(isa);
    // The element-wise ops (arm/elementwise_neon.cpp).
    EXPECT_NE(k.rms_norm, ref.rms_norm) << isa_str(isa);
    EXPECT_NE(k.softmax, ref.softmax) << isa_str(isa);
    EXPECT_NE(k.silu_mul, ref.silu_mul) << isa_str(isa);
    EXPECT_NE(k.gelu_tanh_mul, ref.gelu_tanh_mul) << isa_str(isa);
    EXPECT_NE(k.add, ref.add) << isa_str(isa);
    EXPECT_NE(k.scale, ref.scale) << isa_str(isa);
    EXPECT_NE(k.f32_to_f16_row, ref.f32_to_f16_row) << isa_str(isa);
    // Attention over f32/f16/bf16/q8_0 rows and f32/f16/bf16 blocked keys (arm/attend_neon.cpp).
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
      EXPECT_NE(attend_kernels_with(k, t).scores, attend_kernels_with(ref, t).scores) << isa_str(isa);
      EXPECT_NE(attend_kernels_with(k, t).accum, attend_kernels_with(ref, t).accum) << isa_str(isa);
      EXPECT_NE(attend_kernels_with(k, t).exp_sum, attend_kernels_with(ref, t).exp_sum) << isa_str(isa);
      EXPECT_NE(attend_kernels_with(k, t).max, attend_kernels_with(ref, t).max) << isa_str(isa);
      if (t != DType::Q8_0) {
        EXPECT_NE(attend_kernels_with(k, t).scores_blocked, attend_kernels_with(ref, t).scores_blocked)
            << isa_str(isa);
      }
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "this CPU has none of the AArch64 vector tables";
}

// The types the dot-product and int8-matrix tables have int8 kernels of
// their own for (arm/matmul_dotprod.cpp, arm/matmul_i8mm.cpp).
const std::vector<DType>& arm_int8_dtypes() {
  static const std::vector<DType> v = {DType::Q8_0, DType::Q4_0,   DType::Q4_1,   DType::Q5_0,
                                       DType::Q5_1, DType::Q4_K,   DType::Q5_K,   DType::Q6_K,
                                       DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4,  DType::Q2_K,
                                       DType::Q3_K};
  return v;
}

bool has(const std::vector<Isa>& v, Isa isa) { return std::find(v.begin(), v.end(), isa) != v.end(); }

// dotprod replaces neon's matmul of these types (sdot), i8mm replaces
// dotprod's (smmla): each table runs kernels of its own, not the one before.
TEST(IsaTables, ArmInt8TablesHaveTheirOwnKernels) {
  const std::vector<Isa> avail = available_isas();
  if (!has(compiled_isas(), Isa::kNeon)) GTEST_SKIP() << "not an AArch64 build";
  if (!has(avail, Isa::kDotprod)) GTEST_SKIP() << "this CPU lacks the dotprod table (" << isa_summary() << ")";
  for (DType t : arm_int8_dtypes()) {
    const int id = static_cast<int>(t);
    EXPECT_NE(kernel_table(Isa::kDotprod).matmul[id].rows, kernel_table(Isa::kNeon).matmul[id].rows)
        << dtype_info(t).name;
    if (has(avail, Isa::kI8mm)) {
      EXPECT_NE(kernel_table(Isa::kI8mm).matmul[id].rows, kernel_table(Isa::kDotprod).matmul[id].rows)
          << dtype_info(t).name;
    }
  }
  if (!has(avail, Isa::kI8mm)) GTEST_SKIP() << "dotprod checked; this CPU lacks the i8mm table (" << isa_summary() << ")";
}

// smmla sums the same int8 products as sdot and both fold them with the same
// float steps, so the i8mm table's outputs equal the dotprod table's bit for
// bit, for every pairing of weight rows and activation rows (odd counts
// leave one of each to the sdot path); both stay close to the reference over
// several super-blocks.
TEST(IsaTables, I8mmEqualsDotprodBitForBit) {
  const std::vector<Isa> avail = available_isas();
  if (!has(compiled_isas(), Isa::kNeon)) GTEST_SKIP() << "not an AArch64 build";
  if (!has(avail, Isa::kI8mm) || !has(avail, Isa::kDotprod))
    GTEST_SKIP() << "this CPU lacks the dotprod or i8mm table (" << isa_summary() << ")";
  for (DType t : arm_int8_dtypes()) {
    std::vector<float> all_b, all_ref;  // the error is measured over every shape: a few outputs alone are noisy
    for (int64_t n_out : {int64_t{1}, int64_t{6}, int64_t{7}})
      for (int64_t n_x : {int64_t{1}, int64_t{2}, int64_t{3}}) {
        const int64_t n_in = 1024, rb = dtype_row_bytes(t, n_in);
        std::vector<float> src = random_normal(n_out * n_in, 11, 0.3f), x = random_normal(n_x * n_in, 12);
        std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
        for (int64_t r = 0; r < n_out; ++r) quantize_row(t, src.data() + r * n_in, bytes.data() + r * rb, n_in);
        const TensorView w{bytes.data(), t, {n_out, n_in}, "w"};
        std::vector<float> a(static_cast<size_t>(n_x * n_out)), b(a.size()), ref(a.size());
        matmul_with(kernel_table(Isa::kI8mm), w, x.data(), n_x, a.data());
        matmul_with(kernel_table(Isa::kDotprod), w, x.data(), n_x, b.data());
        matmul_with(kernel_table(Isa::kScalar), w, x.data(), n_x, ref.data());
        const std::string what = std::string(dtype_info(t).name) + " n_out " + std::to_string(n_out) + " n_x " +
                                 std::to_string(n_x);
        for (size_t k = 0; k < a.size(); ++k) ASSERT_EQ(a[k], b[k]) << what << " element " << k;
        all_b.insert(all_b.end(), b.begin(), b.end());
        all_ref.insert(all_ref.end(), ref.begin(), ref.end());
      }
    EXPECT_LT(rel_rms(all_b, all_ref), 2e-2) << dtype_info(t).name;
  }
}

// n_out rows of t (n_in each) quantized from random values, as a file holds them.
std::vector<uint8_t> quantized_rows(DType t, int64_t n_out, int64_t n_in, uint32_t seed) {
  const int64_t rb = dtype_row_bytes(t, n_in);
  const std::vector<float> src = random_normal(n_out * n_in, seed, 0.3f);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) quantize_row(t, src.data() + r * n_in, bytes.data() + r * rb, n_in);
  return bytes;
}

// The dotprod and i8mm tables repack Q8_0, Q4_0, IQ4_NL and MXFP4 at load to
// 8 rows interleaved, Q4_K and Q6_K to 16 (arm/q8_groups_arm.inc), and Q5_K
// to its regrouped blocks, Q5_K_R (arm/matmul_q5k_dotprod.cpp: 4 rows per
// vector after the sdot, odd row counts fill the tile). Each lane sums its block's
// integers exactly and folds them as the plain kernels do, so the matmul over
// the repacked weights equals the same table's over the plain ones bit for
// bit (the plain kernels are held to the reference by EachTable and
// I8mmEqualsDotprodBitForBit), for groups and plain tail rows (n_out % 8 or 16),
// odd activation counts (smmla pairs the last row with itself), and a shape
// large enough to split the rows over the pool; a batch equals its rows alone.
TEST(IsaTables, ArmInterleavedLayoutsEqualPlainBitForBit) {
  const std::vector<Isa> avail = available_isas();
  if (!has(compiled_isas(), Isa::kNeon)) GTEST_SKIP() << "not an AArch64 build";
  if (!has(avail, Isa::kDotprod)) GTEST_SKIP() << "this CPU lacks the dotprod table (" << isa_summary() << ")";
  const std::pair<DType, DType> layouts[] = {{DType::Q8_0, DType::Q8_0_R},
                                             {DType::Q4_0, DType::Q4_0_R},
                                             {DType::IQ4_NL, DType::IQ4_NL_R},
                                             {DType::MXFP4, DType::MXFP4_R},
                                             {DType::Q4_K, DType::Q4_K_R16},
                                             {DType::Q6_K, DType::Q6_K_R16},
                                             {DType::Q5_K, DType::Q5_K_R}};
  struct Shape {
    int64_t n_out, n_in, n_x;
  };
  const Shape shapes[] = {{8, 64, 1}, {13, 96, 2}, {16, 32, 3}, {23, 160, 5}, {35, 512, 4}, {67, 1024, 8}};
  set_num_threads(2);
  for (Isa isa : {Isa::kDotprod, Isa::kI8mm}) {
    if (!has(avail, isa)) continue;
    const KernelTable& k = kernel_table(isa);
    for (const auto& [file, layout] : layouts) {
      const std::string name = std::string(isa_str(isa)) + " " + dtype_info(layout).name;
      ASSERT_EQ(k.repack_to[static_cast<int>(file)], static_cast<int>(layout)) << name;
      EXPECT_NE(k.matmul[static_cast<int>(layout)].rows, kernel_table(Isa::kScalar).matmul[static_cast<int>(layout)].rows)
          << name;
      for (Shape sh : shapes) {
        const int64_t block = dtype_info(file).block;
        sh.n_in = (sh.n_in + block - 1) / block * block;  // Q4_K: one or more super-blocks
        std::vector<uint8_t> bytes = quantized_rows(file, sh.n_out, sh.n_in, 31 + static_cast<uint32_t>(sh.n_out));
        const TensorView plain{bytes.data(), file, {sh.n_out, sh.n_in}, "plain"};
        std::vector<uint8_t> packed = bytes;
        repack_rows(file, layout, packed.data(), sh.n_out, sh.n_in);
        const TensorView inter{packed.data(), layout, {sh.n_out, sh.n_in}, "inter"};
        const std::vector<float> x = random_normal(sh.n_x * sh.n_in, 32 + static_cast<uint32_t>(sh.n_x));
        std::vector<float> want(static_cast<size_t>(sh.n_x * sh.n_out)), got(want.size(), NAN), one(static_cast<size_t>(sh.n_out));
        matmul_with(k, plain, x.data(), sh.n_x, want.data());
        matmul_with(k, inter, x.data(), sh.n_x, got.data());
        const std::string what = name + " n_out " + std::to_string(sh.n_out) + " n_x " + std::to_string(sh.n_x);
        for (size_t e = 0; e < got.size(); ++e) ASSERT_EQ(got[e], want[e]) << what << " element " << e;
        for (int64_t i = 0; i < sh.n_x; ++i) {
          matmul_with(k, inter, x.data() + i * sh.n_in, 1, one.data());
          for (int64_t r = 0; r < sh.n_out; ++r) ASSERT_EQ(one[r], got[i * sh.n_out + r]) << what << " alone, row " << i;
        }
      }
    }
  }
  if (!has(avail, Isa::kI8mm)) GTEST_SKIP() << "dotprod checked; this CPU lacks the i8mm table (" << isa_summary() << ")";
}

// bench's probes (kernel_table.h): every ARM table has a read probe whose sum
// equals the words' sum (a length that is not a multiple of the 64-byte
// loop, an unaligned start), and its own multiply-add loop (neon smlal,
// dotprod sdot, i8mm smmla for int8) that counts what it did.
TEST(IsaTables, ArmTablesHaveTheirOwnProbes) {
  const std::vector<Isa> avail = available_isas();
  if (!has(compiled_isas(), Isa::kNeon)) GTEST_SKIP() << "not an AArch64 build";
  std::vector<uint8_t> buf(8 * 203 + 8);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 37 + 11);
  uint64_t want = 0, want7 = 0;  // 203 words and the first 7 (shorter than one round of the loop)
  for (int64_t w = 0; w < 203; ++w) {
    uint64_t v;
    std::memcpy(&v, buf.data() + 4 + 8 * w, 8);
    want += v;
    if (w < 7) want7 += v;
  }
  const int64_t per_iter[] = {0, 0, 0, 0, 8 * 8, 8 * 16, 8 * 32};  // int8 products per round, by Isa
  for (Isa isa : {Isa::kNeon, Isa::kDotprod, Isa::kI8mm}) {
    if (!has(avail, isa)) continue;
    const KernelTable& k = kernel_table(isa);
    ASSERT_NE(k.read_sum, nullptr) << isa_str(isa);
    ASSERT_NE(k.madd_loop, nullptr) << isa_str(isa);
    EXPECT_EQ(k.read_sum(buf.data() + 4, 8 * 203), want) << isa_str(isa);
    EXPECT_EQ(k.read_sum(buf.data() + 4, 8 * 7), want7) << isa_str(isa);
    EXPECT_EQ(k.madd_loop(false, 100), 100 * 8 * 4) << isa_str(isa);
    EXPECT_EQ(k.madd_loop(true, 100), 100 * per_iter[static_cast<int>(isa)]) << isa_str(isa);
  }
}

// Whether the running CPU reports FEAT_BF16 (Linux HWCAP2 bit 14).
bool cpu_has_bf16() {
#if defined(__linux__) && defined(__aarch64__)
  return (getauxval(AT_HWCAP2) & (1UL << 14)) != 0;
#else
  return false;
#endif
}

// y = W·x in double over the bf16 weights as stored.
double exact_dot(const uint8_t* row, const float* x, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) {
    uint16_t b;
    std::memcpy(&b, row + 2 * k, 2);
    s += static_cast<double>(bf16_to_f32(b)) * x[k];
  }
  return s;
}

// BF16 weights in the i8mm table: bfmmla (arm/matmul_bf16.cpp) when the CPU
// has FEAT_BF16, else the f32 kernel the dotprod table has too. With bfmmla:
// within x86's vdpbf16ps bound of the exact product (2⁻⁸·Σ|w·x| +
// 1e-5·Σ|w·x|: activations rounded to bf16) over row tails (n_in not a
// multiple of 4 or 8), odd weight and activation row counts (paired with
// themselves) and a long row; a batch equal to its rows alone bit for bit;
// small integers (exact in bf16 and in every f32 sum) give the exact sum.
TEST(IsaTables, I8mmBf16UsesBfmmlaWhereTheCpuHasIt) {
  const std::vector<Isa> avail = available_isas();
  if (!has(compiled_isas(), Isa::kNeon)) GTEST_SKIP() << "not an AArch64 build";
  if (!has(avail, Isa::kI8mm)) GTEST_SKIP() << "this CPU lacks the i8mm table (" << isa_summary() << ")";
  const int bf = static_cast<int>(DType::BF16);
  const KernelTable& k = kernel_table(Isa::kI8mm);
  if (!cpu_has_bf16()) {
    EXPECT_EQ(k.matmul[bf].rows, kernel_table(Isa::kDotprod).matmul[bf].rows);
    GTEST_SKIP() << "this CPU has i8mm but not BF16: the i8mm table keeps the f32 BF16 kernel (checked)";
  }
  EXPECT_NE(k.matmul[bf].rows, kernel_table(Isa::kDotprod).matmul[bf].rows);
  int differs = 0;
  for (int64_t n_in : {int64_t{1}, int64_t{5}, int64_t{8}, int64_t{77}, int64_t{1000}})
    for (int64_t n_out : {int64_t{1}, int64_t{2}, int64_t{7}}) {
      const int64_t n_x = 9, rb = dtype_row_bytes(DType::BF16, n_in);
      std::vector<float> src = random_normal(n_out * n_in, 21 + uint32_t(n_in), 0.5f);
      std::vector<float> x = random_normal(n_x * n_in, 22 + uint32_t(n_out));
      std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
      for (int64_t r = 0; r < n_out; ++r) quantize_row(DType::BF16, src.data() + r * n_in, bytes.data() + r * rb, n_in);
      const TensorView w{bytes.data(), DType::BF16, {n_out, n_in}, "w"};
      std::vector<float> y(static_cast<size_t>(n_x * n_out)), plain(y.size()), one(static_cast<size_t>(n_out));
      matmul_with(k, w, x.data(), n_x, y.data());
      matmul_with(kernel_table(Isa::kDotprod), w, x.data(), n_x, plain.data());
      for (int64_t i = 0; i < n_x; ++i) {
        matmul_with(k, w, x.data() + i * n_in, 1, one.data());
        for (int64_t r = 0; r < n_out; ++r) {
          const float* xi = x.data() + i * n_in;
          double sabs = 0;
          for (int64_t c = 0; c < n_in; ++c) sabs += std::fabs(double(src[r * n_in + c]) * xi[c]);
          const double want = exact_dot(bytes.data() + r * rb, xi, n_in);
          const std::string at = "n_in " + std::to_string(n_in) + " n_out " + std::to_string(n_out) + " [" +
                                 std::to_string(i) + ", " + std::to_string(r) + "]";
          ASSERT_NEAR(y[i * n_out + r], want, std::ldexp(sabs, -8) + 1e-5 * sabs + 1e-6) << at;
          ASSERT_EQ(y[i * n_out + r], one[r]) << "batch vs alone, " << at;
          differs += y[i * n_out + r] != plain[i * n_out + r];
        }
      }
    }
  EXPECT_GT(differs, 0) << "bfmmla's outputs all equal the f32 kernel's: was it run?";
  // Small integers: every product and partial sum exact, so the exact answer.
  const int64_t n_in = 77, n_out = 3, n_x = 3, rb = dtype_row_bytes(DType::BF16, n_in);
  std::vector<float> wi(n_out * n_in), xi(n_x * n_in);
  for (size_t c = 0; c < wi.size(); ++c) wi[c] = float(int(c * 7 % 17) - 8);
  for (size_t c = 0; c < xi.size(); ++c) xi[c] = float(int(c * 5 % 13) - 6);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) quantize_row(DType::BF16, wi.data() + r * n_in, bytes.data() + r * rb, n_in);
  std::vector<float> y(static_cast<size_t>(n_x * n_out));
  matmul_with(k, TensorView{bytes.data(), DType::BF16, {n_out, n_in}, "w"}, xi.data(), n_x, y.data());
  for (int64_t i = 0; i < n_x; ++i)
    for (int64_t r = 0; r < n_out; ++r)
      EXPECT_EQ(y[i * n_out + r], exact_dot(bytes.data() + r * rb, xi.data() + i * n_in, n_in)) << i << " " << r;
}

class EachTable : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_available(GetParam()))
      GTEST_SKIP() << "table " << isa_str(GetParam()) << " not exercised: this CPU lacks it (" << isa_summary() << ")";
  }
};

// Each weight dtype through table k (in file order and, on an ARM table, in
// the layout k repacks it to at load) against the scalar table: close (float
// rounding; for quantized weights, the fast kernels' 8-bit activations) and a
// batch equal to its rows one at a time, bit for bit.
void check_table(const KernelTable& k, const std::string& name) {
  for (DType t : all_weight_dtypes()) {
    const int64_t block = dtype_info(t).block, n_in = block == 1 ? 96 : std::max<int64_t>(block, 64) * 2;
    const int64_t n_out = 19, n_x = 5, rb = dtype_row_bytes(t, n_in);
    std::vector<float> src = random_normal(n_out * n_in, 7, 0.4f), x = random_normal(n_x * n_in, 8);
    std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
    for (int64_t r = 0; r < n_out; ++r) quantize_row(t, src.data() + r * n_in, bytes.data() + r * rb, n_in);
    const TensorView w{bytes.data(), t, {n_out, n_in}, "w"};
    std::vector<float> ref(static_cast<size_t>(n_x * n_out));
    matmul_with(kernel_table(Isa::kScalar), w, x.data(), n_x, ref.data());
    // The file's layout, and on ARM tables the one the table repacks it to at
    // load (x86's interleaved layouts have their IsaMatmul.Repacked* tests).
    std::vector<DType> layouts = {t};
    const int to = k.repack_to[static_cast<int>(t)];
    if (to != 0 && k.isa >= Isa::kNeon) layouts.push_back(static_cast<DType>(to));
    for (DType layout : layouts) {
      std::vector<uint8_t> wb = bytes;
      if (layout != t) repack_rows(t, layout, wb.data(), n_out, n_in);
      const TensorView wl{wb.data(), layout, {n_out, n_in}, "w"};
      const std::string what = name + " " + dtype_info(layout).name;
      std::vector<float> y(ref.size()), one(static_cast<size_t>(n_out));
      matmul_with(k, wl, x.data(), n_x, y.data());
      const bool is_float = t == DType::F32 || t == DType::F16;
      EXPECT_LT(rel_rms(y, ref), is_float ? 1e-5 : 2e-2) << what;
      for (int64_t i = 0; i < n_x; ++i) {
        matmul_with(k, wl, x.data() + i * n_in, 1, one.data());
        for (int64_t r = 0; r < n_out; ++r) ASSERT_EQ(y[i * n_out + r], one[r]) << what << " [" << i << ", " << r << "]";
      }
    }
  }
}

TEST_P(EachTable, MatmulAgreesWithReferenceAndBatchEqualsAlone) {
  EXPECT_EQ(kernel_table(GetParam()).isa, GetParam());
  check_table(kernel_table(GetParam()), isa_str(GetParam()));
}

// A CPU with I8MM and without BF16 (none is known; qemu 7.2 cannot emulate
// one): its i8mm table, built as cpu_arm.cpp builds it for such a CPU, keeps
// the f32 BF16 kernel the dotprod table has and every other entry of the
// running CPU's i8mm table, and passes EachTable's checks (every weight dtype
// against the reference, a batch equal to its rows alone).
TEST(IsaTables, I8mmWithoutBf16KeepsTheF32Bf16Kernel) {
  const std::vector<Isa> avail = available_isas();
  if (!has(compiled_isas(), Isa::kNeon)) GTEST_SKIP() << "not an AArch64 build";
  if (!has(avail, Isa::kI8mm)) GTEST_SKIP() << "this CPU lacks the i8mm table (" << isa_summary() << ")";
#if defined(__aarch64__)
  KernelTable t = kernel_table(Isa::kScalar);
  t.isa = Isa::kI8mm;
  arch::register_arm_kernels(Isa::kI8mm, false, t);
  const KernelTable& real = kernel_table(Isa::kI8mm);
  const int bf = static_cast<int>(DType::BF16);
  EXPECT_EQ(t.matmul[bf].rows, kernel_table(Isa::kDotprod).matmul[bf].rows);
  for (int id = 0; id < kNumDTypeIds; ++id) {
    if (id == bf) continue;
    EXPECT_EQ(t.matmul[id].rows, real.matmul[id].rows) << "dtype id " << id;
    EXPECT_EQ(t.repack_to[id], real.repack_to[id]) << "dtype id " << id;
  }
  check_table(t, "i8mm without bf16");
#endif
}

INSTANTIATE_TEST_SUITE_P(Compiled, EachTable, ::testing::ValuesIn(compiled_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_str(info.param)); });

}  // namespace
}  // namespace og::kernels
