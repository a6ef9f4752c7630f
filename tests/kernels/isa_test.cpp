// Every registered instruction set's matmul against the reference, odd sizes
// included. Float weights must agree to rounding; quantized weights differ by
// the 8-bit activation rounding of the fast kernels (budget derived below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/arch.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/test_util.h"

namespace og::kernels {
namespace {

using testing::all_weight_dtypes;
using testing::random_normal;

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Tolerance of y[i, r] for one (weight row, activation row) pair.
// Float weights: f32 accumulation in another order, |err| ≤ 1e-5·Σ|w·x|.
// Quantized weights: each activation block (32, or 256 for the K-quants) is
// rounded to int8 with step d = amax/127 ≤ row amax/127, an error uniform in
// ±d/2 (σ = d/√12) per element, independent across elements; the dot error
// then has σ ≤ ‖w‖·amax/(127·√12). The budget
// is 6σ (with amax the row's largest |x|), plus float rounding.
double tolerance(DType t, const float* w, const float* x, int64_t n) {
  double sabs = 0, w2 = 0, amax = 0;
  for (int64_t k = 0; k < n; ++k) {
    sabs += std::fabs(static_cast<double>(w[k]) * x[k]);
    w2 += static_cast<double>(w[k]) * w[k];
    amax = std::max(amax, std::fabs(static_cast<double>(x[k])));
  }
  // BF16 on AVX-512 rounds the activations to bf16 (vdpbf16ps): ≤ 2⁻⁸ of each product.
  if (t == DType::BF16) return std::ldexp(sabs, -8) + 1e-5 * sabs + 1e-6;
  if (is_float(t)) return 1e-5 * sabs + 1e-6;
  return 6.0 * std::sqrt(w2) * amax / (127.0 * std::sqrt(12.0)) + 1e-5 * sabs + 1e-6;
}

// Worst case of the fast kernels' activation rounding: each activation block
// (256 for the K-quants, Q8_K style; 32 for the other quantized dtypes) is
// rounded to int8 with step amax/127, so |err| ≤ Σ_blocks amax/254 · Σ|w|.
// Per-256 blocks let one outlier zero out small values up to 255 positions
// away (ActivationOutliersAndZeros: 1e4 at [5] rounds −3 at [200] to 0).
// BF16 (AVX-512: activations rounded to bf16) loses at most 2⁻⁸ of each |w·x|.
double worst_activation_rounding(DType t, const float* w, const float* x, int64_t n) {
  if (t == DType::BF16) {
    double sabs = 0;
    for (int64_t k = 0; k < n; ++k) sabs += std::fabs(static_cast<double>(w[k]) * x[k]);
    return std::ldexp(sabs, -8);
  }
  if (is_float(t)) return 0.0;
  const int64_t blk = dtype_info(t).block == 256 ? 256 : 32;
  double total = 0;
  for (int64_t b = 0; b < n; b += blk) {
    double amax = 0, wabs = 0;
    for (int64_t k = b; k < b + blk; ++k) {
      amax = std::max(amax, std::fabs(static_cast<double>(x[k])));
      wabs += std::fabs(static_cast<double>(w[k]));
    }
    total += amax / 254.0 * wabs;
  }
  return total;
}

// layout: the weights are quantized as t and then repacked into `layout`
// (DType::Q4_K_R for Q4_K) when it differs from t.
void check_matmul(Isa isa, DType t, int64_t n_out, int64_t n_in, int64_t n_x, uint32_t seed, DType layout) {
  const int64_t rb = dtype_row_bytes(t, n_in);
  std::vector<float> src = random_normal(n_out * n_in, seed, 0.3f), deq(src.size());
  std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) {
    quantize_row(t, src.data() + r * n_in, bytes.data() + r * rb, n_in);
    dequantize_row(t, bytes.data() + r * rb, deq.data() + r * n_in, n_in);
  }
  if (layout != t) repack_rows(t, layout, bytes.data(), n_out, n_in);
  TensorView w{bytes.data(), layout, {n_out, n_in}, "w"};
  std::vector<float> x = random_normal(n_x * n_in, seed + 1), y(static_cast<size_t>(n_x * n_out), NAN);
  matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
  for (int64_t i = 0; i < n_x; ++i)
    for (int64_t r = 0; r < n_out; ++r) {
      double ref = 0;
      for (int64_t k = 0; k < n_in; ++k) ref += static_cast<double>(deq[r * n_in + k]) * x[i * n_in + k];
      const double tol = tolerance(t, deq.data() + r * n_in, x.data() + i * n_in, n_in);
      ASSERT_NEAR(y[i * n_out + r], ref, tol) << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(layout))
                                             << " n_out " << n_out << " n_in " << n_in << " n_x " << n_x
                                             << " at [" << i << ", " << r << "]";
    }
}

// n raw bytes from a fixed linear congruential sequence: every byte value,
// so quants and scales reach the ends of their ranges that quantizers avoid.
std::vector<uint8_t> raw_bytes(size_t n, uint32_t state) {
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(state >> 24);
  }
  return bytes;
}

// Raw bytes for n_out rows of t (n_in each), with edit(blk, r, b) then
// called on every block b of every row r: it sets what must not be random
// (scales kept normal and distinct per row, chosen extreme values).
template <class Edit>
std::vector<uint8_t> raw_rows(DType t, int64_t n_out, int64_t n_in, uint32_t seed, Edit edit) {
  const DTypeInfo& info = dtype_info(t);
  const int64_t rb = dtype_row_bytes(t, n_in);
  std::vector<uint8_t> bytes = raw_bytes(static_cast<size_t>(n_out * rb), seed);
  for (int64_t r = 0; r < n_out; ++r)
    for (int64_t b = 0; b < n_in / info.block; ++b) edit(bytes.data() + r * rb + b * info.block_bytes, r, b);
  return bytes;
}

// Every ISA's matmul of w (n_out x n_in, a repacked layout) against the
// double-precision product of deq (its values as floats), at 1, 3 and 9
// activation rows, within the budget of the file dtype t.
void expect_matmul_matches_values(const TensorView& w, DType t, const std::vector<float>& deq, int64_t n_out,
                                  int64_t n_in, uint32_t seed) {
  for (int64_t n_x : {1, 3, 9}) {
    std::vector<float> x = random_normal(n_x * n_in, seed + static_cast<uint32_t>(n_x)),
                       y(static_cast<size_t>(n_x * n_out));
    for (Isa isa : available_isas()) {
      matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
      for (int64_t i = 0; i < n_x; ++i)
        for (int64_t r = 0; r < n_out; ++r) {
          double ref = 0;
          for (int64_t k = 0; k < n_in; ++k) ref += static_cast<double>(deq[r * n_in + k]) * x[i * n_in + k];
          const double tol = tolerance(t, deq.data() + r * n_in, x.data() + i * n_in, n_in);
          ASSERT_NEAR(y[i * n_out + r], ref, tol) << isa_str(isa) << " n_x " << n_x << " at [" << i << ", " << r << "]";
        }
    }
  }
}

void check_matmul(Isa isa, DType t, int64_t n_out, int64_t n_in, int64_t n_x, uint32_t seed) {
  check_matmul(isa, t, n_out, n_in, n_x, seed, t);
}

