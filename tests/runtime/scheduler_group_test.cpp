// Requests of n choices (Scheduler::submit_group) against a scripted engine
// and real batched caches: the prompt is forwarded once and forked, each
// choice finishes exactly once with its index, a group waits for all its
// slots in FIFO order, n beyond the sessions is refused, cancellation and
// failures end every choice, and a random mix of groups, singles, cancels and
// steps leaves every cache sequence freed.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

#include "runtime/scheduler.h"
#include "scheduler_fakes.h"

namespace og {
namespace {

using namespace og::test;

// x -> y -> z -> x ...; every other token ends nothing.
SeqFakeEngine::Script cycle() {
  return [](int32_t tok, int64_t) -> int32_t {
    if (tok == kX) return kY;
    if (tok == kY) return kZ;
    return kX;
  };
}

std::vector<int32_t> expected_cycle(const std::vector<int32_t>& prompt, int64_t max_new) {
  std::vector<int32_t> out;
  int32_t t = prompt.back();
  for (int64_t i = 0; i < max_new; ++i) {
    t = t == kX ? kY : t == kY ? kZ : kX;
    out.push_back(t);
  }
  return out;
}

struct Choices {
  explicit Choices(int n) : reports(n), texts(n), finishes(n, 0) {}
  std::vector<RequestReport> reports;
  std::vector<std::string> texts;
  std::vector<int> finishes;
};

struct GroupHarness {
  explicit GroupHarness(SchedulerOptions o, KvKind kind = KvKind::kBatchedCell, int64_t max_write = 4)
      : engine(cycle()) {
    KvPolicy p;
    p.max_capacity = o.max_session_tokens;
    p.initial_capacity = 8;
    p.max_write = max_write;
    p.max_sequences = o.max_decode_sequences + o.prefix_cache_entries;
    p.block_size = 4;
    auto c = make_kv_cache(kind, engine.kv_geometry(), p);
    cache = c.get();
    sched = std::make_unique<Scheduler>(engine, tok, std::move(c), o);
  }
  uint64_t submit(std::vector<int32_t> prompt, int64_t max_new, int n) {
    RequestOptions r;
    r.prompt = std::move(prompt);
    r.max_new_tokens = max_new;
    r.stop_ids = {kEos, kEot};
    auto slot = std::make_shared<Choices>(n);
    std::vector<RequestCallbacks> cbs;
    for (int i = 0; i < n; ++i) {
      RequestCallbacks cb;
      cb.on_text = [slot, i](std::string_view p) { slot->texts[i] += p; };
      cb.on_finish = [slot, i](const RequestReport& rep) {
        slot->reports[i] = rep;
        ++slot->finishes[i];
      };
      cbs.push_back(std::move(cb));
    }
    const uint64_t id = sched->submit_group(std::move(r), std::move(cbs));
    results[id] = slot;
    return id;
  }
  Choices& res(uint64_t id) { return *results.at(id); }
  void expect_freed(int sessions) {
    EXPECT_EQ(cache->memory().used(), 0);
    for (int s = 0; s <= sessions; ++s) EXPECT_EQ(cache->length(s), -1) << "sequence " << s;
  }

