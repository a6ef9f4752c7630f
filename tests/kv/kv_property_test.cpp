// Every cache kind against the reference cache: the same random program of
// chunked prefill, decode, rewind, fork, remove and clear over random
// geometries (windows shorter and longer than the sequences, GQA ratios
// 1/2/4/8, different K/V head dims, shared-KV layers), for every storage dtype
// and every instruction set (kernels::set_active_isa, the one dispatch that
// attention uses too), with and without attention sinks (per-head logits in
// each softmax's denominator, gpt-oss). Every output and every refusal is compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "kernels/kernel_table.h"
#include "kv/kv_attend.h"
#include "kv/kv_cache.h"
#include "kv_test_util.h"

namespace og {
namespace {

using kvtest::random_vec;

struct RandomSetup {
  KvGeometry geo;
  KvPolicy policy;
  std::vector<int> ratio;  // per layer: n_heads / n_kv_heads
  bool sinks = false;      // every update_and_attend passes random per-head sinks
};

RandomSetup random_setup(std::mt19937& rng, KvDType dtype) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  RandomSetup s;
  const int dims[] = {1, 3, 8, 16, 32, 40, 64, 70};
  int n_caches = pick(1, 4);
  for (int c = 0; c < n_caches; ++c) {
    KvCacheSpec spec;
    spec.n_kv_heads = pick(1, 2);
    spec.head_dim_k = dims[pick(0, 7)];
    spec.head_dim_v = pick(0, 1) ? spec.head_dim_k : dims[pick(0, 7)];
    spec.window = pick(0, 2) == 0 ? 0 : pick(1, 30);  // shorter and longer than the sequences
    s.geo.caches.push_back(spec);
  }
  const int ratios[] = {1, 2, 4, 8};
  int n_layers = n_caches + pick(0, 2);
  std::vector<int> cache_ratio(n_caches);
  for (int& r : cache_ratio) r = ratios[pick(0, 3)];
  for (int l = 0; l < n_layers; ++l) {
    int c = l < n_caches ? l : pick(0, n_caches - 1);  // extra layers share a donor's KV
    s.geo.layer_cache.push_back(c);
    s.geo.layer_writes.push_back(l < n_caches);
    s.ratio.push_back(cache_ratio[c]);
  }
  s.policy.dtype = dtype;
  s.policy.max_capacity = pick(8, 70);
  s.policy.initial_capacity = pick(1, 16);
  s.policy.max_write = pick(1, 12);
  s.policy.max_sequences = 6;
  s.policy.block_size = pick(0, 2) == 0 ? 16 * pick(1, 2) : pick(1, 8);  // 16, 32: batched-cell K in key blocks
  if (pick(0, 3) == 0) {
    int n = pick(1, 3);
    for (int i = 0; i < n; ++i) s.policy.windows.push_back(pick(0, 1) ? 0 : pick(1, 20));
  }
  s.sinks = pick(0, 1) == 1;
  return s;
}

float budget(KvDType) { return 2e-5f; }  // equal storage dtype: equal values, different summation order

class Program {
 public:
  Program(KvKind kind, RandomSetup setup, uint32_t seed)
      : kind_(kind), s_(std::move(setup)), rng_(seed),
        test_(make_kv_cache(kind, s_.geo, s_.policy)), ref_(make_kv_cache(KvKind::kReference, s_.geo, s_.policy)) {
    live_ = {0};
    max_end_[0] = 0;
  }

  void run(int n_ops) {
    for (int op = 0; op < n_ops && !::testing::Test::HasFatalFailure(); ++op) {
      int r = pick(0, 99);
      if (r < 55) step();
      else if (r < 67) rewind();
      else if (r < 77) fork();
      else if (r < 82) remove();
      else if (r < 86) clear();
      else if (r < 91) add();
      else if (r < 95) can_extend();
      else test_->release_unused(), ref_->release_unused();
      for (int seq : live_) ASSERT_EQ(test_->length(seq), ref_->length(seq)) << "seq " << seq << " op " << op;
    }
  }

  int steps_ok = 0, history_refusals = 0;
  float max_err = 0.f;

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool batched() const { return kind_ != KvKind::kSequence; }
  int some_live() { return live_.empty() ? 99 : live_[pick(0, int(live_.size()) - 1)]; }