TEST(IsaMatmul, EveryIsaAgreesWithReferenceOnOddSizes) {
  for (Isa isa : available_isas())
    for (DType t : all_weight_dtypes()) {
      const int64_t block = dtype_info(t).block;
      const int64_t n_in = block == 1 ? 77 : block * 3;  // float rows with a tail that is not a multiple of 8
      for (int64_t n_x : {1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 33}) check_matmul(isa, t, 13, n_in, n_x, 100 + n_x);
      check_matmul(isa, t, 1, n_in, 1, 7);
      check_matmul(isa, t, 6, block == 1 ? 8 : block, 5, 8);
    }
}

// Small batches (the batched decode steps, 2-32 rows) take tiles that apply
// each weight block to every row at once. Each output element is still the
// same sequence of operations as for a single row, so a batch of N rows must
// equal N one-row calls bit for bit, for every ISA, dtype, row count and
// weight-row count (n_out with tails of every tile size).
TEST(IsaMatmul, BatchOfRowsEqualsSingleRowsBitForBit) {
  set_num_threads(2);
  std::vector<DType> dtypes = all_weight_dtypes();
  dtypes.push_back(DType::Q4_K_R);  // quantized as Q4_K, then repacked
  dtypes.push_back(DType::Q8_0_R);  // quantized as Q8_0, then interleaved
  dtypes.push_back(DType::Q6_K_R);  // quantized as Q6_K, then regrouped
  dtypes.push_back(DType::Q5_K_R);  // quantized as Q5_K, then regrouped
  dtypes.push_back(DType::Q4_0_R);  // quantized as Q4_0, then interleaved
  dtypes.push_back(DType::Q4_K_R16);  // quantized as Q4_K, then interleaved by 16
  dtypes.push_back(DType::Q6_K_R16);  // quantized as Q6_K, then interleaved by 16
  for (Isa isa : available_isas())
    for (DType layout : dtypes) {
      const DType t = layout == DType::Q4_K_R || layout == DType::Q4_K_R16 ? DType::Q4_K
                      : layout == DType::Q8_0_R ? DType::Q8_0
                      : layout == DType::Q6_K_R || layout == DType::Q6_K_R16 ? DType::Q6_K
                      : layout == DType::Q5_K_R ? DType::Q5_K
                      : layout == DType::Q4_0_R ? DType::Q4_0
                                                : layout;
      const int64_t block = dtype_info(t).block;
      for (int64_t n_out : {5, 16, 37, 203}) {
        const int64_t n_in = block == 1 ? 77 : block * 2, rb = dtype_row_bytes(t, n_in);
        std::vector<float> src = random_normal(n_out * n_in, 40 + static_cast<uint32_t>(n_out), 0.3f);
        std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
        for (int64_t r = 0; r < n_out; ++r) quantize_row(t, src.data() + r * n_in, bytes.data() + r * rb, n_in);
        if (layout != t) repack_rows(t, layout, bytes.data(), n_out, n_in);
        TensorView w{bytes.data(), layout, {n_out, n_in}, "w"};
        for (int64_t n_x : {1, 2, 3, 4, 7, 8, 33}) {
          std::vector<float> x = random_normal(n_x * n_in, 50 + static_cast<uint32_t>(n_x));
          std::vector<float> y(static_cast<size_t>(n_x * n_out)), y1(static_cast<size_t>(n_out));
          matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
          for (int64_t i = 0; i < n_x; ++i) {
            matmul_with(kernel_table(isa), w, x.data() + i * n_in, 1, y1.data());
            for (int64_t r = 0; r < n_out; ++r)
              ASSERT_EQ(y[i * n_out + r], y1[r]) << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(layout))
                                                 << " n_out " << n_out << " n_x " << n_x << " at [" << i << ", " << r
                                                 << "]";
          }
        }
      }
    }
}

// The small-batch tiles over weights big enough for the pool and the
// prefetching decode path, against the reference, for the hot dtypes.
TEST(IsaMatmul, SmallBatchesAgreeWithReferenceOnPooledShapes) {
  set_num_threads(2);
  for (Isa isa : available_isas())
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_0, DType::Q4_0})
      for (int64_t n_x : {2, 3, 7, 8, 33}) check_matmul(isa, t, 203, 768, n_x, 60 + static_cast<uint32_t>(n_x));
}

// Q4_K_R (Q4_K regrouped at load for the int8 kernels): every ISA against
// the double-precision product of the original Q4_K weights, decode, small
// batches, tails and pooled shapes.
TEST(IsaMatmul, RepackedQ4KAgreesWithReference) {
  set_num_threads(2);
  for (Isa isa : available_isas()) {
    for (int64_t n_x : {1, 2, 3, 5, 6, 7, 8, 13, 33}) check_matmul(isa, DType::Q4_K, 13, 768, n_x, 70 + n_x, DType::Q4_K_R);
    check_matmul(isa, DType::Q4_K, 203, 1024, 8, 81, DType::Q4_K_R);
    check_matmul(isa, DType::Q4_K, 5, 16384, 17, 82, DType::Q4_K_R);  // activation chunks
    check_matmul(isa, DType::Q4_K, 251, 4096, 20, 83, DType::Q4_K_R);  // several weight-row panels
    check_matmul(isa, DType::Q4_K, 7, 512, 512, 84, DType::Q4_K_R);    // a prefill
  }
}

// Prefill-sized products of the repacked layouts walk weight-row panels and
// activation groups in another order than decode, with their own register
// tiles (Q4_K_R on zmm; Q6_K_R two activation rows per zmm); each output
// element must still equal the one-row product bit for bit (rows of 4096:
// several panels; odd weight-row and activation-row tails).
void expect_prefill_equals_single_rows(DType file, DType layout, int64_t n_out, uint32_t seed, int64_t n_in = 4096,
                                       const std::vector<int64_t>& n_xs = {9, 16, 21}) {
  const int64_t rb = dtype_row_bytes(file, n_in);
  std::vector<float> src = random_normal(n_out * n_in, seed, 0.3f);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) quantize_row(file, src.data() + r * n_in, bytes.data() + r * rb, n_in);
  repack_rows(file, layout, bytes.data(), n_out, n_in);
  TensorView w{bytes.data(), layout, {n_out, n_in}, "w"};
  for (Isa isa : available_isas())
    for (int64_t n_x : n_xs) {
      std::vector<float> x = random_normal(n_x * n_in, seed + 1 + static_cast<uint32_t>(n_x));
      std::vector<float> y(static_cast<size_t>(n_x * n_out)), y1(static_cast<size_t>(n_out));
      matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
      for (int64_t i = 0; i < n_x; ++i) {
        matmul_with(kernel_table(isa), w, x.data() + i * n_in, 1, y1.data());
        for (int64_t r = 0; r < n_out; ++r)
          ASSERT_EQ(y[i * n_out + r], y1[r]) << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(layout))
                                             << " n_x " << n_x << " at [" << i << ", " << r << "]";
      }
    }
}