  FakeTokenizer tok;
  SeqFakeEngine engine;
  KvCache* cache = nullptr;
  std::unique_ptr<Scheduler> sched;
  std::map<uint64_t, std::shared_ptr<Choices>> results;
};

SchedulerOptions opts(int max_decode = 4, int64_t step_tokens = 16, int64_t session_tokens = 64) {
  SchedulerOptions o;
  o.max_decode_sequences = max_decode;
  o.step_tokens = step_tokens;
  o.max_session_tokens = session_tokens;
  return o;
}

TEST(SchedulerGroup, ChoicesForkFromOnePrefill) {
  for (KvKind kind : {KvKind::kBatchedCell, KvKind::kBatchedSequence}) {
    GroupHarness h(opts(4), kind, /*max_write=*/8);
    const std::vector<int32_t> prompt = {kBos, kA, kA, kA, kX};
    const uint64_t id = h.submit(prompt, 5, 3);
    h.sched->run_until_idle();
    Choices& c = h.res(id);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(c.finishes[i], 1) << i;
      EXPECT_EQ(c.reports[i].id, id);
      EXPECT_EQ(c.reports[i].choice, i);
      EXPECT_EQ(c.reports[i].reason, FinishReason::kLength);
      EXPECT_EQ(c.reports[i].tokens, expected_cycle(prompt, 5)) << i;
      EXPECT_EQ(c.reports[i].prompt_tokens, 5);
      EXPECT_EQ(c.texts[i], "yzxyz");
      EXPECT_GE(c.reports[i].ttft_s, 0);
    }
    // One step of the 5 prompt rows, then 4 decode steps of one row per choice.
    ASSERT_EQ(h.engine.batch_sizes.size(), 5u) << kv_kind_name(kind);
    EXPECT_EQ(h.engine.batch_sizes[0], 5);
    for (size_t i = 1; i < 5; ++i) EXPECT_EQ(h.engine.batch_sizes[i], 3);
    const SchedulerSnapshot s = h.sched->snapshot();
    EXPECT_EQ(s.prompt_tokens, 5);
    EXPECT_EQ(s.rows, 5 + 3 * 4);
    EXPECT_EQ(s.generated_tokens, 15);
    EXPECT_EQ(s.finished, 1u);
    EXPECT_EQ(s.peak_running, 3);
    EXPECT_EQ(s.running, 0);
    h.expect_freed(4);
  }
}

TEST(SchedulerGroup, TheFirstTokenMayEndEveryChoice) {
  GroupHarness h(opts(4));
  const uint64_t one = h.submit({kBos, kX}, 1, 4);
  const uint64_t none = h.submit({kBos, kX}, 0, 2);
  h.sched->run_until_idle();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(h.res(one).finishes[i], 1);
    EXPECT_EQ(h.res(one).reports[i].tokens, (std::vector<int32_t>{kY}));
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(h.res(none).finishes[i], 1);
    EXPECT_EQ(h.res(none).reports[i].reason, FinishReason::kLength);
    EXPECT_TRUE(h.res(none).reports[i].tokens.empty());
  }
  h.expect_freed(4);
}

TEST(SchedulerGroup, MoreChoicesThanSessionsAreRefused) {
  GroupHarness h(opts(2));
  const uint64_t id = h.submit({kBos, kX}, 3, 3);
  h.sched->run_until_idle();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h.res(id).finishes[i], 1);
    EXPECT_EQ(h.res(id).reports[i].choice, i);
    EXPECT_EQ(h.res(id).reports[i].reason, FinishReason::kRefused);
    EXPECT_NE(h.res(id).reports[i].message.find("max_decode_sequences"), std::string::npos)
        << h.res(id).reports[i].message;
  }
  EXPECT_EQ(h.sched->snapshot().refused, 1u);
  // No choices at all: refused, with nobody to tell.
  RequestOptions r;
  r.prompt = {kBos};
  EXPECT_GT(h.sched->submit_group(r, {}), 0u);
  h.sched->run_until_idle();
  EXPECT_EQ(h.sched->snapshot().refused, 2u);
}

