// The x86 tables that share a tile: the AVX-VNNI table runs the AVX2 table's
// Q4_K_R and Q5_K_R tiles (matmul_q5r_x86.inc, matmul_k_decode_x86.inc) with
// each sub-block's products summed in int32 by vpdpbusd and scaled by a
// vpmulld, where AVX2 sums int16 pairs and scales them by a vpmaddwd. Both
// reach the same exact integers before the same float steps, so the two
// tables' outputs are equal bit for bit: decode (the 8-row tile and its tail
// rows), small batches, prefill tiles with and without the gathered
// activation table, rows of one block and of many.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/test_util.h"
#include "tensor/quant_blocks.h"

namespace og::kernels {
namespace {

TEST(X86Tables, AvxVnniKQuantTilesEqualAvx2BitForBit) {
  if (!isa_available(Isa::kAvx2) || !isa_available(Isa::kAvxVnni))
    GTEST_SKIP() << "needs a CPU with AVX2 and AVX-VNNI";
  set_num_threads(2);
  const struct { DType file, layout; } cases[] = {{DType::Q4_K, DType::Q4_K_R}, {DType::Q5_K, DType::Q5_K_R}};
  for (const auto& c : cases)
    for (int64_t n_out : {7, 19, 64})
      for (int64_t n_in : {256, 2048}) {
        const int64_t rb = dtype_row_bytes(c.file, n_in);
        const std::vector<float> src = testing::random_normal(n_out * n_in, 60 + static_cast<uint32_t>(n_out), 0.3f);
        std::vector<uint8_t> q(static_cast<size_t>(n_out * rb));
        for (int64_t r = 0; r < n_out; ++r) quantize_row(c.file, src.data() + r * n_in, q.data() + r * rb, n_in);
        repack_rows(c.file, c.layout, q.data(), n_out, n_in);
        const TensorView w{q.data(), c.layout, {n_out, n_in}, "w"};
        for (int64_t n_x : {1, 2, 3, 8, 13, 40}) {
          const std::vector<float> x = testing::random_normal(n_x * n_in, 9 + static_cast<uint32_t>(n_x));
          std::vector<float> vnni(static_cast<size_t>(n_x * n_out)), avx2(vnni.size());
          matmul_with(kernel_table(Isa::kAvxVnni), w, x.data(), n_x, vnni.data());
          matmul_with(kernel_table(Isa::kAvx2), w, x.data(), n_x, avx2.data());
          ASSERT_EQ(std::memcmp(vnni.data(), avx2.data(), vnni.size() * sizeof(float)), 0)
              << dtype_name(static_cast<uint32_t>(c.layout)) << " " << n_out << "x" << n_in << " n_x " << n_x;
        }
      }
}

}  // namespace
}  // namespace og::kernels