TEST(IsaMatmul, RepackedQ4KBatchEqualsSingleRowsAcrossPanels) {
  set_num_threads(2);
  expect_prefill_equals_single_rows(DType::Q4_K, DType::Q4_K_R, 251, 85);
  // 37 blocks: the 256-bit tables' prefill in row pieces of 8 blocks (the
  // last of 5), the f32 sums kept in the output between pieces; 137 rows are
  // two activation chunks (128 rows a chunk by the piece), the second a tile
  // and a tail of one row; in 133 the second chunk is 5 rows, a tail alone;
  // 8 rows are one tile, in pieces too (not the small batches' whole rows)
  expect_prefill_equals_single_rows(DType::Q4_K, DType::Q4_K_R, 13, 87, 256 * 37, {8, 21, 133, 137});
  expect_prefill_equals_single_rows(DType::Q4_K, DType::Q4_K_R16, 251, 86);  // 15 groups and a tail of 11
}

TEST(IsaMatmul, RepackedQ6KPrefillEqualsSingleRowsBitForBit) {
  set_num_threads(2);
  for (int64_t n_out : {1, 7, 33, 203}) expect_prefill_equals_single_rows(DType::Q6_K, DType::Q6_K_R, n_out, 340);
  expect_prefill_equals_single_rows(DType::Q6_K, DType::Q6_K_R16, 251, 341);  // 15 groups and a tail of 11
}

// Rows longer than the zmm prefill panel's piece (16 blocks) go in pieces
// whose f32 sums wait in memory between them: 37 blocks (pieces of 16, 16,
// 5) and enough activation rows for two chunks and a row tail; each output
// still equals the one-row product bit for bit.
TEST(IsaMatmul, RepackedQ6KPrefillInRowPiecesEqualsSingleRows) {
  set_num_threads(2);
  expect_prefill_equals_single_rows(DType::Q6_K, DType::Q6_K_R, 7, 350, 256 * 37, {21, 61});
  // 90 weight rows are two blocks of rows by their pieces on the 256-bit
  // tables (78 a block; the pieces' prefetch runs on into the next block);
  // 5 activation rows are a tail alone, 9 a tile and a tail of one.
  expect_prefill_equals_single_rows(DType::Q6_K, DType::Q6_K_R, 90, 353, 256 * 37, {5, 9});
}

// The AVX2 decode tile (8 weight rows, one after the other) keeps each
// block's sums until the 8 rows' are there: rows of up to 64 blocks with
// their 8 lanes, of 65-512 summed across (70 blocks here), longer ones in
// passes of 64 blocks (520); 17 rows in two tiles and a tail row. Each
// output still equals the batch's, and the reference.
TEST(IsaMatmul, RepackedQ6KDecodeInBlockPassesEqualsBatch) {
  set_num_threads(1);
  for (int64_t nb : {70, 520}) {
    expect_prefill_equals_single_rows(DType::Q6_K, DType::Q6_K_R, 17, 351, 256 * nb, {9});
    for (Isa isa : available_isas()) check_matmul(isa, DType::Q6_K, 17, 256 * nb, 1, 352, DType::Q6_K_R);
  }
}

// The AVX2 and AVX-VNNI Q4_K_R / Q5_K_R decode tile (8 weight rows) reads
// rows of fewer than 20 blocks a pair of rows at a time and longer rows side
// by side: both orders, in two tiles and a tail of 3 rows, against the
// reference and equal to the batch's rows bit for bit.
TEST(IsaMatmul, RepackedQ45KDecodeInBothReadOrdersEqualsBatch) {
  set_num_threads(1);
  for (int64_t blocks : {19, 20})
    for (auto [file, layout] : {std::pair{DType::Q4_K, DType::Q4_K_R}, std::pair{DType::Q5_K, DType::Q5_K_R}}) {
      expect_prefill_equals_single_rows(file, layout, 19, 360 + static_cast<uint32_t>(blocks), 256 * blocks, {9});
      for (Isa isa : available_isas())
        check_matmul(isa, file, 19, 256 * blocks, 1, 380 + static_cast<uint32_t>(blocks), layout);
    }
}

#if defined(__x86_64__)
// isa's table as a CPU with tuning `t` builds it (X86Tuning: which of two
// variants that differ only in how they stream the weights it registers).
KernelTable tuned_table(Isa isa, const X86Tuning& t) {
  KernelTable k = kernel_table(Isa::kScalar);
  k.isa = isa;
  arch::register_x86_kernels(isa, t, k);
  return k;
}

// Every tuning's variants (the Q4_K_R / Q5_K_R decode read a pair of rows at
// a time or side by side, far or near prefetches) give the values of the
// table this CPU runs, bit for bit: decode, small batches and prefill, rows
// under and over the pair order's 20 blocks, a tail of rows under 8.
TEST(IsaMatmul, EveryX86TuningGivesTheSameValues) {
  set_num_threads(1);
  const DType files[][2] = {{DType::Q4_K, DType::Q4_K_R}, {DType::Q5_K, DType::Q5_K_R},
                            {DType::Q6_K, DType::Q6_K_R}, {DType::Q8_0, DType::Q8_0_R}};
  int variants = 0;
  for (Isa isa : available_isas()) {
    if (isa == Isa::kScalar) continue;
    const KernelTable own = tuned_table(isa, x86_tuning());  // builds what kernel_table(isa) holds
    for (int id = 0; id < kNumDTypeIds; ++id)
      ASSERT_EQ(own.matmul[id].rows, kernel_table(isa).matmul[id].rows) << isa_str(isa) << " dtype id " << id;
    for (auto [file, layout] : files)
      for (int64_t blocks : {3, 20}) {
        const int64_t n_out = 19, n_in = 256 * blocks, rb = dtype_row_bytes(file, n_in);
        const std::vector<float> src = random_normal(n_out * n_in, 900 + static_cast<uint32_t>(blocks), 0.3f);
        std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
        for (int64_t r = 0; r < n_out; ++r) quantize_row(file, src.data() + r * n_in, bytes.data() + r * rb, n_in);
        repack_rows(file, layout, bytes.data(), n_out, n_in);
        const TensorView w{bytes.data(), layout, {n_out, n_in}, "w"};
        for (int64_t n_x : {1, 2, 3, 9}) {
          const std::vector<float> x = random_normal(n_x * n_in, 950 + static_cast<uint32_t>(n_x));
          std::vector<float> want(static_cast<size_t>(n_x * n_out)), got(want.size());
          matmul_with(kernel_table(isa), w, x.data(), n_x, want.data());
          for (bool far : {false, true})
            for (bool pairs : {false, true}) {
              matmul_with(tuned_table(isa, {.far_l2_prefetch = far, .decode_row_pairs = pairs}), w, x.data(), n_x,
                          got.data());
              EXPECT_EQ(got, want) << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(layout)) << " n_in "
                                   << n_in << " n_x " << n_x << " far " << far << " pairs " << pairs;
              ++variants;
            }
        }
      }
  }
  EXPECT_GT(variants, 0) << "no x86 table ran";
}
#endif

// offgraph --version (isa_summary) names the tuning the x86 tables took, as
// this CPU's X86Tuning says; other architectures have none to name.
TEST(IsaTables, VersionNamesTheCpuTuning) {
  const std::string s = isa_summary();
#if defined(__x86_64__)
  const X86Tuning t = x86_tuning();
  EXPECT_NE(s.find(std::string("; tuning: far L2 prefetch ") + (t.far_l2_prefetch ? "on" : "off") +
                   ", decode row pairs " + (t.decode_row_pairs ? "on" : "off")),
            std::string::npos)
      << s;
#else
  EXPECT_EQ(s.find("tuning"), std::string::npos) << s;
#endif
}

