// The reference cache against hand-computed attention; names, policy checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "kv/kv_cache.h"
#include "kv_test_util.h"

namespace og {
namespace {

using kvtest::simple_geometry;

TEST(KvNames, RoundTrip) {
  for (KvKind k : {KvKind::kSequence, KvKind::kBatchedSequence, KvKind::kBatchedCell, KvKind::kReference}) {
    KvKind back;
    ASSERT_TRUE(kv_kind_from_name(kv_kind_name(k), &back));
    EXPECT_EQ(back, k);
  }
  for (KvDType t : {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0}) {
    KvDType back;
    ASSERT_TRUE(kv_dtype_from_name(kv_dtype_name(t), &back));
    EXPECT_EQ(back, t);
  }
  KvKind k;
  KvDType t;
  EXPECT_FALSE(kv_kind_from_name("paged", &k));
  EXPECT_FALSE(kv_dtype_from_name("q4_0", &t));
  EXPECT_EQ(std::string(kv_kind_name(KvKind::kBatchedCell)), "batched-cell");
}

TEST(KvPolicyCheck, BadPolicyThrows) {
  KvGeometry g = simple_geometry(2, {0}, 1, 4, 4);
  KvPolicy p;
  p.max_write = 0;
  EXPECT_THROW(make_kv_cache(KvKind::kReference, g, p), Error);
  p = KvPolicy();
  p.windows = {-1};
  EXPECT_THROW(make_kv_cache(KvKind::kReference, g, p), Error);
  KvGeometry bad = g;
  bad.layer_cache[1] = 7;
  EXPECT_THROW(make_kv_cache(KvKind::kReference, bad, KvPolicy()), Error);
}

// Two positions, one head, dk = dv = 2: out = softmax(q·k * scale) · V by hand.
TEST(KvReference, HandComputedAttention) {
  KvGeometry g = simple_geometry(1, {0}, 1, 2, 2);
  auto c = make_kv_cache(KvKind::kReference, g, KvPolicy());
  std::vector<KvRow> rows = {{0, 0}, {0, 1}};
  float q[4] = {1, 0, 0, 1}, k[4] = {1, 2, 3, 4}, v[4] = {10, 20, 30, 40}, out[4];
  ASSERT_TRUE(c->begin_step(rows).ok());
  c->update_and_attend(0, rows, q, 1, k, v, 0.5f, out);
  c->end_step();
  EXPECT_FLOAT_EQ(out[0], 10);  // row 0 sees only itself
  EXPECT_FLOAT_EQ(out[1], 20);
  double s0 = 0.5 * 2, s1 = 0.5 * 4;  // row 1: q=(0,1): k0·q=2, k1·q=4
  double w1 = std::exp(s1) / (std::exp(s0) + std::exp(s1));
  EXPECT_NEAR(out[2], 10 * (1 - w1) + 30 * w1, 1e-4);
  EXPECT_NEAR(out[3], 20 * (1 - w1) + 40 * w1, 1e-4);
  EXPECT_EQ(c->length(0), 2);
}

// An attention sink is a logit in the softmax with no value: with sink s,
// out = Σ e^(x_i) v_i / (e^s + Σ e^(x_i)); a sink far above the scores
// sends the output towards 0 (the path that rescales from the sink).
TEST(KvReference, HandComputedSinks) {
  KvGeometry g = simple_geometry(1, {0}, 1, 2, 2);
  for (float sink : {-1.f, 0.7f, 40.f}) {
    auto c = make_kv_cache(KvKind::kReference, g, KvPolicy());
    std::vector<KvRow> rows = {{0, 0}, {0, 1}};
    float q[4] = {1, 0, 0, 1}, k[4] = {1, 2, 3, 4}, v[4] = {10, 20, 30, 40}, out[4];
    ASSERT_TRUE(c->begin_step(rows).ok());
    c->update_and_attend(0, rows, q, 1, k, v, 0.5f, out, &sink);
    c->end_step();
    const double a0 = std::exp(0.5 * 1), w0 = a0 / (a0 + std::exp(double(sink)));
    EXPECT_NEAR(out[0], 10 * w0, 1e-4 * 10);
    EXPECT_NEAR(out[1], 20 * w0, 1e-4 * 20);
    const double e0 = std::exp(0.5 * 2), e1 = std::exp(0.5 * 4), den = e0 + e1 + std::exp(double(sink));
    EXPECT_NEAR(out[2], (10 * e0 + 30 * e1) / den, 1e-4 * 30);
    EXPECT_NEAR(out[3], (20 * e0 + 40 * e1) / den, 1e-4 * 40);
  }
}

// Window 2: the query at position 3 sees positions 2 and 3 only.
TEST(KvReference, WindowMask) {
  KvGeometry g = simple_geometry(1, {2}, 1, 1, 1);
  auto c = make_kv_cache(KvKind::kReference, g, KvPolicy());
  std::vector<KvRow> rows = {{0, 0}, {0, 1}, {0, 2}, {0, 3}};
  float q[4] = {0, 0, 0, 0}, k[4] = {0, 0, 0, 0}, v[4] = {100, 200, 1, 3}, out[4];
  ASSERT_TRUE(c->begin_step(rows).ok());
  c->update_and_attend(0, rows, q, 1, k, v, 1.f, out);
  c->end_step();
  EXPECT_FLOAT_EQ(out[3], 2.f);
  EXPECT_FLOAT_EQ(out[2], 100.5f);
}

// GQA: 4 query heads on 2 KV heads; shared-KV layer reads the donor without writing.
TEST(KvReference, GqaAndSharedKv) {
  KvGeometry g = simple_geometry(1, {0}, 2, 1, 1);
  g.layer_cache.push_back(0);
  g.layer_writes.push_back(false);
  auto c = make_kv_cache(KvKind::kReference, g, KvPolicy());
  std::vector<KvRow> rows = {{0, 0}};
  float q[4] = {1, 1, 1, 1}, k[2] = {1, 1}, v[2] = {5, 7}, out[4], out2[4];
  ASSERT_TRUE(c->begin_step(rows).ok());
  c->update_and_attend(0, rows, q, 4, k, v, 1.f, out);
  c->update_and_attend(0, rows, q, 4, nullptr, nullptr, 1.f, out2);
  EXPECT_THROW(c->update_and_attend(0, rows, q, 4, k, v, 1.f, out), Error);  // second write
  EXPECT_THROW(c->update_and_attend(0, rows, q, 3, nullptr, nullptr, 1.f, out), Error);
  c->end_step();
  EXPECT_FLOAT_EQ(out[0], 5);
  EXPECT_FLOAT_EQ(out[1], 5);
  EXPECT_FLOAT_EQ(out[2], 7);
  EXPECT_FLOAT_EQ(out[3], 7);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], out2[i]);
}

