// Attention within a whole-sequence step (kv/step_attend.h): the fast form
// against its plain twin over several sequences, GQA, windows, causal and
// bidirectional; the visibility rules themselves; and, for causal layers, the
// equality with update_and_attend of the reference cache on a fresh cache.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "kv/kv_cache.h"
#include "kv/step_attend.h"

namespace og::kv {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

std::vector<KvRow> rows_of(const std::vector<int>& lengths) {
  std::vector<KvRow> rows;
  for (size_t s = 0; s < lengths.size(); ++s)
    for (int p = 0; p < lengths[s]; ++p) rows.push_back({static_cast<int>(s) * 3 + 1, p});
  return rows;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

TEST(StepAttend, VisibilityRules) {
  StepAttendShape s{4, 2, 8, 8, 0, true};
  int64_t lo, hi;
  step_visible(s, 5, 10, &lo, &hi);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 5);
  s.window = 3;  // causal window: (p - W, p]
  step_visible(s, 5, 10, &lo, &hi);
  EXPECT_EQ(lo, 3);
  EXPECT_EQ(hi, 5);
  s.causal = false;  // symmetric: |p - j| <= W / 2 = 1
  step_visible(s, 5, 10, &lo, &hi);
  EXPECT_EQ(lo, 4);
  EXPECT_EQ(hi, 6);
  s.window = 8;  // |p - j| <= 4, clipped to the sequence
  step_visible(s, 8, 10, &lo, &hi);
  EXPECT_EQ(lo, 4);
  EXPECT_EQ(hi, 9);
  s.window = 0;  // the whole sequence
  step_visible(s, 2, 10, &lo, &hi);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 9);
}

TEST(StepAttend, FastEqualsReference) {
  const std::vector<int> lengths = {7, 1, 33, 12};
  const std::vector<KvRow> rows = rows_of(lengths);
  const int64_t n = static_cast<int64_t>(rows.size());
  for (bool causal : {true, false}) {
    for (int window : {0, 1, 4, 5, 100}) {
      for (int heads : {2, 6}) {
        const StepAttendShape s{heads, 2, 16, 12, window, causal};
        const auto q = random_values(n * heads * 16, 1), k = random_values(n * 2 * 16, 2),
                   v = random_values(n * 2 * 12, 3);
        std::vector<float> fast(n * heads * 12), ref(n * heads * 12);
        attend_in_step(rows, s, q.data(), k.data(), v.data(), 0.25f, fast.data());
        attend_in_step_ref(rows, s, q.data(), k.data(), v.data(), 0.25f, ref.data());
        EXPECT_LT(max_abs_diff(fast, ref), 1e-5) << "causal " << causal << " window " << window << " heads " << heads;
        // With attention sinks (per query head), below and above the scores.
        std::vector<float> sinks(heads);
        for (int h = 0; h < heads; ++h) sinks[h] = h % 2 ? -2.f + h : 3.f;
        attend_in_step(rows, s, q.data(), k.data(), v.data(), 0.25f, fast.data(), sinks.data());
        attend_in_step_ref(rows, s, q.data(), k.data(), v.data(), 0.25f, ref.data(), sinks.data());
        EXPECT_LT(max_abs_diff(fast, ref), 1e-5) << "sinks: causal " << causal << " window " << window;
      }
    }
  }
}

TEST(StepAttend, BidirectionalSeesLaterKeys) {
  // Two rows whose V differ: a causal first row sees only itself, a bidirectional one both.
  const std::vector<KvRow> rows = {{0, 0}, {0, 1}};
  const std::vector<float> q = {1, 0, 1, 0}, k = {1, 0, 1, 0}, v = {1, 0, 0, 1};
  std::vector<float> out(4);
  attend_in_step_ref(rows, {1, 1, 2, 2, 0, true}, q.data(), k.data(), v.data(), 1.0f, out.data());
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 0.0f);
  attend_in_step_ref(rows, {1, 1, 2, 2, 0, false}, q.data(), k.data(), v.data(), 1.0f, out.data());
  EXPECT_FLOAT_EQ(out[0], 0.5f);
  EXPECT_FLOAT_EQ(out[1], 0.5f);
}

TEST(StepAttend, CausalEqualsTheReferenceCache) {
  const std::vector<int> lengths = {9, 20};
  const std::vector<KvRow> rows = rows_of(lengths);
  const int64_t n = static_cast<int64_t>(rows.size());
  for (int window : {0, 6}) {
    KvGeometry g;
    g.caches = {KvCacheSpec{2, 8, 8, window}};
    g.layer_cache = {0};
    g.layer_writes = {true};
    KvPolicy p;
    p.max_capacity = 64;
    p.max_write = 64;
    auto cache = make_kv_cache(KvKind::kReference, g, p);
    for (const KvRow& r : rows)
      if (cache->length(r.seq) < 0) ASSERT_TRUE(cache->add_sequence(r.seq).ok());
    const auto q = random_values(n * 4 * 8, 4), k = random_values(n * 2 * 8, 5), v = random_values(n * 2 * 8, 6);
    std::vector<float> from_cache(n * 4 * 8), in_step(n * 4 * 8);
    ASSERT_TRUE(cache->begin_step(rows).ok());
    cache->update_and_attend(0, rows, q.data(), 4, k.data(), v.data(), 0.3f, from_cache.data());
    cache->end_step();
    attend_in_step(rows, {4, 2, 8, 8, window, true}, q.data(), k.data(), v.data(), 0.3f, in_step.data());
    EXPECT_LT(max_abs_diff(from_cache, in_step), 1e-5) << "window " << window;
  }
}

TEST(StepAttend, RefusesPartialSequences) {
  EXPECT_THROW(check_whole_sequences(std::vector<KvRow>{{0, 1}, {0, 2}}), Error);
  EXPECT_THROW(check_whole_sequences(std::vector<KvRow>{{0, 0}, {1, 0}, {0, 1}}), Error);
  EXPECT_THROW(check_whole_sequences(std::vector<KvRow>{{0, 0}, {0, 2}}), Error);
  EXPECT_NO_THROW(check_whole_sequences(std::vector<KvRow>{{0, 0}, {0, 1}, {5, 0}}));
}

}  // namespace
}  // namespace og::kv