// A K-quant layout regrouped at load holds the file type's values (raw
// bytes in `bytes`, n_out rows of n_in): through every ISA it dequantizes and
// dots bit for bit as `file`, every ISA's matmul equals those values' product
// within the activation rounding, unpacking restores the bytes, another
// type's bytes are refused, and the layout has no user-facing dtype name.
void expect_regrouped_holds_values(DType file, DType layout, const std::vector<uint8_t>& bytes, int64_t n_out,
                                   int64_t n_in, uint32_t seed) {
  const int64_t rb = dtype_row_bytes(file, n_in);
  std::vector<uint8_t> packed = bytes;
  repack_rows(file, layout, packed.data(), n_out, n_in);
  EXPECT_NE(packed, bytes);
  std::vector<float> a(static_cast<size_t>(n_in)), b(static_cast<size_t>(n_in)), deq(static_cast<size_t>(n_out * n_in));
  std::vector<float> src = random_normal(n_in, seed);
  for (Isa isa : available_isas())
    for (int64_t r = 0; r < n_out; ++r) {
      dequantize_row_with(kernel_table(isa), file, bytes.data() + r * rb, a.data(), n_in);
      dequantize_row_with(kernel_table(isa), layout, packed.data() + r * rb, b.data(), n_in);
      ASSERT_EQ(a, b) << isa_str(isa) << " row " << r;
      std::copy(a.begin(), a.end(), deq.begin() + r * n_in);
      EXPECT_EQ(dot_row_with(kernel_table(isa), layout, packed.data() + r * rb, src.data(), n_in),
                dot_row_with(kernel_table(Isa::kScalar), file, bytes.data() + r * rb, src.data(), n_in));
    }
  TensorView w{packed.data(), layout, {n_out, n_in}, "w"};
  expect_matmul_matches_values(w, file, deq, n_out, n_in, seed + 100);
  repack_rows(layout, file, packed.data(), n_out, n_in);
  EXPECT_EQ(packed, bytes);
  const DType other = file == DType::Q4_K ? DType::Q6_K : DType::Q4_K;
  EXPECT_THROW(repack_rows(other, layout, packed.data(), 1, 256), og::Error);
  DType parsed;
  EXPECT_FALSE(dtype_from_name(dtype_name(static_cast<uint32_t>(layout)), &parsed));
}

// The repacked layout holds the same values: dequantized bit for bit equal
// through every ISA's table, and unpacking gives the original bytes back.
TEST(IsaMatmul, RepackedQ4KHoldsTheSameValues) {
  const int64_t n_out = 9, n_in = 512, rb = dtype_row_bytes(DType::Q4_K, n_in);
  std::vector<float> src = random_normal(n_out * n_in, 90, 0.5f);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) quantize_row(DType::Q4_K, src.data() + r * n_in, bytes.data() + r * rb, n_in);
  std::vector<uint8_t> packed = bytes;
  repack_rows(DType::Q4_K, DType::Q4_K_R, packed.data(), n_out, n_in);
  EXPECT_NE(packed, bytes);
  std::vector<float> a(static_cast<size_t>(n_in)), b(static_cast<size_t>(n_in));
  for (Isa isa : available_isas())
    for (int64_t r = 0; r < n_out; ++r) {
      dequantize_row_with(kernel_table(isa), DType::Q4_K, bytes.data() + r * rb, a.data(), n_in);
      dequantize_row_with(kernel_table(isa), DType::Q4_K_R, packed.data() + r * rb, b.data(), n_in);
      ASSERT_EQ(a, b) << isa_str(isa) << " row " << r;
      EXPECT_EQ(dot_row_with(kernel_table(isa), DType::Q4_K_R, packed.data() + r * rb, src.data(), n_in),
                dot_row_with(kernel_table(Isa::kScalar), DType::Q4_K, bytes.data() + r * rb, src.data(), n_in));
    }
  repack_rows(DType::Q4_K_R, DType::Q4_K, packed.data(), n_out, n_in);
  EXPECT_EQ(packed, bytes);
  EXPECT_THROW(repack_rows(DType::Q6_K, DType::Q4_K_R, packed.data(), 1, 256), og::Error);
  DType parsed;
  EXPECT_FALSE(dtype_from_name("q4_k_r", &parsed));  // an in-memory layout, never a user's choice
}

// Q6_K_R (Q6_K regrouped at load for one int8 dot per 32 products): every
// ISA (the scalar one is the reference reading the regrouped layout) against
// the double-precision product of the Q6_K weights, for the row counts of
// decode, batched decode and prefill, odd weight-row counts, pooled shapes
// (the prefetching decode tiles) and activation chunks.
TEST(IsaMatmul, RepackedQ6KAgreesWithReference) {
  set_num_threads(2);
  for (Isa isa : available_isas()) {
    for (int64_t n_x : {1, 2, 3, 5, 6, 7, 8, 9, 13, 33, 512})
      check_matmul(isa, DType::Q6_K, 13, 768, n_x, 300 + static_cast<uint32_t>(n_x), DType::Q6_K_R);
    for (int64_t n_out : {1, 2, 3, 7, 8, 33})
      for (int64_t n_x : {1, 4, 17}) check_matmul(isa, DType::Q6_K, n_out, 256, n_x, 320 + static_cast<uint32_t>(n_out), DType::Q6_K_R);
    check_matmul(isa, DType::Q6_K, 203, 1024, 8, 330, DType::Q6_K_R);
    check_matmul(isa, DType::Q6_K, 67, 2048, 1, 331, DType::Q6_K_R);    // pooled decode
    check_matmul(isa, DType::Q6_K, 5, 16384, 17, 332, DType::Q6_K_R);  // activation chunks
    for (int64_t n_out : {1, 2, 3, 7, 8, 33})  // prefill tiles (zmm: row pairs) with row tails
      check_matmul(isa, DType::Q6_K, n_out, 512, 512, 333 + static_cast<uint32_t>(n_out), DType::Q6_K_R);
  }
}

// The regrouped layout holds the same values: dequantized and dotted bit for
// bit as Q6_K through every ISA's table, unpacking restores the bytes, and the
// matmul of every ISA equals the Q6_K matmul of the reference within the
// activation rounding on levels over the whole 0..63 range and scales over
// the whole int8 range (−128 included, which only files write).
TEST(IsaMatmul, RepackedQ6KHoldsTheSameValues) {
  const int64_t n_out = 9, n_in = 512;
  const std::vector<uint8_t> bytes = raw_rows(DType::Q6_K, n_out, n_in, 4242, [](uint8_t* blk, int64_t r, int64_t b) {
    blk[208] = static_cast<uint8_t>(r), blk[209] = 0x18;  // f16 near 2^-9, a different d per row
    if (b == 0) blk[192] = 0x80, blk[193] = 0x7F;          // scales −128, 127
  });
  expect_regrouped_holds_values(DType::Q6_K, DType::Q6_K_R, bytes, n_out, n_in, 91);
}