TEST(KvReference, RefusalsChangeNothing) {
  KvGeometry g = simple_geometry(1, {0}, 1, 1, 1);
  KvPolicy p;
  p.max_capacity = 3;
  p.max_write = 2;
  auto c = make_kv_cache(KvKind::kReference, g, p);
  std::vector<KvRow> three = {{0, 0}, {0, 1}, {0, 2}};
  EXPECT_EQ(c->begin_step(three).status, KvStatus::kWriteTooLong);
  std::vector<KvRow> gap = {{0, 1}};
  EXPECT_EQ(c->begin_step(gap).status, KvStatus::kInvalid);
  std::vector<KvRow> other = {{4, 0}};
  EXPECT_EQ(c->begin_step(other).status, KvStatus::kUnknownSequence);
  EXPECT_EQ(c->length(0), 0);
  float q = 1, k = 1, v = 1, o;
  for (int64_t pos = 0; pos < 3; ++pos) {
    std::vector<KvRow> r = {{0, pos}};
    ASSERT_TRUE(c->begin_step(r).ok());
    c->update_and_attend(0, r, &q, 1, &k, &v, 1.f, &o);
    c->end_step();
  }
  std::vector<KvRow> r = {{0, 3}};
  KvResult res = c->begin_step(r);
  EXPECT_EQ(res.status, KvStatus::kCapacityExceeded);
  EXPECT_FALSE(res.message.empty());
  EXPECT_EQ(c->length(0), 3);
  EXPECT_EQ(c->can_extend(0, 1).status, KvStatus::kCapacityExceeded);
  EXPECT_EQ(c->rewind(0, 4).status, KvStatus::kInvalid);
  EXPECT_TRUE(c->rewind(0, 1).ok());
  EXPECT_EQ(c->length(0), 2);
}

}  // namespace
}  // namespace og

namespace og {
namespace {

// Storage rounding against exact f32 storage: the budget each dtype is held to
// (values in [-1, 1], 64 positions, head dims 40 and 70 (q8_0 padded blocks)).
TEST(KvReference, StorageDtypeBudget) {
  const std::pair<KvDType, float> budgets[] = {
      {KvDType::F16, 2e-3f}, {KvDType::BF16, 1.5e-2f}, {KvDType::Q8_0, 2e-2f}};
  KvGeometry g = simple_geometry(1, {0}, 1, 40, 70);
  std::mt19937 rng(5);
  auto q = kvtest::random_vec(rng, 64 * 2 * 40), k = kvtest::random_vec(rng, 64 * 40),
       v = kvtest::random_vec(rng, 64 * 70);
  std::vector<KvRow> rows;
  for (int i = 0; i < 64; ++i) rows.push_back({0, i});
  KvPolicy p;
  auto exact = make_kv_cache(KvKind::kReference, g, p);
  std::vector<float> want(64 * 2 * 70), got(want.size());
  ASSERT_TRUE(exact->begin_step(rows).ok());
  exact->update_and_attend(0, rows, q.data(), 2, k.data(), v.data(), 0.5f, want.data());
  exact->end_step();
  for (auto [dt, budget] : budgets) {
    p.dtype = dt;
    auto c = make_kv_cache(KvKind::kSequence, g, p);
    ASSERT_TRUE(c->begin_step(rows).ok());
    c->update_and_attend(0, rows, q.data(), 2, k.data(), v.data(), 0.5f, got.data());
    c->end_step();
    float err = 0;
    for (size_t i = 0; i < got.size(); ++i) err = std::max(err, std::fabs(got[i] - want[i]));
    std::printf("[ kv ] %s storage: max |err| vs f32 %.2g (budget %.2g)\n", kv_dtype_name(dt), err, budget);
    EXPECT_LE(err, budget);
    EXPECT_GT(err, 0.f);  // the storage really is rounded
  }
}

}  // namespace
}  // namespace og
