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
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/test_util.h"

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

// The AArch64 tables' own kernels (arm/matmul_neon.cpp): the matmul of every
// plain weight dtype (F32, F16 and Q8_0 in NEON; the others dequantized by the
// reference, dotted in NEON) and the F32 and F16 dot products; everything
// else is the reference's there (docs/contributing.md).
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
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "this CPU has none of the AArch64 vector tables";
}

class EachTable : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_available(GetParam()))
      GTEST_SKIP() << "table " << isa_str(GetParam()) << " not exercised: this CPU lacks it (" << isa_summary() << ")";
  }
};

// Each plain weight dtype through this table against the scalar table: close
// (float rounding; for quantized weights, the fast kernels' 8-bit activations)
// and a batch equal to its rows one at a time, bit for bit.
TEST_P(EachTable, MatmulAgreesWithReferenceAndBatchEqualsAlone) {
  const KernelTable& k = kernel_table(GetParam());
  EXPECT_EQ(k.isa, GetParam());
  for (DType t : all_weight_dtypes()) {
    const int64_t block = dtype_info(t).block, n_in = block == 1 ? 96 : std::max<int64_t>(block, 64) * 2;
    const int64_t n_out = 19, n_x = 5, rb = dtype_row_bytes(t, n_in);
    std::vector<float> src = random_normal(n_out * n_in, 7, 0.4f), x = random_normal(n_x * n_in, 8);
    std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
    for (int64_t r = 0; r < n_out; ++r) quantize_row(t, src.data() + r * n_in, bytes.data() + r * rb, n_in);
    const TensorView w{bytes.data(), t, {n_out, n_in}, "w"};
    std::vector<float> y(static_cast<size_t>(n_x * n_out)), ref(y.size()), one(static_cast<size_t>(n_out));
    matmul_with(k, w, x.data(), n_x, y.data());
    matmul_with(kernel_table(Isa::kScalar), w, x.data(), n_x, ref.data());
    const bool is_float = t == DType::F32 || t == DType::F16;
    EXPECT_LT(rel_rms(y, ref), is_float ? 1e-5 : 2e-2) << isa_str(GetParam()) << " " << dtype_info(t).name;
    for (int64_t i = 0; i < n_x; ++i) {
      matmul_with(k, w, x.data() + i * n_in, 1, one.data());
      for (int64_t r = 0; r < n_out; ++r)
        ASSERT_EQ(y[i * n_out + r], one[r]) << isa_str(GetParam()) << " " << dtype_info(t).name << " [" << i << ", "
                                            << r << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Compiled, EachTable, ::testing::ValuesIn(compiled_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_str(info.param)); });

}  // namespace
}  // namespace og::kernels