// A layout interleaved in groups of rows (Q8_0_R and Q4_0_R by 8, Q4_K_R16
// by 16) against the reference for every ISA: the row counts of decode,
// batched decode and prefill, weight-row counts with every kind of tail
// (n_out % group rows stay plain), pooled shapes and activation chunks. Row
// lengths are rounded up to whole blocks of the file dtype.
void check_interleaved(DType file, DType layout, uint32_t seed) {
  set_num_threads(2);
  const int64_t block = dtype_info(file).block;
  auto len = [&](int64_t n) { return (n + block - 1) / block * block; };
  for (Isa isa : available_isas()) {
    for (int64_t n_x : {1, 2, 3, 7, 8, 33, 512}) {
      check_matmul(isa, file, 13, len(96), n_x, seed + static_cast<uint32_t>(n_x), layout);
      check_matmul(isa, file, 8, len(32), n_x, seed + 10 + static_cast<uint32_t>(n_x), layout);
    }
    for (int64_t n_out : {1, 7, 9, 15, 16, 17, 23, 31, 32, 33, 40, 203})
      for (int64_t n_x : {1, 5, 33})
        check_matmul(isa, file, n_out, len(64), n_x, seed + 20 + static_cast<uint32_t>(n_out), layout);
    check_matmul(isa, file, 203, 1024, 8, seed + 30, layout);
    check_matmul(isa, file, 67, 768, 40, seed + 31, layout);    // pooled, prefill tiles
    check_matmul(isa, file, 21, 16384, 17, seed + 32, layout);  // activation chunks
  }
}

// An interleaved layout holds the file type's values (raw bytes in `bytes`,
// n_out rows of n_in): get_row reads every row (groups and tail) as the file
// rows, every ISA's matmul equals their product within the activation
// rounding, a row pointer is refused, unpacking restores the bytes, and the
// layout has no user-facing dtype name.
void expect_interleaved_holds_values(DType file, DType layout, const std::vector<uint8_t>& bytes, int64_t n_out,
                                     int64_t n_in, uint32_t seed) {
  std::vector<uint8_t> packed = bytes;
  repack_rows(file, layout, packed.data(), n_out, n_in);
  EXPECT_NE(packed, bytes);
  TensorView plain{bytes.data(), file, {n_out, n_in}, "plain"}, inter{packed.data(), layout, {n_out, n_in}, "inter"};
  std::vector<float> a(static_cast<size_t>(n_in)), b(static_cast<size_t>(n_in)), deq(static_cast<size_t>(n_out * n_in));
  for (int64_t r = 0; r < n_out; ++r) {
    get_row(plain, r, a.data());
    get_row(inter, r, b.data());
    ASSERT_EQ(a, b) << "row " << r;
    std::copy(a.begin(), a.end(), deq.begin() + r * n_in);
  }
  expect_matmul_matches_values(inter, file, deq, n_out, n_in, seed);
  EXPECT_THROW(dequantize_row(layout, packed.data(), a.data(), n_in), og::Error);
  EXPECT_THROW(dot_row(layout, packed.data(), a.data(), n_in), og::Error);
  repack_rows(layout, file, packed.data(), n_out, n_in);
  EXPECT_EQ(packed, bytes);
  DType parsed;
  EXPECT_FALSE(dtype_from_name(dtype_name(static_cast<uint32_t>(layout)), &parsed));
}

// Q8_0_R (Q8_0 rows interleaved by 8 at load): every ISA (the scalar one is
// the reference reading the interleaved layout) against the double-precision
// product of the Q8_0 weights, for the row counts of decode, batched decode
// and prefill, weight-row counts with every tail (n_out % 8 rows stay plain)
// and pooled shapes.
TEST(IsaMatmul, RepackedQ8_0AgreesWithReference) {
  check_interleaved(DType::Q8_0, DType::Q8_0_R, 200);
}

// The interleaved layout holds the same values: get_row reads every row
// (groups and tail) as the Q8_0 rows, unpacking restores the bytes, a row
// pointer is refused, and quants over the whole int8 range (−128 included,
// which only files write) stay exact through the biased VNNI path.
TEST(IsaMatmul, RepackedQ8_0HoldsTheSameValues) {
  const int64_t n_out = 19, n_in = 96;
  const std::vector<uint8_t> bytes = raw_rows(DType::Q8_0, n_out, n_in, 777, [](uint8_t* blk, int64_t r, int64_t b) {
    blk[0] = static_cast<uint8_t>(r), blk[1] = 0x20;  // f16 near 2^-7, a different scale per row
    if (b == 0) blk[2] = 0x80, blk[3] = 0x7F, blk[4] = 0x80;
  });
  expect_interleaved_holds_values(DType::Q8_0, DType::Q8_0_R, bytes, n_out, n_in, 240);
}

// Q5_K_R (Q5_K regrouped at load as Q4_K_R plus the fifth bits): every ISA
// (the scalar one is the reference reading the regrouped layout) against the
// double-precision product of the Q5_K weights, for the row counts of decode,
// batched decode and prefill, odd weight-row counts, pooled shapes, activation
// chunks, long rows (block chunks on AVX-512) and several weight-row panels.
TEST(IsaMatmul, RepackedQ5KAgreesWithReference) {
  set_num_threads(2);
  for (Isa isa : available_isas()) {
    for (int64_t n_x : {1, 2, 3, 5, 7, 8, 9, 13, 33, 512})
      check_matmul(isa, DType::Q5_K, 13, 768, n_x, 400 + static_cast<uint32_t>(n_x), DType::Q5_K_R);
    for (int64_t n_out : {1, 2, 3, 7, 8, 33})
      for (int64_t n_x : {1, 4, 17}) check_matmul(isa, DType::Q5_K, n_out, 256, n_x, 420 + static_cast<uint32_t>(n_out), DType::Q5_K_R);
    check_matmul(isa, DType::Q5_K, 203, 1024, 8, 430, DType::Q5_K_R);
    check_matmul(isa, DType::Q5_K, 67, 2048, 1, 431, DType::Q5_K_R);    // pooled decode
    check_matmul(isa, DType::Q5_K, 5, 16384, 17, 432, DType::Q5_K_R);  // activation / block chunks
    check_matmul(isa, DType::Q5_K, 251, 4096, 20, 433, DType::Q5_K_R);  // several weight-row panels
  }
}

// Prefill-sized Q5_K_R products over long rows walk block chunks and panels
// in another order than decode; each output element must still equal the
// one-row product bit for bit.
TEST(IsaMatmul, RepackedQ5KBatchEqualsSingleRowsAcrossPanels) {
  set_num_threads(2);
  const int64_t n_out = 251, n_in = 4096, rb = dtype_row_bytes(DType::Q5_K, n_in);
  std::vector<float> src = random_normal(n_out * n_in, 435, 0.3f);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) quantize_row(DType::Q5_K, src.data() + r * n_in, bytes.data() + r * rb, n_in);
  repack_rows(DType::Q5_K, DType::Q5_K_R, bytes.data(), n_out, n_in);
  TensorView w{bytes.data(), DType::Q5_K_R, {n_out, n_in}, "w"};
  for (Isa isa : available_isas())
    for (int64_t n_x : {8, 9, 16, 21}) {  // 8: one tile, in pieces
      std::vector<float> x = random_normal(n_x * n_in, 436 + static_cast<uint32_t>(n_x));
      std::vector<float> y(static_cast<size_t>(n_x * n_out)), y1(static_cast<size_t>(n_out));
      matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
      for (int64_t i = 0; i < n_x; ++i) {
        matmul_with(kernel_table(isa), w, x.data() + i * n_in, 1, y1.data());
        for (int64_t r = 0; r < n_out; ++r)
          ASSERT_EQ(y[i * n_out + r], y1[r]) << isa_str(isa) << " n_x " << n_x << " at [" << i << ", " << r << "]";
      }
    }
}

