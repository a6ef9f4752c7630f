// Scheduler against a scripted engine and real batched caches: batching of
// decode rows, FIFO admission, refusals, cancellation, thread-safe submission,
// shutdown, and the one-finish-per-request guarantee.
#include "runtime/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <mutex>
#include <thread>

#include "scheduler_fakes.h"

namespace og {
namespace {

using namespace og::test;

// x -> y -> z -> x ... and an <eot> once position `stop_at` is reached.
SeqFakeEngine::Script cycle(int64_t stop_at = 1 << 30) {
  return [stop_at](int32_t tok, int64_t pos) -> int32_t {
    if (pos + 1 >= stop_at) return kEot;
    if (tok == kX) return kY;
    if (tok == kY) return kZ;
    return kX;
  };
}

struct Result {
  RequestReport report;
  std::string text;
  int finishes = 0;
};

struct Harness {
  explicit Harness(SeqFakeEngine::Script s, SchedulerOptions o = {}, KvKind kind = KvKind::kBatchedCell,
                   int64_t max_write = 4)
      : engine(std::move(s)) {
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
  uint64_t submit(std::vector<int32_t> prompt, int64_t max_new = 8) {
    RequestOptions r;
    r.prompt = std::move(prompt);
    r.max_new_tokens = max_new;
    r.stop_ids = {kEos, kEot};
    auto slot = std::make_shared<Result>();
    RequestCallbacks cb;
    cb.on_text = [slot](std::string_view p) { slot->text += p; };
    cb.on_finish = [slot](const RequestReport& rep) {
      slot->report = rep;
      ++slot->finishes;
    };
    const uint64_t id = sched->submit(std::move(r), std::move(cb));
    std::lock_guard<std::mutex> lk(mu);
    results[id] = slot;
    return id;
  }
  Result& res(uint64_t id) { return *results.at(id); }

  FakeTokenizer tok;
  SeqFakeEngine engine;
  KvCache* cache = nullptr;
  std::unique_ptr<Scheduler> sched;
  std::mutex mu;
  std::map<uint64_t, std::shared_ptr<Result>> results;
};

SchedulerOptions opts(int max_decode = 4, int64_t step_tokens = 16, int64_t session_tokens = 64) {
  SchedulerOptions o;
  o.max_decode_sequences = max_decode;
  o.step_tokens = step_tokens;
  o.max_session_tokens = session_tokens;
  return o;
}

TEST(Scheduler, OneRequestStreamsAndFinishesOnce) {
  Harness h(cycle(6), opts());
  const uint64_t id = h.submit({kBos, kX});
  h.sched->run_until_idle();
  Result& r = h.res(id);
  EXPECT_EQ(r.finishes, 1);
  EXPECT_EQ(r.report.reason, FinishReason::kStop);
  EXPECT_EQ(r.report.stop_token, kEot);
  EXPECT_EQ(r.report.tokens, (std::vector<int32_t>{kY, kZ, kX, kY, kEot}));
  EXPECT_EQ(r.text, "yzxy");
  EXPECT_EQ(r.report.prompt_tokens, 2);
  EXPECT_EQ(r.report.generated_tokens, 5);
  const SchedulerSnapshot s = h.sched->snapshot();
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.finished, 1u);
}

TEST(Scheduler, DecodeRowsOfAllRunningSessionsShareOneStep) {
  Harness h(cycle(), opts(4));
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(h.submit({kBos, kX}, 6));
  h.sched->run_until_idle();
  for (uint64_t id : ids) {
    EXPECT_EQ(h.res(id).report.reason, FinishReason::kLength);
    EXPECT_EQ(h.res(id).report.tokens, (std::vector<int32_t>{kY, kZ, kX, kY, kZ, kX}));
  }
  // Step 1: four 2-row prompts (8 rows); then 5 decode steps of 4 rows each.
  ASSERT_EQ(h.engine.batch_sizes.size(), 6u);
  EXPECT_EQ(h.engine.batch_sizes[0], 8);
  for (size_t i = 1; i < 6; ++i) EXPECT_EQ(h.engine.batch_sizes[i], 4);
  const SchedulerSnapshot s = h.sched->snapshot();
  EXPECT_EQ(s.steps_prefill_only, 1);
  EXPECT_EQ(s.steps_decode_only, 5);
  EXPECT_EQ(s.peak_running, 4);
}

TEST(Scheduler, StepBudgetSplitsPrefillAndDecodeGoesFirst) {
  // Budget 6 rows, max write 4: a 10-token prompt takes several steps while
  // the first session decodes one row in each of them.
  Harness h(cycle(), opts(2, 6));
  const uint64_t a = h.submit({kBos, kX}, 8);
  h.sched->step();  // a's prompt
  const uint64_t b = h.submit(std::vector<int32_t>(10, kA), 2);
  h.sched->run_until_idle();
  EXPECT_EQ(h.res(a).report.generated_tokens, 8);
  EXPECT_EQ(h.res(b).report.generated_tokens, 2);
  for (int n : h.engine.batch_sizes) EXPECT_LE(n, 6);
  EXPECT_GE(h.sched->snapshot().steps_mixed, 2);
}

TEST(Scheduler, OnePrefillPerStepServesABurstInTurn) {
  // Four 2-token prompts at once: with no limit one step carries all four
  // (their first tokens all wait for it); with one prefill per step each step
  // carries the next prompt beside the decode rows of those before it.
  for (int limit : {0, 1, 2}) {
    SchedulerOptions o = opts(4);
    o.max_prefills_per_step = limit;
    Harness h(cycle(), o);
    std::vector<uint64_t> ids;
    for (int i = 0; i < 4; ++i) ids.push_back(h.submit({kBos, kX}, 6));
    h.sched->run_until_idle();
    const std::vector<std::vector<int>> want_first = {{8, 4}, {2, 3, 4, 5, 4}, {4, 6, 4}};
    const std::vector<int>& want = want_first[static_cast<size_t>(limit)];
    ASSERT_GE(h.engine.batch_sizes.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(h.engine.batch_sizes[i], want[i]) << "limit " << limit << " step " << i;
    for (uint64_t id : ids) {
      EXPECT_EQ(h.res(id).finishes, 1);
      EXPECT_EQ(h.res(id).report.reason, FinishReason::kLength);
      EXPECT_EQ(h.res(id).report.tokens, (std::vector<int32_t>{kY, kZ, kX, kY, kZ, kX})) << "limit " << limit;
    }
  }
}

TEST(Scheduler, OnePrefillPerStepNeverStarvesDecodeNorOvertakes) {
  // A long prompt chunked over several steps holds the one prefill place
  // (admission order: the short prompt behind it waits), while the session
  // already decoding gets its row in every step.
  SchedulerOptions o = opts(3, 6);
  o.max_prefills_per_step = 1;
  Harness h(cycle(), o);
  const uint64_t a = h.submit({kBos, kX}, 12);
  h.sched->step();
  const uint64_t b = h.submit(std::vector<int32_t>(10, kA), 2);
  const uint64_t c = h.submit({kBos, kY}, 2);
  int steps = 0;
  while (h.res(a).finishes == 0) {
    const size_t before = h.engine.batch_sizes.size();
    h.sched->step();
    ++steps;
    ASSERT_EQ(h.engine.batch_sizes.size(), before + 1);
    EXPECT_LE(h.engine.batch_sizes.back(), 6);
  }
  // a sampled one token per step after its prompt step: 11 more tokens.
  EXPECT_EQ(steps, 11);
  // b's prompt in chunks of 4, 4, 2 beside a's row; c's 2 rows wait for the
  // step after b's last chunk (no limit: they would share it, 5 rows).
  const std::vector<int> want = {2, 5, 5, 3, 4};
  ASSERT_GE(h.engine.batch_sizes.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(h.engine.batch_sizes[i], want[i]) << "step " << i;
  h.sched->run_until_idle();
  EXPECT_EQ(h.res(a).report.generated_tokens, 12);
  EXPECT_EQ(h.res(b).report.tokens, (std::vector<int32_t>{kX, kY}));
  EXPECT_EQ(h.res(c).report.tokens, (std::vector<int32_t>{kZ, kX}));
}

TEST(Scheduler, WaitsForASlotInFifoOrder) {
  Harness h(cycle(), opts(1));
  const uint64_t a = h.submit({kBos, kX}, 3);
  const uint64_t b = h.submit({kBos, kY}, 3);
  h.sched->step();
  EXPECT_EQ(h.sched->snapshot().running, 1);
  EXPECT_EQ(h.sched->snapshot().waiting, 1);
  // b streams nothing until a has finished (checked per step, not by the
  // wall-clock queue times, which can tie when steps take microseconds).
  for (int steps = 0; h.sched->step(); ++steps) {
    ASSERT_LT(steps, 100);
    if (h.res(a).finishes == 0) {
      EXPECT_TRUE(h.res(b).text.empty()) << "b overtook a";
    }
  }
  EXPECT_EQ(h.res(a).finishes, 1);
  EXPECT_EQ(h.res(b).finishes, 1);
  EXPECT_FALSE(h.res(b).text.empty());
  EXPECT_EQ(h.res(b).report.tokens, (std::vector<int32_t>{kZ, kX, kY}));
}

TEST(Scheduler, RefusesWhatCanNeverRun) {
  Harness h(cycle(), opts(2, 16, 16));
  const uint64_t too_long = h.submit(std::vector<int32_t>(10, kA), 7);
  const uint64_t empty = h.submit({}, 4);
  const uint64_t bad_id = h.submit({kBos, 999}, 4);
  const uint64_t negative = h.submit({kBos}, -1);
  const uint64_t ok = h.submit(std::vector<int32_t>(10, kA), 6);  // exactly fits
  h.sched->run_until_idle();
  for (uint64_t id : {too_long, empty, bad_id, negative}) {
    EXPECT_EQ(h.res(id).finishes, 1);
    EXPECT_EQ(h.res(id).report.reason, FinishReason::kRefused);
  }
  EXPECT_NE(h.res(too_long).report.message.find("exceeds the session limit of 16"), std::string::npos);
  EXPECT_NE(h.res(empty).report.message.find("empty"), std::string::npos);
  EXPECT_NE(h.res(bad_id).report.message.find("999"), std::string::npos);
  EXPECT_EQ(h.res(ok).report.reason, FinishReason::kLength);
  EXPECT_EQ(h.sched->snapshot().refused, 4u);
}

TEST(Scheduler, QueueBoundRefuses) {
  SchedulerOptions o = opts(1);
  o.max_queue = 2;
  Harness h(cycle(), o);
  // One session and two places in the queue: the fourth request is refused.
  const uint64_t a = h.submit({kBos, kX}, 2);
  const uint64_t b = h.submit({kBos, kX}, 2);
  const uint64_t c = h.submit({kBos, kX}, 2);
  const uint64_t d = h.submit({kBos, kX}, 2);
  h.sched->run_until_idle();
  for (uint64_t id : {a, b, c}) EXPECT_EQ(h.res(id).report.reason, FinishReason::kLength);
  EXPECT_EQ(h.res(d).report.reason, FinishReason::kRefused);
  EXPECT_NE(h.res(d).report.message.find("queue is full"), std::string::npos);
}

TEST(Scheduler, QueueBoundCountsOnlyRequestsBeyondTheSessions) {
  // A burst as large as the sessions, submitted before any step, fits in
  // the sessions: none of it is refused even with a queue of one.
  SchedulerOptions o = opts(4);
  o.max_queue = 1;
  Harness h(cycle(), o, KvKind::kBatchedCell, 4);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(h.submit({kBos, kX}, 3));
  const uint64_t over = h.submit({kBos, kX}, 3);
  h.sched->step();
  // Sessions are busy and the queue holds one: the next is refused too.
  const uint64_t busy = h.submit({kBos, kX}, 3);
  h.sched->run_until_idle();
  for (uint64_t id : ids) EXPECT_EQ(h.res(id).report.reason, FinishReason::kLength);
  EXPECT_EQ(h.res(over).report.reason, FinishReason::kRefused);
  EXPECT_EQ(h.res(busy).report.reason, FinishReason::kRefused);
  // Once they finish there is room again.
  const uint64_t later = h.submit({kBos, kX}, 3);
  h.sched->run_until_idle();
  EXPECT_EQ(h.res(later).report.reason, FinishReason::kLength);
}

TEST(Scheduler, CancelMidPrefillAndMidDecodeFreesTheCache) {
  for (KvKind kind : {KvKind::kBatchedCell, KvKind::kBatchedSequence}) {
    Harness h(cycle(), opts(2, 4, 64), kind, 4);
    const uint64_t pre = h.submit(std::vector<int32_t>(20, kA), 4);  // 5 steps of prefill
    const uint64_t dec = h.submit({kBos, kX}, 40);
    h.sched->step();
    h.sched->step();
    h.sched->cancel(pre);
    h.sched->step();
    EXPECT_EQ(h.res(pre).finishes, 1);
    EXPECT_EQ(h.res(pre).report.reason, FinishReason::kCancelled);
    EXPECT_EQ(h.res(pre).report.generated_tokens, 0);
    for (int i = 0; i < 3; ++i) h.sched->step();
    h.sched->cancel(dec);
    h.sched->cancel(dec);   // twice: ignored
    h.sched->cancel(12345);  // unknown: ignored
    h.sched->step();
    EXPECT_EQ(h.res(dec).report.reason, FinishReason::kCancelled);
    EXPECT_GT(h.res(dec).report.generated_tokens, 0);
    EXPECT_FALSE(h.sched->step());
    EXPECT_EQ(h.cache->memory().used(), 0);
    for (int s = 0; s < 4; ++s) EXPECT_EQ(h.cache->length(s), -1);
  }
}

TEST(Scheduler, ForwardFailureFailsTheStepsSessionsOnly) {
  Harness h(cycle(), opts(2));
  const uint64_t a = h.submit({kBos, kX}, 4);
  h.sched->step();
  h.engine.throw_at_call = h.engine.calls;  // the next forward throws
  h.sched->step();
  EXPECT_EQ(h.res(a).report.reason, FinishReason::kFailed);
  EXPECT_NE(h.res(a).report.message.find("fake forward failure"), std::string::npos);
  const uint64_t b = h.submit({kBos, kX}, 2);
  h.sched->run_until_idle();
  EXPECT_EQ(h.res(b).report.reason, FinishReason::kLength);
  EXPECT_EQ(h.cache->memory().used(), 0);
}

TEST(Scheduler, SubmissionsFromEightThreadsWithTheBackgroundThread) {
  Harness h(cycle(), opts(4, 32, 64));
  h.sched->start();
  std::vector<std::thread> threads;
  std::atomic<int> submitted{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const uint64_t id = h.submit({kBos, (t + i) % 2 ? kX : kY}, 1 + (i % 5));
        if (i % 4 == 3) h.sched->cancel(id);
        ++submitted;
      }
    });
  for (auto& th : threads) th.join();
  h.sched->shutdown(30);
  ASSERT_EQ(submitted.load(), 80);
  ASSERT_EQ(h.results.size(), 80u);
  int done = 0;
  for (auto& [id, r] : h.results) {
    EXPECT_EQ(r->finishes, 1) << id;
    done += r->report.reason == FinishReason::kLength ? 1 : 0;
  }
  EXPECT_GE(done, 60);
  EXPECT_EQ(h.cache->memory().used(), 0);
}

TEST(Scheduler, ShutdownCancelsWhatOutlivesTheGraceAndRefusesLaterSubmits) {
  Harness h(cycle(), opts(2, 16, 4096));
  h.sched->start();
  const uint64_t a = h.submit({kBos, kX}, 4000);
  h.sched->shutdown(0.05);
  EXPECT_EQ(h.res(a).finishes, 1);
  EXPECT_EQ(h.res(a).report.reason, FinishReason::kCancelled);
  const uint64_t late = h.submit({kBos, kX}, 2);
  h.sched->run_until_idle();
  EXPECT_EQ(h.res(late).report.reason, FinishReason::kRefused);
}

TEST(Scheduler, BadOptionsAreErrors) {
  FakeTokenizer tok;
  SeqFakeEngine engine(cycle());
  KvPolicy p;
  p.max_capacity = 64;
  p.max_sequences = 2;
  auto make = [&] { return make_kv_cache(KvKind::kBatchedCell, engine.kv_geometry(), p); };
  SchedulerOptions o = opts(4, 16, 64);
  EXPECT_THROW({ Scheduler s(engine, tok, make(), o); }, Error);  // cache sized for 2 sequences
  o = opts(2, 1, 64);
  EXPECT_THROW({ Scheduler s(engine, tok, make(), o); }, Error);  // step budget below the decode rows
  o = opts(2, 16, 128);
  EXPECT_THROW({ Scheduler s(engine, tok, make(), o); }, Error);  // sessions longer than the cache
  o = opts(2, 16, 64);
  o.max_prefills_per_step = -1;
  EXPECT_THROW({ Scheduler s(engine, tok, make(), o); }, Error);  // a negative prefill limit
}

// What the cycle script gives after `prompt`, max_new tokens long.
std::vector<int32_t> expected_cycle(const std::vector<int32_t>& prompt, int64_t max_new) {
  std::vector<int32_t> out;
  int32_t t = prompt.back();
  for (int64_t i = 0; i < max_new; ++i) {
    t = t == kX ? kY : t == kY ? kZ : kX;
    out.push_back(t);
  }
  return out;
}

// A random mix of submit / cancel / step against a model of the scheduler:
// every request finishes exactly once, finished ones carry exactly their
// scripted tokens, nothing is lost or duplicated, and every session's cache
// sequence is freed at the end (with and without the prefix cache).
TEST(SchedulerProperty, RandomSubmitCancelStep) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    SchedulerOptions o = opts(1 + static_cast<int>(rng() % 4), 8 + rng() % 24, 48);
    o.prefix_cache_entries = static_cast<int>(rng() % 3);
    o.max_queue = rng() % 2 ? 0 : 6;
    o.max_prefills_per_step = static_cast<int>(seed % 3);  // from the seed: the draws above stay as they were
    const KvKind kind = rng() % 2 ? KvKind::kBatchedCell : KvKind::kBatchedSequence;
    Harness h(cycle(), o, kind, 1 + rng() % 6);
    std::map<uint64_t, std::pair<std::vector<int32_t>, int64_t>> asked;
    std::vector<uint64_t> ids;
    for (int op = 0; op < 300; ++op) {
      const uint32_t what = rng() % 10;
      if (what < 3) {
        std::vector<int32_t> prompt(1 + rng() % 20, kA);
        prompt.back() = static_cast<int32_t>(kX + rng() % 3);
        const int64_t max_new = rng() % 30;
        const uint64_t id = h.submit(prompt, max_new);
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
    for (auto& [id, r] : h.results) {
      ASSERT_EQ(r->finishes, 1) << "seed " << seed << " id " << id;
      EXPECT_EQ(r->report.id, id);
      const auto& [prompt, max_new] = asked.at(id);
      if (r->report.reason == FinishReason::kLength) {
        EXPECT_EQ(r->report.tokens, expected_cycle(prompt, max_new)) << "seed " << seed << " id " << id;
      } else if (r->report.reason == FinishReason::kCancelled) {
        const auto want = expected_cycle(prompt, max_new);
        EXPECT_LE(r->report.tokens.size(), want.size());
        EXPECT_TRUE(std::equal(r->report.tokens.begin(), r->report.tokens.end(), want.begin()));
      } else {
        EXPECT_EQ(r->report.reason, FinishReason::kRefused) << r->report.message;
      }
    }
    const SchedulerSnapshot s = h.sched->snapshot();
    EXPECT_EQ(s.running, 0);
    EXPECT_EQ(s.waiting, 0);
    EXPECT_EQ(s.finished + s.cancelled + s.refused, asked.size());
    for (int seq = 0; seq <= o.max_decode_sequences; ++seq) EXPECT_EQ(h.cache->length(seq), -1);
    EXPECT_LE(s.prefix_entries, o.prefix_cache_entries);
    if (o.prefix_cache_entries == 0) {
      EXPECT_EQ(h.cache->memory().used(), 0);
    }
  }
}

}  // namespace
}  // namespace og