TEST(SchedulerGroup, AGroupWaitsForAllItsSlotsAndKeepsItsPlace) {
  GroupHarness h(opts(3));
  const uint64_t a = h.submit({kBos, kX}, 6, 1);
  h.sched->step();
  const uint64_t g = h.submit({kBos, kY}, 3, 3);  // needs all three sessions
  const uint64_t c = h.submit({kBos, kZ}, 3, 1);  // one is free, but c may not overtake g
  h.sched->step();
  SchedulerSnapshot s = h.sched->snapshot();
  EXPECT_EQ(s.running, 1);
  EXPECT_EQ(s.waiting, 4);  // choices: 3 + 1
  // g waits for a to finish; c waits for g (which then holds every session).
  // Checked step by step on the streamed text, not on the wall-clock queue
  // times: steps of the scripted engine take microseconds, so those can tie.
  auto g_done = [&] {
    for (int i = 0; i < 3; ++i)
      if (h.res(g).finishes[i] == 0) return false;
    return true;
  };
  for (int steps = 0; h.sched->step(); ++steps) {
    ASSERT_LT(steps, 100);
    if (h.res(a).finishes[0] == 0) {
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(h.res(g).texts[i].empty()) << "g ran before a finished";
    }
    if (!g_done()) {
      EXPECT_TRUE(h.res(c).texts[0].empty()) << "c overtook g";
    }
  }
  h.sched->run_until_idle();
  EXPECT_EQ(h.res(a).reports[0].tokens.size(), 6u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.res(g).reports[i].tokens, expected_cycle({kBos, kY}, 3));
  EXPECT_EQ(h.res(c).reports[0].tokens, expected_cycle({kBos, kZ}, 3));
  EXPECT_EQ(h.res(c).texts[0], "xyz");  // the checks above watched real text
  EXPECT_EQ(h.sched->snapshot().peak_running, 3);
  h.expect_freed(3);
}

TEST(SchedulerGroup, TheQueueBoundCountsChoices) {
  SchedulerOptions o = opts(2);
  o.max_queue = 1;
  GroupHarness h(o);
  const uint64_t a = h.submit({kBos, kX}, 2, 2);  // 2 choices: within 2 sessions + 1
  const uint64_t b = h.submit({kBos, kX}, 2, 2);  // 4 > 3: refused
  const uint64_t c = h.submit({kBos, kX}, 2, 1);  // 3: fits
  h.sched->run_until_idle();
  EXPECT_EQ(h.res(a).reports[1].reason, FinishReason::kLength);
  EXPECT_EQ(h.res(b).reports[0].reason, FinishReason::kRefused);
  EXPECT_EQ(h.res(b).reports[1].reason, FinishReason::kRefused);
  EXPECT_NE(h.res(b).reports[1].message.find("queue is full"), std::string::npos);
  EXPECT_EQ(h.res(c).reports[0].reason, FinishReason::kLength);
}

TEST(SchedulerGroup, CancelBeforeAndAfterTheForkEndsEveryChoice) {
  for (KvKind kind : {KvKind::kBatchedCell, KvKind::kBatchedSequence}) {
    GroupHarness h(opts(4, 4), kind);
    const uint64_t pre = h.submit(std::vector<int32_t>(20, kA), 4, 3);  // 5 steps of prefill
    h.sched->step();
    h.sched->step();
    h.sched->cancel(pre);
    h.sched->step();
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(h.res(pre).finishes[i], 1);
      EXPECT_EQ(h.res(pre).reports[i].reason, FinishReason::kCancelled);
      EXPECT_EQ(h.res(pre).reports[i].generated_tokens, 0);
    }
    h.expect_freed(4);
    const uint64_t dec = h.submit({kBos, kX}, 40, 4);
    for (int i = 0; i < 4; ++i) h.sched->step();
    h.sched->cancel(dec);
    h.sched->step();
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(h.res(dec).finishes[i], 1);
      EXPECT_EQ(h.res(dec).reports[i].reason, FinishReason::kCancelled);
      EXPECT_EQ(h.res(dec).reports[i].generated_tokens, 4);
    }
    EXPECT_FALSE(h.sched->step());
    EXPECT_EQ(h.sched->snapshot().cancelled, 2u);
    h.expect_freed(4);
  }
}

TEST(SchedulerGroup, AFailedPrefillFailsEveryChoiceAndFreesTheSlots) {
  GroupHarness h(opts(3));
  h.engine.throw_at_call = 0;
  const uint64_t bad = h.submit({kBos, kX}, 4, 3);
  h.sched->run_until_idle();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h.res(bad).finishes[i], 1);
    EXPECT_EQ(h.res(bad).reports[i].reason, FinishReason::kFailed);
    EXPECT_NE(h.res(bad).reports[i].message.find("fake forward failure"), std::string::npos);
  }
  EXPECT_EQ(h.sched->snapshot().failed, 1u);
  const uint64_t ok = h.submit({kBos, kX}, 2, 3);
  h.sched->run_until_idle();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.res(ok).reports[i].reason, FinishReason::kLength);
  h.expect_freed(3);
}