// The regrouped layout holds the same values: on raw bytes (every level
// 0..31, every 6-bit scale and min) it dequantizes and dots bit for bit as
// Q5_K through every ISA's table, every ISA's matmul equals the Q5_K values'
// product within the activation rounding, and unpacking restores the bytes.
TEST(IsaMatmul, RepackedQ5KHoldsTheSameValues) {
  const int64_t n_out = 9, n_in = 512;
  const std::vector<uint8_t> bytes = raw_rows(DType::Q5_K, n_out, n_in, 5151, [](uint8_t* blk, int64_t r, int64_t) {
    blk[0] = static_cast<uint8_t>(r), blk[1] = 0x18;      // d: f16 near 2^-9, a different one per row
    blk[2] = static_cast<uint8_t>(3 * r), blk[3] = 0x14;  // dmin near 2^-10
  });
  expect_regrouped_holds_values(DType::Q5_K, DType::Q5_K_R, bytes, n_out, n_in, 92);
}

// Q4_0_R (Q4_0 rows interleaved by 8 at load): every ISA against the
// double-precision product of the Q4_0 weights, for the row counts of decode,
// batched decode and prefill, weight-row counts with every tail (n_out % 8
// rows stay plain), pooled shapes and activation chunks.
TEST(IsaMatmul, RepackedQ4_0AgreesWithReference) {
  check_interleaved(DType::Q4_0, DType::Q4_0_R, 500);
}

// The interleaved layout holds the same values: get_row reads every row
// (groups and tail) as the Q4_0 rows, every ISA's matmul equals their product
// within the activation rounding on raw bytes (every level 0..15), a row
// pointer is refused, and unpacking restores the bytes.
TEST(IsaMatmul, RepackedQ4_0HoldsTheSameValues) {
  const int64_t n_out = 19, n_in = 96;
  const std::vector<uint8_t> bytes = raw_rows(DType::Q4_0, n_out, n_in, 4040, [](uint8_t* blk, int64_t r, int64_t) {
    blk[0] = static_cast<uint8_t>(r), blk[1] = 0x20;  // f16 near 2^-7, a different scale per row
  });
  expect_interleaved_holds_values(DType::Q4_0, DType::Q4_0_R, bytes, n_out, n_in, 540);
}

// Q4_K_R16 (Q4_K rows interleaved by 16 at load, the AVX-512 layout): every
// ISA against the double-precision product of the Q4_K weights, for the row
// counts of decode, batched decode and prefill, every tail (n_out % 16 rows
// stay plain Q4_K), pooled shapes and long rows.
TEST(IsaMatmul, RepackedQ4KR16AgreesWithReference) {
  check_interleaved(DType::Q4_K, DType::Q4_K_R16, 700);
}

// Q4_K_R16 holds the Q4_K values, on raw bytes: every quant level, every bit
// of the packed 6-bit scales and mins (the bytes the kernel unpacks with
// shifts and masks), a different d and dmin per row; 37 rows: two groups and
// a plain tail.
TEST(IsaMatmul, RepackedQ4KR16HoldsTheSameValues) {
  const int64_t n_out = 37, n_in = 512;
  const std::vector<uint8_t> bytes = raw_rows(DType::Q4_K, n_out, n_in, 1616, [](uint8_t* blk, int64_t r, int64_t) {
    blk[0] = static_cast<uint8_t>(r), blk[1] = 0x14;      // d: f16 near 2^-10
    blk[2] = static_cast<uint8_t>(3 * r), blk[3] = 0x10;  // dmin: near 2^-11
  });
  expect_interleaved_holds_values(DType::Q4_K, DType::Q4_K_R16, bytes, n_out, n_in, 1640);
}

// Q6_K_R16 (Q6_K rows interleaved by 16 at load, the AVX-512 layout): every
// ISA against the double-precision product of the Q6_K weights, for the row
// counts of decode, batched decode and prefill, every tail (n_out % 16 rows
// stay plain Q6_K), pooled shapes and long rows.
TEST(IsaMatmul, RepackedQ6KR16AgreesWithReference) {
  check_interleaved(DType::Q6_K, DType::Q6_K_R16, 760);
}

// Q6_K_R16 holds the Q6_K values, on raw bytes: every level (each bit of
// the nibbles and of the top-bit pairs the kernel shifts and merges), the
// extreme scales −128 and 127, a different d per row; 37 rows: two groups
// and a plain tail.
TEST(IsaMatmul, RepackedQ6KR16HoldsTheSameValues) {
  const int64_t n_out = 37, n_in = 512;
  const std::vector<uint8_t> bytes = raw_rows(DType::Q6_K, n_out, n_in, 6161, [](uint8_t* blk, int64_t r, int64_t b) {
    blk[208] = static_cast<uint8_t>(r), blk[209] = 0x18;  // f16 near 2^-9, a different d per row
    if (b == 0) blk[192] = 0x80, blk[193] = 0x7F;          // scales −128, 127
  });
  expect_interleaved_holds_values(DType::Q6_K, DType::Q6_K_R16, bytes, n_out, n_in, 1660);
}

TEST(IsaMatmul, LargeEnoughToUseTheThreadPool) {
  set_num_threads(2);
  for (Isa isa : available_isas())
    for (DType t : {DType::F16, DType::Q4_K, DType::Q8_0, DType::Q6_K}) check_matmul(isa, t, 67, 1024, 6, 9);
}

// Q8_0 quants over the whole int8 range, −128 included (the quantizer never
// writes it, files may): the VNNI path dots w + 128 as u8, which must stay
// exact at both ends.
TEST(IsaMatmul, Q8_0RawBytesFullRange) {
  const int64_t n_out = 7, n_in = 96, rb = dtype_row_bytes(DType::Q8_0, n_in);
  const std::vector<uint8_t> bytes = raw_rows(DType::Q8_0, n_out, n_in, 12345, [](uint8_t* blk, int64_t, int64_t b) {
    blk[0] = 0x00, blk[1] = 0x20;                             // f16 2^-7
    if (b == 0) blk[2] = 0x80, blk[3] = 0x7F, blk[4] = 0x80;  // −128, 127, −128
  });
  std::vector<float> deq(static_cast<size_t>(n_out * n_in));
  for (int64_t r = 0; r < n_out; ++r) dequantize_row(DType::Q8_0, bytes.data() + r * rb, deq.data() + r * n_in, n_in);
  ASSERT_EQ(deq[0], -1.0f);
  TensorView w{bytes.data(), DType::Q8_0, {n_out, n_in}, "w"};
  for (int64_t n_x : {1, 5}) {
    std::vector<float> x = random_normal(n_x * n_in, 31 + static_cast<uint32_t>(n_x)), y(static_cast<size_t>(n_x * n_out));
    for (Isa isa : available_isas()) {
      matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
      for (int64_t i = 0; i < n_x; ++i)
        for (int64_t r = 0; r < n_out; ++r) {
          double ref = 0;
          for (int64_t k = 0; k < n_in; ++k) ref += static_cast<double>(deq[r * n_in + k]) * x[i * n_in + k];
          const double tol = tolerance(DType::Q8_0, deq.data() + r * n_in, x.data() + i * n_in, n_in);
          ASSERT_NEAR(y[i * n_out + r], ref, tol) << isa_str(isa) << " n_x " << n_x << " at [" << i << ", " << r << "]";
        }
    }
  }
}