  void step() {
    std::vector<std::vector<KvRow>> per_seq;
    int n_seq = batched() ? pick(1, 3) : 1;
    for (int i = 0; i < n_seq && !live_.empty(); ++i) {
      int seq = some_live();
      bool dup = false;
      for (auto& v : per_seq) dup |= v[0].seq == seq;
      if (dup) continue;
      int64_t len = ref_->length(seq);
      int n = pick(0, 5) == 0 ? pick(1, int(test_->policy().max_write) + 2) : pick(1, 2);
      std::vector<KvRow> rows;
      int64_t skip = pick(0, 40) == 0 ? 1 : 0;  // now and then a gap: refused
      for (int j = 0; j < n; ++j) rows.push_back({seq, len + skip + j});
      per_seq.push_back(rows);
    }
    std::vector<KvRow> rows;  // interleave the sequences' rows, each in order
    while (true) {
      std::vector<int> left;
      for (size_t i = 0; i < per_seq.size(); ++i)
        if (!per_seq[i].empty()) left.push_back(int(i));
      if (left.empty()) break;
      auto& v = per_seq[left[pick(0, int(left.size()) - 1)]];
      rows.push_back(v.front());
      v.erase(v.begin());
    }
    KvResult rt = test_->begin_step(rows);
    if (rt.status == KvStatus::kPoolExhausted) {
      ASSERT_EQ(kind_, KvKind::kBatchedCell);
      return;
    }
    KvResult rr = ref_->begin_step(rows);
    ASSERT_EQ(rt.status, rr.status) << rt.message << " | " << rr.message;
    if (!rt.ok()) {
      EXPECT_FALSE(rt.message.empty());
      return;
    }
    std::vector<float> out_t, out_r;
    for (size_t l = 0; l < s_.geo.layer_cache.size(); ++l) {
      int c = s_.geo.layer_cache[l];
      const KvCacheSpec& sp = s_.geo.caches[c];
      int n_heads = sp.n_kv_heads * s_.ratio[l];
      size_t n = rows.size();
      auto q = random_vec(rng_, n * n_heads * sp.head_dim_k);
      auto k = random_vec(rng_, n * sp.n_kv_heads * sp.head_dim_k);
      auto v = random_vec(rng_, n * sp.n_kv_heads * sp.head_dim_v);
      bool w = s_.geo.layer_writes[l];
      float scale = 1.f / std::sqrt(float(sp.head_dim_k));
      out_t.assign(n * n_heads * sp.head_dim_v, NAN);
      out_r.assign(out_t.size(), NAN);
      // Sinks both below and above the scores (|score| <~ 1 here), so both ways
      // attend_state_finish folds a sink in are taken.
      const std::vector<float> sinks = s_.sinks ? random_vec(rng_, size_t(n_heads), -3.f, 3.f) : std::vector<float>{};
      const float* sk = s_.sinks ? sinks.data() : nullptr;
      test_->update_and_attend(c, rows, q.data(), n_heads, w ? k.data() : nullptr, w ? v.data() : nullptr, scale,
                               out_t.data(), sk);
      ref_->update_and_attend(c, rows, q.data(), n_heads, w ? k.data() : nullptr, w ? v.data() : nullptr, scale,
                              out_r.data(), sk);
      for (size_t i = 0; i < out_t.size(); ++i) {
        float e = std::fabs(out_t[i] - out_r[i]);
        ASSERT_FALSE(std::isnan(out_t[i])) << "layer " << l << " element " << i;
        max_err = std::max(max_err, e);
        ASSERT_LE(e, budget(s_.policy.dtype)) << "layer " << l << " element " << i << " of " << out_t.size();
      }
    }
    // An aborted step keeps the lengths, but ring slots it wrote may be gone.
    for (const KvRow& r : rows) max_end_[r.seq] = std::max(max_end_[r.seq], r.pos + 1);
    if (pick(0, 15) == 0) {
      test_->abort_step();
      ref_->abort_step();
      return;
    }
    test_->end_step();
    ref_->end_step();
    ++steps_ok;
  }

  // A kind may refuse for lost ring history only where its contract allows:
  // a ring layer exists and the new length is more than max_write below the
  // furthest position the sequence has written.
  void check_history_refusal(const KvResult& r, int seq, int64_t new_len) {
    ++history_refusals;
    bool has_ring = false;
    for (int w : windows()) has_ring |= w > 0;
    EXPECT_TRUE(has_ring);
    EXPECT_LT(new_len, max_end_[seq] - test_->policy().max_write) << r.message;
    EXPECT_GT(r.history_begin, 0);
    EXPECT_FALSE(r.message.empty());
  }

  std::vector<int> windows() const {
    std::vector<int> w;
    for (size_t c = 0; c < s_.geo.caches.size(); ++c)
      w.push_back(s_.policy.windows.empty() ? s_.geo.caches[c].window
                                             : s_.policy.windows[c % s_.policy.windows.size()]);
    return w;
  }

  void rewind() {
    int seq = pick(0, 9) == 0 ? 77 : some_live();
    int64_t len = std::max<int64_t>(ref_->length(seq), 0);
    int64_t n = pick(0, 3) == 0 ? pick(0, int(len) + 1) : pick(0, 3);
    KvResult rt = test_->rewind(seq, n);
    if (rt.status == KvStatus::kHistoryUnavailable) return check_history_refusal(rt, seq, len - n);
    KvResult rr = ref_->rewind(seq, n);
    ASSERT_EQ(rt.status, rr.status) << rt.message << " | " << rr.message;
  }

