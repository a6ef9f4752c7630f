// matmul_group (several weights over one input in one pool job) against
// separate matmuls: the same bits for every instruction set, mixed dtypes and
// layouts (shared and distinct activation layouts), 1 and several rows; and
// its bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <span>

#include "base/error.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/test_util.h"

namespace og::kernels {
namespace {

using testing::random_normal;

// A weight quantized as t, then repacked into the layout table k's matmul
// wants for t (Q4_K -> Q4_K_R, ...), as the loader does.
struct Weight {
  std::vector<uint8_t> bytes;
  TensorView view;
};

Weight make_weight(const KernelTable& k, DType t, int64_t n_out, int64_t n_in, uint32_t seed) {
  Weight w;
  std::vector<float> src = random_normal(n_out * n_in, seed, 0.3f);
  const int64_t rb = dtype_row_bytes(t, n_in);
  w.bytes.resize(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) quantize_row(t, src.data() + r * n_in, w.bytes.data() + r * rb, n_in);
  const DType layout = k.repack_to[static_cast<int>(t)] ? static_cast<DType>(k.repack_to[static_cast<int>(t)]) : t;
  if (layout != t) repack_rows(t, layout, w.bytes.data(), n_out, n_in);
  w.view = TensorView{w.bytes.data(), layout, {n_out, n_in}, "group.weight"};
  return w;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Each group member's output equals a separate matmul_with's bit for bit.
void expect_group_equals_separate(Isa isa, const std::vector<DType>& dtypes, const std::vector<int64_t>& n_outs,
                                  int64_t n_in, int64_t n_x, uint32_t seed) {
  const KernelTable& k = kernel_table(isa);
  std::vector<Weight> ws;
  for (size_t i = 0; i < dtypes.size(); ++i)
    ws.push_back(make_weight(k, dtypes[i], n_outs[i], n_in, seed + static_cast<uint32_t>(i)));
  std::vector<float> x = random_normal(n_x * n_in, seed + 100);
  std::vector<std::vector<float>> ys(ws.size()), refs(ws.size());
  std::vector<MatmulTarget> targets;
  for (size_t i = 0; i < ws.size(); ++i) {
    ys[i].assign(static_cast<size_t>(n_x * n_outs[i]), NAN);
    refs[i].assign(ys[i].size(), NAN);
    matmul_with(k, ws[i].view, x.data(), n_x, refs[i].data());
    targets.push_back({&ws[i].view, ys[i].data()});
  }
  matmul_group_with(k, targets, x.data(), n_x);
  for (size_t i = 0; i < ws.size(); ++i)
    EXPECT_TRUE(same_bits(ys[i], refs[i])) << isa_str(isa) << " member " << i << " ("
                                           << dtype_info(ws[i].view.dtype).name << ") n_x " << n_x;
}

// q/k/v-like (Q4_K, Q4_K, Q6_K: two activation layouts, one shared), large
// enough to run on the pool, at the row counts of decode, small batches and a
// prefill chunk.
TEST(MatmulGroup, MixedKQuantsEqualSeparateMatmulsBitForBit) {
  for (Isa isa : available_isas())
    for (int64_t n_x : {1, 2, 3, 7, 33})
      expect_group_equals_separate(isa, {DType::Q4_K, DType::Q4_K, DType::Q6_K}, {512, 128, 128}, 1024, n_x,
                                   10 + static_cast<uint32_t>(n_x));
}

// Odd row counts (tails of every row tile), float and block dtypes, and a
// weight whose layout reads x directly, in one group.
TEST(MatmulGroup, EveryKindOfLayoutInOneGroupEqualsSeparateMatmuls) {
  const std::vector<DType> dtypes = {DType::Q8_0, DType::F32, DType::Q5_K, DType::Q4_0,
                                     DType::BF16, DType::Q6_K, DType::F16, DType::Q4_K};
  const std::vector<int64_t> n_outs = {37, 9, 203, 13, 5, 70, 1, 251};
  for (Isa isa : available_isas())
    for (int64_t n_x : {1, 3, 8}) expect_group_equals_separate(isa, dtypes, n_outs, 512, n_x, 40);
}

// Gate/up-like: two weights of one dtype share one prepared activation.
TEST(MatmulGroup, SameDtypePairAndSingleWeight) {
  for (Isa isa : available_isas()) {
    expect_group_equals_separate(isa, {DType::Q4_K, DType::Q4_K}, {1024, 1024}, 768, 1, 60);
    expect_group_equals_separate(isa, {DType::Q8_0}, {300}, 1024, 2, 61);
  }
}

TEST(MatmulGroup, EmptyGroupAndZeroRowWeightsWriteNothing) {
  std::vector<float> x(256, 1.0f), y(4, 7.0f);
  matmul_group({}, x.data(), 1);
  std::vector<uint8_t> buf(4096);
  TensorView none{buf.data(), DType::F32, {0, 256}, "none"};
  TensorView two{buf.data(), DType::F32, {2, 256}, "two"};
  const MatmulTarget t[] = {{&none, nullptr}, {&two, y.data()}};
  matmul_group(t, x.data(), 1);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 7.0f);  // beyond the one row's two outputs
}

TEST(MatmulGroup, BadGroupsThrowNamingTheWeight) {
  std::vector<uint8_t> buf(1 << 16);
  std::vector<float> x(512), y(64);
  TensorView a{buf.data(), DType::F32, {4, 256}, "blk.0.attn_q.weight"};
  TensorView b{buf.data(), DType::F32, {4, 512}, "blk.0.attn_k.weight"};
  const MatmulTarget mismatched[] = {{&a, y.data()}, {&b, y.data() + 16}};
  try {
    matmul_group(mismatched, x.data(), 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_k.weight"), std::string::npos) << e.what();
  }
  std::vector<MatmulTarget> too_many(kMaxMatmulGroup + 1, MatmulTarget{&a, y.data()});
  EXPECT_THROW(matmul_group(too_many, x.data(), 1), Error);
  TensorView q3{buf.data(), DType::IQ3_S, {4, 256}, "blk.0.ffn_up.weight"};
  const MatmulTarget bad_dtype[] = {{&a, y.data()}, {&q3, y.data() + 16}};
  EXPECT_THROW(matmul_group(bad_dtype, x.data(), 1), Error);
  EXPECT_THROW(matmul_group(std::span(bad_dtype, 1), x.data(), -1), Error);
}

}  // namespace
}  // namespace og::kernels