// K-quant weights at their top level everywhere (Q4_K 15, Q5_K 31, Q6_K 63,
// every 6-bit scale 63) against activations that all quantize to 127: the
// largest integer sums any tile forms. A tile that sums too many products in
// int16 before widening (AVX2's KR8 sums four Q4 steps but only two Q5 ones)
// wraps here and misses the reference by far more than the budget.
TEST(IsaMatmul, KQuantTopLevelsStayExact) {
  for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const int64_t n_out = 19, n_in = 512, rb = dtype_row_bytes(t, n_in);
    const std::vector<uint8_t> bytes = raw_rows(t, n_out, n_in, 99, [t](uint8_t* blk, int64_t, int64_t) {
      if (t == DType::Q6_K) {  // ql 128, qh 64, int8 scales 16, d f16
        std::memset(blk, 0xFF, 192);
        std::memset(blk + 192, 127, 16);
        blk[208] = 0x00, blk[209] = 0x20;  // d = 2^-7
      } else {                             // d, dmin f16, 12 scale bytes, [qh 32], qs
        blk[0] = 0x00, blk[1] = 0x20;      // d = 2^-7
        blk[2] = 0x00, blk[3] = 0x00;      // dmin = 0
        std::memset(blk + 4, 0xFF, static_cast<size_t>(dtype_row_bytes(t, 256)) - 4);
      }
    });
    std::vector<float> deq(static_cast<size_t>(n_out * n_in));
    for (int64_t r = 0; r < n_out; ++r) dequantize_row(t, bytes.data() + r * rb, deq.data() + r * n_in, n_in);
    for (Isa isa : available_isas())
      for (int64_t n_x : {1, 2, 6, 7, 13}) {
        std::vector<uint8_t> wb = bytes;
        const int to = kernel_table(isa).repack_to[static_cast<int>(t)];  // 0: no repacked layout
        const DType layout = to != 0 ? static_cast<DType>(to) : t;
        if (layout != t) repack_rows(t, layout, wb.data(), n_out, n_in);
        TensorView w{wb.data(), layout, {n_out, n_in}, "w"};
        std::vector<float> x(static_cast<size_t>(n_x * n_in), 1.0f), y(static_cast<size_t>(n_x * n_out));
        matmul_with(kernel_table(isa), w, x.data(), n_x, y.data());
        for (int64_t i = 0; i < n_x; ++i)
          for (int64_t r = 0; r < n_out; ++r) {
            double ref = 0;
            for (int64_t k = 0; k < n_in; ++k) ref += deq[r * n_in + k];
            const double tol = tolerance(t, deq.data() + r * n_in, x.data() + i * n_in, n_in);
            ASSERT_NEAR(y[i * n_out + r], ref, tol) << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(t))
                                                    << " n_x " << n_x << " at [" << i << ", " << r << "]";
          }
      }
  }
}

TEST(IsaMatmul, LongRowsSplitActivationsIntoChunks) {
  // The K-quant kernels walk activation rows in L2-sized chunks (256 KiB of
  // int8: 16 rows of 16384) and tile each chunk: 17 rows cross a chunk edge.
  for (Isa isa : available_isas())
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) check_matmul(isa, t, 5, 16384, 17, 11);
}

TEST(IsaMatmul, ActivationOutliersAndZeros) {
  for (Isa isa : available_isas())
    for (DType t : all_weight_dtypes()) {
      const int64_t n_in = 256;
      std::vector<float> src = random_normal(5 * n_in, 3, 0.3f);
      const int64_t rb = dtype_row_bytes(t, n_in);
      std::vector<uint8_t> bytes(static_cast<size_t>(5 * rb));
      for (int64_t r = 0; r < 5; ++r) quantize_row(t, src.data() + r * n_in, bytes.data() + r * rb, n_in);
      TensorView w{bytes.data(), t, {5, n_in}, "w"};
      std::vector<float> x(2 * n_in, 0.0f), y(10), yr(10);
      x[n_in + 5] = 1e4f;  // row 0 all zeros, row 1 one huge value
      x[n_in + 200] = -3.0f;
      matmul_with(kernel_table(isa), w, x.data(), 2, y.data());
      matmul_with(kernel_table(Isa::kScalar), w, x.data(), 2, yr.data());
      std::vector<float> deq(static_cast<size_t>(n_in));
      for (int r = 0; r < 5; ++r) {
        EXPECT_EQ(y[r], 0.0f) << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(t));
        dequantize_row(t, bytes.data() + r * rb, deq.data(), n_in);
        const double bound = worst_activation_rounding(t, deq.data(), x.data() + n_in, n_in);
        EXPECT_NEAR(y[5 + r], yr[5 + r], bound + 1e-4 * std::fabs(yr[5 + r]) + 1e-3)
            << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(t));
      }
    }
}

TEST(IsaMatmul, ThisMachineHasTheIsaItClaims) {
  // The chosen table is the best one available unless OFFGRAPH_ISA says otherwise.
  const std::string n = isa_name();
  const std::vector<Isa> all = available_isas();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), Isa::kScalar);
  const char* env = std::getenv("OFFGRAPH_ISA");
  if (!env || !*env) {
    EXPECT_EQ(n, isa_str(all.back()));  // the last (most preferred) one this CPU runs
  } else {
    EXPECT_EQ(n, env);
  }
  bool found = false;
  for (Isa isa : all) found = found || n == isa_str(isa);
  EXPECT_TRUE(found) << n;
}

}  // namespace
}  // namespace og::kernels

