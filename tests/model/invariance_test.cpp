// Invariances of the forward pass over every synthetic family: any prefill
// chunking gives the same logits; a batch of sequences gives each the logits
// it gets alone; ring caches on sliding-window layers equal the reference
// cache's window mask over sequences longer than the window.
#include <gtest/gtest.h>

#include "synth_fixture.h"

namespace og {
namespace {

using synth::Family;

class Invariance : public ::testing::TestWithParam<Family> {
 protected:
  void SetUp() override { model_ = Model::load(test::synth_gguf(GetParam())); }
  std::unique_ptr<KvCache> cache(KvKind kind, int64_t max_write = 512) const {
    KvPolicy p;
    p.max_capacity = 256;
    p.initial_capacity = 16;  // flat kinds grow while these tests run
    p.max_write = max_write;
    return make_kv_cache(kind, model_->kv_geometry(), p);
  }
  std::unique_ptr<Model> model_;
  const double kTol = test::logit_tol(GetParam());
};

TEST_P(Invariance, ChunkedPrefillEqualsOneStepEqualsTokenByToken) {
  const std::vector<int32_t> toks = test::test_tokens(26, model_->n_vocab(), 3);
  auto c0 = cache(KvKind::kReference);
  const std::vector<float> whole = test::all_logits(*model_, *c0, toks, 26);
  for (int chunk : {1, 2, 3, 5, 7, 13}) {
    auto c = cache(KvKind::kReference);
    EXPECT_LE(test::max_rel_err(test::all_logits(*model_, *c, toks, chunk), whole), kTol) << "chunk " << chunk;
  }
}

TEST_P(Invariance, RingCacheEqualsReferenceWindowMask) {
  // Longer than every window (8); chunks up to max_write, so ring layers wrap many times.
  const std::vector<int32_t> toks = test::test_tokens(40, model_->n_vocab(), 5);
  auto ref = cache(KvKind::kReference);
  const std::vector<float> want = test::all_logits(*model_, *ref, toks, 40);
  for (int chunk : {1, 3, 4}) {
    auto ring = cache(KvKind::kSequence, 4);
    EXPECT_LE(test::max_rel_err(test::all_logits(*model_, *ring, toks, chunk), want), kTol) << "chunk " << chunk;
  }
}

// Three sequences of different lengths prefilled in one interleaved batch,
// then decoded together; each row's logits equal those of the sequence alone.
void check_batch(const Model& m, KvCache& batched, const std::function<std::unique_ptr<KvCache>()>& solo_cache,
                 double kTol) {
  const std::vector<std::vector<int32_t>> seqs = {test::test_tokens(11, m.n_vocab(), 7),
                                                  test::test_tokens(5, m.n_vocab(), 8),
                                                  test::test_tokens(14, m.n_vocab(), 9)};
  const int prefill[] = {6, 2, 9};
  std::vector<std::vector<float>> alone;
  for (const auto& s : seqs) {
    auto c = solo_cache();
    alone.push_back(test::all_logits(m, *c, s, static_cast<int>(s.size())));
  }
  for (int s = 1; s < 3; ++s) ASSERT_TRUE(batched.add_sequence(s).ok());
  const int64_t V = m.n_vocab();
  std::vector<int64_t> next = {0, 0, 0};
  std::vector<float> logits;
  for (int step = 0; next[0] < 11 || next[1] < 5 || next[2] < 14; ++step) {
    Batch b;
    // Step 0: each sequence's prefill, rows round-robin; later steps: one token each.
    for (bool more = true; more;) {
      more = false;
      for (int s = 0; s < 3; ++s) {
        const int64_t limit = step == 0 ? prefill[s] : std::min<int64_t>(next[s] + 1, seqs[s].size());
        if (next[s] < limit) {
          b.rows.push_back({seqs[s][next[s]], s, next[s], true});
          ++next[s];
          more = more || step == 0;
        }
      }
      if (step > 0) break;
    }
    const KvResult r = m.forward(b, batched, logits);
    ASSERT_TRUE(r.ok()) << r.message;
    for (size_t i = 0; i < b.rows.size(); ++i) {
      const BatchRow& row = b.rows[i];
      std::vector<float> got(logits.begin() + i * V, logits.begin() + (i + 1) * V);
      std::vector<float> want(alone[row.seq].begin() + row.pos * V, alone[row.seq].begin() + (row.pos + 1) * V);
      EXPECT_LE(test::max_rel_err(got, want), kTol) << "seq " << row.seq << " pos " << row.pos;
    }
  }
}

TEST_P(Invariance, BatchOfSequencesEqualsEachAlone) {
  auto ref = cache(KvKind::kReference);
  check_batch(*model_, *ref, [&] { return cache(KvKind::kReference); }, kTol);
  auto batched = cache(KvKind::kBatchedSequence);
  check_batch(*model_, *batched, [&] { return cache(KvKind::kReference); }, kTol);
}

TEST_P(Invariance, OnlyRowsWantingLogitsGetThem) {
  const std::vector<int32_t> toks = test::test_tokens(6, model_->n_vocab(), 11);
  auto c = cache(KvKind::kReference);
  const std::vector<float> all = test::all_logits(*model_, *c, toks, 6);
  Batch b;
  for (int i = 0; i < 6; ++i) b.rows.push_back({toks[i], 0, i, false});
  b.rows[2].want_logits = true;
  b.want_last_logits_per_sequence();
  auto c2 = cache(KvKind::kReference);
  std::vector<float> logits;
  ASSERT_TRUE(model_->forward(b, *c2, logits).ok());
  const int64_t V = model_->n_vocab();
  ASSERT_EQ(logits.size(), static_cast<size_t>(2 * V));
  EXPECT_LE(test::max_rel_err({logits.begin(), logits.begin() + V}, {all.begin() + 2 * V, all.begin() + 3 * V}),
            kTol);
  EXPECT_LE(test::max_rel_err({logits.begin() + V, logits.end()}, {all.begin() + 5 * V, all.end()}), kTol);
}

INSTANTIATE_TEST_SUITE_P(Families, Invariance, ::testing::ValuesIn(test::all_families()),
                         [](const auto& info) { return test::family_param_name(info.param); });
// gpt-oss has no HF form (so it is not in all_families, which the layout tests share).
INSTANTIATE_TEST_SUITE_P(GgufOnly, Invariance, ::testing::Values(Family::kGptOss),
                         [](const auto&) { return std::string("gpt_oss"); });

}  // namespace
}  // namespace og