TEST(SchedulerGroup, ShutdownEndsWaitingAndRunningGroups) {
  GroupHarness h(opts(2, 16, 4096));
  h.sched->start();
  const uint64_t run = h.submit({kBos, kX}, 4000, 2);
  const uint64_t wait = h.submit({kBos, kX}, 4000, 2);
  h.sched->shutdown(0.05);
  for (uint64_t id : {run, wait})
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(h.res(id).finishes[i], 1);
      EXPECT_EQ(h.res(id).reports[i].reason, FinishReason::kCancelled);
    }
}

// A random mix of groups (n from 1 to one more than the sessions), cancels
// and steps: every choice finishes exactly once with its own index, finished
// ones carry their scripted tokens, and every cache sequence is freed.
TEST(SchedulerGroupProperty, RandomGroupsCancelsAndSteps) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    SchedulerOptions o = opts(1 + static_cast<int>(rng() % 4), 8 + rng() % 24, 48);
    o.prefix_cache_entries = static_cast<int>(rng() % 3);
    o.max_queue = rng() % 2 ? 0 : 6;
    o.max_prefills_per_step = static_cast<int>(rng() % 3);
    const KvKind kind = rng() % 2 ? KvKind::kBatchedCell : KvKind::kBatchedSequence;
    GroupHarness h(o, kind, 1 + rng() % 6);
    std::map<uint64_t, std::pair<std::vector<int32_t>, int64_t>> asked;
    std::vector<uint64_t> ids;
    for (int op = 0; op < 300; ++op) {
      const uint32_t what = rng() % 10;
      if (what < 3) {
        std::vector<int32_t> prompt(1 + rng() % 20, kA);
        prompt.back() = static_cast<int32_t>(kX + rng() % 3);
        const int64_t max_new = rng() % 30;
        const int n = 1 + static_cast<int>(rng() % (o.max_decode_sequences + 1));
        const uint64_t id = h.submit(prompt, max_new, n);
        asked[id] = {prompt, max_new};
        ids.push_back(id);
      } else if (what < 4 && !ids.empty()) {
        h.sched->cancel(ids[rng() % ids.size()]);
      } else {
        h.sched->step();
      }
    }
    h.sched->run_until_idle();
    ASSERT_EQ(h.results.size(), asked.size());
    for (auto& [id, c] : h.results) {
      const auto& [prompt, max_new] = asked.at(id);
      const auto want = expected_cycle(prompt, max_new);
      for (size_t i = 0; i < c->reports.size(); ++i) {
        const RequestReport& r = c->reports[i];
        ASSERT_EQ(c->finishes[i], 1) << "seed " << seed << " id " << id << " choice " << i;
        EXPECT_EQ(r.id, id);
        EXPECT_EQ(r.choice, static_cast<int>(i));
        if (r.reason == FinishReason::kLength) {
          EXPECT_EQ(r.tokens, want) << "seed " << seed << " id " << id << " choice " << i;
        } else if (r.reason == FinishReason::kCancelled) {
          EXPECT_LE(r.tokens.size(), want.size());
          EXPECT_TRUE(std::equal(r.tokens.begin(), r.tokens.end(), want.begin()));
        } else {
          EXPECT_EQ(r.reason, FinishReason::kRefused) << r.message;
        }
      }
    }
    const SchedulerSnapshot s = h.sched->snapshot();
    EXPECT_EQ(s.running, 0);
    EXPECT_EQ(s.waiting, 0);
    EXPECT_EQ(s.finished + s.cancelled + s.refused, asked.size());
    for (int seq = 0; seq <= o.max_decode_sequences; ++seq) EXPECT_EQ(h.cache->length(seq), -1);
    if (o.prefix_cache_entries == 0) {
      EXPECT_EQ(h.cache->memory().used(), 0);
    }
  }
}

}  // namespace
}  // namespace og