namespace og::kernels {
namespace {

// Elementwise ops: every ISA against the reference (double inside), sizes
// with and without a vector tail, extreme inputs. The fast exp is accurate to
// ~2e-7, but the f32 argument of exp (e.g. −2u of GELU, up to 88 in size)
// carries a rounding error of |x|·2⁻²⁴ ≤ 5e-6 relative in the result: budget
// 1e-5 relative (+1e-30 near zero).
void expect_close(const std::vector<float>& a, const std::vector<float>& b, const char* what, Isa isa, int64_t n) {
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-5 * std::fabs(b[i]) + 1e-30) << what << " " << isa_str(isa) << " n " << n << " i " << i;
}

TEST(IsaElementwise, EveryIsaAgreesWithReference) {
  const KernelTable& ref = kernel_table(Isa::kScalar);
  for (Isa isa : available_isas()) {
    if (isa == Isa::kScalar) continue;
    const KernelTable& k = kernel_table(isa);
    for (int64_t n : {1, 3, 7, 8, 9, 16, 17, 31, 37, 576, 1001}) {
      std::vector<float> g = testing::random_normal(n, 40 + n, 4.0f), up = testing::random_normal(n, 41 + n);
      if (n > 8) {
        g[1] = 100.0f;
        g[2] = -100.0f;
        g[3] = 1e4f;
        g[4] = -1e4f;
        g[5] = 0.0f;
      }
      for (auto f : {&KernelTable::silu_mul, &KernelTable::gelu_tanh_mul}) {
        std::vector<float> a = g, b = g;
        (k.*f)(a.data(), up.data(), n);
        (ref.*f)(b.data(), up.data(), n);
        expect_close(a, b, f == &KernelTable::silu_mul ? "silu_mul" : "gelu_tanh_mul", isa, n);
      }
      std::vector<float> a = g, b = g;
      k.softmax(a.data(), n);
      ref.softmax(b.data(), n);
      expect_close(a, b, "softmax", isa, n);
      a = g;
      b = g;
      if (n > 8) a[6] = b[6] = -INFINITY;  // masked entry
      k.softmax(a.data(), n);
      ref.softmax(b.data(), n);
      expect_close(a, b, "softmax(masked)", isa, n);
      if (n > 8) {
        EXPECT_EQ(a[6], 0.0f);
      }
      std::vector<float> ya(n), yb(n);
      k.rms_norm(g.data(), up.data(), 1e-6f, n, ya.data());
      ref.rms_norm(g.data(), up.data(), 1e-6f, n, yb.data());
      expect_close(ya, yb, "rms_norm", isa, n);
      k.rms_norm(g.data(), nullptr, 1e-6f, n, ya.data());
      ref.rms_norm(g.data(), nullptr, 1e-6f, n, yb.data());
      expect_close(ya, yb, "rms_norm(no weight)", isa, n);
      a = g;
      b = g;
      k.add(a.data(), up.data(), n);
      ref.add(b.data(), up.data(), n);
      EXPECT_EQ(a, b);
      k.scale(a.data(), -0.37f, n);
      ref.scale(b.data(), -0.37f, n);
      EXPECT_EQ(a, b);
    }
    std::vector<float> masked(19, -INFINITY);
    k.softmax(masked.data(), 19);
    for (float v : masked) EXPECT_EQ(v, 0.0f) << isa_str(isa);
  }
}

// f32 -> f16 rows: every ISA gives f32_to_f16's bits for random bit patterns
// (NaN payloads, subnormals, overflow) and the rounding edges, at every
// length mod 8 and at an odd destination address.
TEST(IsaElementwise, F32ToF16RowEqualsScalarConversionBitForBit) {
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00001u, 0x7f800001u,
                                0xffbfffffu, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x38800000u,
                                0x387fffffu, 0x33000000u, 0x33000001u, 0x32ffffffu, 0x00000001u, 0x3f801000u,
                                0x3f803000u, 0x3f800fffu, 0xc7800000u};
  uint32_t state = 12345;
  for (int i = 0; i < 4000; ++i) {
    state = state * 1664525u + 1013904223u;
    bits.push_back(state);
  }
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), 4 * bits.size());
  std::vector<float> normal = random_normal(256, 7);
  x.insert(x.end(), normal.begin(), normal.end());
  std::vector<uint8_t> out(2 * x.size() + 1);
  for (Isa isa : available_isas()) {
    const KernelTable& k = kernel_table(isa);
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{13}, static_cast<int64_t>(x.size())}) {
      k.f32_to_f16_row(x.data(), out.data() + 1, n);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, out.data() + 1 + 2 * i, 2);
        uint32_t u;
        std::memcpy(&u, &x[i], 4);
        ASSERT_EQ(h, f32_to_f16(x[i])) << isa_str(isa) << " input bits " << std::hex << u;
      }
    }
  }
}

// Every vector ISA has its own kernel for every weight dtype (in the layout
// its table repacks that dtype into), every elementwise op, every attention
// kernel of every K/V storage dtype and both machine probes: none falls back
// to the scalar twin. The tests above check that each ISA agrees with the
// twin, not that it has kernels of its own; AVX2 machines ran the scalar
// attention twin in production (f16 decode attention at ~0.3 GB/s) until
// attend_avx2.cpp, and no test noticed.
TEST(IsaTable, EveryVectorIsaHasItsOwnKernels) {
  const std::vector<Isa> compiled = compiled_isas();
  if (std::find(compiled.begin(), compiled.end(), Isa::kNeon) != compiled.end())
    GTEST_SKIP() << "the AArch64 tables (neon, dotprod, i8mm) are checked entry by entry by IsaTables.Arm* "
                    "(isa_tables_test.cpp: attention, int8 matmuls, interleaved layouts, probes; docs/arm.md)";
  const KernelTable& ref = kernel_table(Isa::kScalar);
  for (Isa isa : available_isas()) {
    if (isa == Isa::kScalar) continue;
    const KernelTable& k = kernel_table(isa);
    for (DType t : all_weight_dtypes()) {
      const int id = static_cast<int>(t);
      const int layout = k.repack_to[id] ? k.repack_to[id] : id;
      EXPECT_NE(k.matmul[layout].rows, ref.matmul[layout].rows)
          << isa_str(isa) << " " << dtype_name(static_cast<uint32_t>(t)) << " (layout "
          << dtype_name(static_cast<uint32_t>(layout)) << ")";
    }
    EXPECT_NE(k.rms_norm, ref.rms_norm) << isa_str(isa);
    EXPECT_NE(k.softmax, ref.softmax) << isa_str(isa);
    EXPECT_NE(k.silu_mul, ref.silu_mul) << isa_str(isa);
    EXPECT_NE(k.gelu_tanh_mul, ref.gelu_tanh_mul) << isa_str(isa);
    EXPECT_NE(k.add, ref.add) << isa_str(isa);
    EXPECT_NE(k.scale, ref.scale) << isa_str(isa);
    EXPECT_NE(k.f32_to_f16_row, ref.f32_to_f16_row) << isa_str(isa);
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) {
      const auto& fast = attend_kernels_with(k, t);
      const auto& slow = attend_kernels_with(ref, t);
      const std::string what = std::string(isa_str(isa)) + " attention over " + dtype_name(static_cast<uint32_t>(t));
      EXPECT_NE(fast.scores, slow.scores) << what;
      if (t == DType::Q8_0) EXPECT_EQ(fast.scores_blocked, nullptr) << what;  // q8_0 K stays in rows
      else EXPECT_NE(fast.scores_blocked, slow.scores_blocked) << what;
      EXPECT_NE(fast.accum, slow.accum) << what;
      EXPECT_NE(fast.exp_sum, slow.exp_sum) << what;
      EXPECT_NE(fast.max, slow.max) << what;
    }
    EXPECT_NE(k.madd_loop, nullptr) << isa_str(isa);
    EXPECT_NE(k.read_sum, nullptr) << isa_str(isa);
  }
}

}  // namespace
}  // namespace og::kernels
