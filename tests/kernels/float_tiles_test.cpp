// The float-weight matmul tiles of the x86 tables (F32 and F16: AVX-512's
// zmm tiles, matmul_float_avx512.cpp; AVX2's ymm tiles, matmul_x86.inc; BF16
// through AVX2's too) at the shapes where tiles end: rows of n_in % 16 values
// (the masked tail), weight-row counts that leave a row tail, batches that
// leave an activation-row tail and batches that span several L2 chunks.
// Each output must be close to the exact sum of the stored weights times the
// activations, and equal bit for bit to the same row computed alone.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/test_util.h"

namespace og::kernels {
namespace {

using testing::random_normal;

struct Shape {
  int64_t n_out, n_in, n_x;
};

// The weights as the kernels see them (f16/bf16 rounding included), in f32.
std::vector<float> stored_values(DType t, const std::vector<uint8_t>& bytes, int64_t n_out, int64_t n_in) {
  std::vector<float> v(static_cast<size_t>(n_out * n_in));
  const int64_t rb = dtype_row_bytes(t, n_in);
  for (int64_t r = 0; r < n_out; ++r)
    dequantize_row_with(kernel_table(Isa::kScalar), t, bytes.data() + r * rb, v.data() + r * n_in, n_in);
  return v;
}

// One table, dtype and shape: every output against the exact sum, and each batch row alone.
void check(Isa isa, DType t, const Shape& s) {
  const KernelTable& k = kernel_table(isa);
  const std::string at = std::string(isa_str(isa)) + " " + dtype_info(t).name + " " + std::to_string(s.n_out) + "x" +
                         std::to_string(s.n_in) + " n_x " + std::to_string(s.n_x);
  const int64_t rb = dtype_row_bytes(t, s.n_in);
  const std::vector<float> src = random_normal(s.n_out * s.n_in, 11, 0.3f), x = random_normal(s.n_x * s.n_in, 12);
  std::vector<uint8_t> bytes(static_cast<size_t>(s.n_out * rb));
  for (int64_t r = 0; r < s.n_out; ++r) quantize_row(t, src.data() + r * s.n_in, bytes.data() + r * rb, s.n_in);
  const std::vector<float> wv = stored_values(t, bytes, s.n_out, s.n_in);
  const TensorView w{bytes.data(), t, {s.n_out, s.n_in}, "w"};
  std::vector<float> y(static_cast<size_t>(s.n_x * s.n_out)), one(static_cast<size_t>(s.n_out));
  matmul_with(k, w, x.data(), s.n_x, y.data());
  // AVX-512 rounds BF16's activations to bf16 (its own kernel): 2⁻⁸ of each product.
  const double rel = t == DType::BF16 && isa == Isa::kAvx512 ? std::ldexp(1.0, -8) + 1e-5 : 1e-5;
  for (int64_t i = 0; i < s.n_x; ++i) {
    matmul_with(k, w, x.data() + i * s.n_in, 1, one.data());
    for (int64_t r = 0; r < s.n_out; ++r) {
      double exact = 0, sabs = 0;
      for (int64_t j = 0; j < s.n_in; ++j) {
        const double p = static_cast<double>(wv[r * s.n_in + j]) * x[i * s.n_in + j];
        exact += p;
        sabs += std::fabs(p);
      }
      const float got = y[i * s.n_out + r];
      ASSERT_LE(std::fabs(got - exact), rel * sabs + 1e-6) << at << " [" << i << ", " << r << "]";
      ASSERT_EQ(got, one[r]) << "batch vs alone, " << at << " [" << i << ", " << r << "]";
    }
  }
}

std::vector<Isa> x86_vector_tables() {
  std::vector<Isa> v;
  for (Isa isa : {Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512})
    if (isa_available(isa)) v.push_back(isa);
  return v;
}

TEST(FloatTiles, EdgesOfTilesAndChunksAgreeWithExactSumsAndBatchEqualsAlone) {
  const std::vector<Isa> isas = x86_vector_tables();
  if (isas.empty()) GTEST_SKIP() << "no x86 vector table on this CPU or build";
  const Shape shapes[] = {
      {1, 16, 1},   {3, 17, 2},   {4, 31, 6},    {5, 100, 7},  {9, 588, 13},
      {13, 64, 25}, {7, 1152, 5}, {6, 4304, 30},  // 4304: L2 chunks of 12 rows (AVX-512), 2 and more chunks
      {19, 8, 3},   {2, 1, 9},
      {230, 300, 40},  // f16 on AVX-512: two L2 panels of weight rows (216 rows of 300)
  };
  for (Isa isa : isas)
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (const Shape& s : shapes) check(isa, t, s);
}

// Rows whose byte length is not a multiple of the vector width end right
// before a page the process may not read: the masked tail loads of the last
// weight row and the last activation row must not touch it.
TEST(FloatTiles, TailLoadsStopAtTheRowsEnd) {
  const std::vector<Isa> isas = x86_vector_tables();
  if (isas.empty()) GTEST_SKIP() << "no x86 vector table on this CPU or build";
  const int64_t page = sysconf(_SC_PAGESIZE), n_in = 37, n_out = 5, n_x = 3;
  for (DType t : {DType::F32, DType::F16}) {
    const int64_t rb = dtype_row_bytes(t, n_in), wbytes = n_out * rb, xbytes = n_x * n_in * 4;
    // Two regions, each followed by a PROT_NONE page; the data ends at its edge.
    auto guarded = [&](int64_t bytes) {
      const int64_t span = (bytes + page - 1) / page * page;
      auto* base = static_cast<uint8_t*>(
          mmap(nullptr, static_cast<size_t>(span + page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      EXPECT_NE(base, MAP_FAILED);
      EXPECT_EQ(mprotect(base + span, static_cast<size_t>(page), PROT_NONE), 0);
      return std::pair<uint8_t*, int64_t>(base, span + page);
    };
    auto [wbase, wspan] = guarded(wbytes);
    auto [xbase, xspan] = guarded(xbytes);
    uint8_t* wdata = wbase + (wspan - page) - wbytes;
    auto* xdata = reinterpret_cast<float*>(xbase + (xspan - page) - xbytes);
    const std::vector<float> src = random_normal(n_out * n_in, 3), x = random_normal(n_x * n_in, 4);
    for (int64_t r = 0; r < n_out; ++r) quantize_row(t, src.data() + r * n_in, wdata + r * rb, n_in);
    std::memcpy(xdata, x.data(), static_cast<size_t>(xbytes));
    const TensorView w{wdata, t, {n_out, n_in}, "w"};
    std::vector<float> y(static_cast<size_t>(n_x * n_out)), ref(y.size());
    matmul_with(kernel_table(Isa::kScalar), w, xdata, n_x, ref.data());
    for (Isa isa : isas) {
      matmul_with(kernel_table(isa), w, xdata, n_x, y.data());
      EXPECT_LT(testing::rel_rms(y, ref), 1e-5) << isa_str(isa) << " " << dtype_info(t).name;
    }
    munmap(wbase, static_cast<size_t>(wspan));
    munmap(xbase, static_cast<size_t>(xspan));
  }
}

}  // namespace
}  // namespace og::kernels