  void fork() {
    int src = some_live();
    int dst = pick(0, 2) == 0 ? some_live() : pick(0, 7);
    int64_t len = std::max<int64_t>(ref_->length(src), 0);
    int64_t upto = pick(0, 1) ? len : pick(0, int(len) + 1);
    KvResult rt = test_->fork(src, dst, upto);
    if (!batched()) {
      EXPECT_EQ(rt.status, KvStatus::kInvalid);
      return;
    }
    if (rt.status == KvStatus::kHistoryUnavailable) return check_history_refusal(rt, src, upto);
    if (rt.status == KvStatus::kPoolExhausted) {
      ASSERT_EQ(kind_, KvKind::kBatchedCell);
      return;
    }
    KvResult rr = ref_->fork(src, dst, upto);
    ASSERT_EQ(rt.status, rr.status) << rt.message << " | " << rr.message;
    if (rt.ok()) {
      if (std::find(live_.begin(), live_.end(), dst) == live_.end()) live_.push_back(dst);
      max_end_[dst] = max_end_[src];
    }
  }

  void remove() {
    int seq = pick(0, 5) == 0 ? 55 : some_live();
    KvResult rt = test_->remove_sequence(seq), rr = ref_->remove_sequence(seq);
    ASSERT_EQ(rt.status, rr.status);
    if (rt.ok()) live_.erase(std::find(live_.begin(), live_.end(), seq));
  }

  void clear() {
    int seq = some_live();
    KvResult rt = test_->clear(seq), rr = ref_->clear(seq);
    ASSERT_EQ(rt.status, rr.status);
    if (rt.ok()) max_end_[seq] = 0;
  }

  void add() {
    int seq = batched() ? pick(0, 7) : 0;
    KvResult rt = test_->add_sequence(seq), rr = ref_->add_sequence(seq);
    ASSERT_EQ(rt.status, rr.status);
    if (rt.ok()) live_.push_back(seq), max_end_[seq] = 0;
  }

  void can_extend() {
    int seq = some_live();
    int64_t n = pick(0, 40);
    KvResult rt = test_->can_extend(seq, n), rr = ref_->can_extend(seq, n);
    if (rt.status == KvStatus::kPoolExhausted && kind_ == KvKind::kBatchedCell) return;
    ASSERT_EQ(rt.status, rr.status);
  }

  KvKind kind_;
  RandomSetup s_;
  std::mt19937 rng_;
  std::unique_ptr<KvCache> test_, ref_;
  std::vector<int> live_;
  std::map<int, int64_t> max_end_;  // furthest position written since creation or clear
};

using Param = std::tuple<KvKind, KvDType, kernels::Isa>;

class KvProperty : public ::testing::TestWithParam<Param> {};

TEST_P(KvProperty, MatchesReference) {
  auto [kind, dtype, isa] = GetParam();
  if (!kernels::isa_available(isa)) {
    // Not available on this CPU: the scalar run of the same parameters covers the kinds.
    EXPECT_NE(isa, kernels::Isa::kScalar);
    std::printf("[ kv ] %s is not available on this CPU\n", kernels::isa_str(isa));
    return;
  }
  const kernels::Isa saved = kernels::set_active_isa(isa);
  int steps = 0, refusals = 0, sink_programs = 0;
  float max_err = 0;
  for (uint32_t seed = 1; seed <= 12 && !HasFatalFailure(); ++seed) {
    std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(dtype) * 31 + static_cast<uint32_t>(kind));
    RandomSetup setup = random_setup(rng, dtype);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " " << make_kv_cache(kind, setup.geo, setup.policy)->describe());
    // Even seeds split every history into pieces of >= 2 rows (merged partial
    // softmax states), as long histories are split across threads.
    const kv::AttendSplit saved_split = kv::attend_split();
    if (seed % 2 == 0) kv::set_attend_split({2, 64});
    sink_programs += setup.sinks ? 1 : 0;
    Program prog(kind, setup, seed);
    prog.run(120);
    kv::set_attend_split(saved_split);
    steps += prog.steps_ok;
    refusals += prog.history_refusals;
    max_err = std::max(max_err, prog.max_err);
  }
  kernels::set_active_isa(saved);
  EXPECT_GT(steps, 200);
  EXPECT_GT(sink_programs, 0);
  EXPECT_LT(sink_programs, 12);
  std::printf("[ kv ] %s %s %s: %d steps, %d history refusals, max |err| %.2g\n", kv_kind_name(kind),
              kv_dtype_name(dtype), kernels::isa_str(isa), steps, refusals, max_err);
}

// avxvnni is left out: its table has AVX2's attention kernels (only its int8
// matmuls differ); so are dotprod and i8mm, which have neon's (arm/attend_neon.cpp).
INSTANTIATE_TEST_SUITE_P(
    AllKinds, KvProperty,
    ::testing::Combine(::testing::Values(KvKind::kSequence, KvKind::kBatchedSequence, KvKind::kBatchedCell),
                       ::testing::Values(KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0),
                       ::testing::Values(kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx512,
                                         kernels::Isa::kNeon)),
    [](const ::testing::TestParamInfo<Param>& info) {
      std::string s = std::string(kv_kind_name(std::get<0>(info.param))) + "_" +
                      kv_dtype_name(std::get<1>(info.param)) + "_" + kernels::isa_str(std::get<2>(info.param));
      std::replace(s.begin(), s.end(), '-', '_');
      return s;
    });

}  // namespace
}  // namespace og
