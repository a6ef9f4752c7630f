// The scheduler on real (synthetic) models: greedy tokens of batched requests
// equal each request alone through Session::generate (the `run` path) for
// every batched cache kind, session count and step budget; the prefix cache
// reuses what it may (sliding windows included), misses safely otherwise, and
// forks of one cached prefix never corrupt each other; a request of n choices
// gives the tokens of n single requests with consecutive seeds while its
// prompt is forwarded once.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "model/synth_fixture.h"
#include "runtime/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

using namespace og::test;

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

Loaded load(synth::Family f) {
  Loaded l;
  l.model = Model::load(synth_gguf(f));
  l.tok = Tokenizer::from_path(l.model->source_path());
  return l;
}

constexpr int64_t kMaxWrite = 4;
constexpr int64_t kSessionTokens = 64;

KvPolicy policy(int sequences, std::vector<int> windows = {}) {
  KvPolicy p;
  p.max_capacity = kSessionTokens;
  p.initial_capacity = 8;
  p.max_write = kMaxWrite;
  p.max_sequences = sequences;
  p.block_size = 4;
  p.windows = std::move(windows);
  return p;
}

SamplerConfig sampling(uint64_t seed) {
  SamplerConfig c;
  if (seed > 0) {
    c.temperature = 1.5;
    c.seed = seed;
  }
  return c;
}

// One request alone, as `offgraph run` does it.
std::vector<int32_t> alone(const Loaded& l, const std::vector<int32_t>& prompt, int64_t max_new, uint64_t seed = 0,
                           std::vector<int> windows = {}) {
  ModelEngine engine(*l.model);
  Session s(engine, make_kv_cache(KvKind::kSequence, l.model->kv_geometry(), policy(1, windows)), *l.tok);
  Sampler sampler(sampling(seed));
  GenerateOptions o;
  o.max_new_tokens = max_new;
  return s.generate(prompt, sampler, o, nullptr).tokens;
}

struct Run {
  std::map<uint64_t, RequestReport> reports;
  std::map<std::pair<uint64_t, int>, RequestReport> choices;  // (id, choice) of groups
  SchedulerSnapshot snap;
};

struct Batched {
  Batched(const Loaded& l, KvKind kind, SchedulerOptions o, std::vector<int> windows = {}) : engine(*l.model) {
    auto c = make_kv_cache(kind, l.model->kv_geometry(),
                           policy(o.max_decode_sequences + o.prefix_cache_entries, std::move(windows)));
    cache = c.get();
    sched = std::make_unique<Scheduler>(engine, *l.tok, std::move(c), o);
  }
  uint64_t submit(const std::vector<int32_t>& prompt, int64_t max_new, uint64_t seed = 0) {
    RequestOptions r;
    r.prompt = prompt;
    r.max_new_tokens = max_new;
    r.sampler = sampling(seed);
    RequestCallbacks cb;
    cb.on_finish = [this](const RequestReport& rep) { run.reports[rep.id] = rep; };
    return sched->submit(std::move(r), std::move(cb));
  }
  uint64_t submit_group(const std::vector<int32_t>& prompt, int64_t max_new, uint64_t seed, int n) {
    RequestOptions r;
    r.prompt = prompt;
    r.max_new_tokens = max_new;
    r.sampler = sampling(seed);
    std::vector<RequestCallbacks> cbs(static_cast<size_t>(n));
    for (auto& cb : cbs) cb.on_finish = [this](const RequestReport& rep) { run.choices[{rep.id, rep.choice}] = rep; };
    return sched->submit_group(std::move(r), std::move(cbs));
  }
  ModelEngine engine;
  KvCache* cache = nullptr;
  std::unique_ptr<Scheduler> sched;
  Run run;
};

SchedulerOptions sopts(int max_decode, int64_t step_tokens, int prefix_entries = 0, int prefills_per_step = 0) {
  SchedulerOptions o;
  o.max_prefills_per_step = prefills_per_step;
  o.max_decode_sequences = max_decode;
  o.step_tokens = step_tokens;
  o.max_session_tokens = kSessionTokens;
  o.prefix_cache_entries = prefix_entries;
  return o;
}

std::vector<std::vector<int32_t>> prompts(int32_t n_vocab) {
  std::vector<std::vector<int32_t>> p;
  const int lengths[] = {3, 17, 1, 9, 22, 5};
  for (int i = 0; i < 6; ++i) p.push_back(test_tokens(lengths[i], n_vocab, 7 + i));
  return p;
}

class SchedulerModel : public ::testing::TestWithParam<synth::Family> {};

TEST_P(SchedulerModel, BatchedGreedyEqualsEachRequestAlone) {
  const Loaded l = load(GetParam());
  const auto ps = prompts(l.model->n_vocab());
  std::vector<std::vector<int32_t>> want;
  for (const auto& p : ps) want.push_back(alone(l, p, 12));
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell})
    for (auto [max_decode, step_tokens, prefills] : {std::tuple{2, 5, 0}, std::tuple{6, 64, 0}, std::tuple{3, 7, 0},
                                                     std::tuple{6, 64, 1}, std::tuple{4, 9, 2}}) {
      Batched b(l, kind, sopts(max_decode, step_tokens, 0, prefills));
      std::vector<uint64_t> ids;
      for (const auto& p : ps) ids.push_back(b.submit(p, 12));
      b.sched->run_until_idle();
      for (size_t i = 0; i < ps.size(); ++i)
        EXPECT_EQ(b.run.reports.at(ids[i]).tokens, want[i])
            << kv_kind_name(kind) << " max_decode " << max_decode << " step_tokens " << step_tokens
            << " prefills per step " << prefills << " prompt " << i;
      EXPECT_EQ(b.cache->memory().used(), 0);
    }
}

TEST_P(SchedulerModel, PrefixCacheReusesAndEqualsColdRuns) {
  const Loaded l = load(GetParam());
  const int32_t nv = l.model->n_vocab();
  const std::vector<int32_t> system = test_tokens(20, nv, 99);
  auto with = [&](std::vector<int32_t> tail) {
    std::vector<int32_t> p = system;
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  };
  const std::vector<int32_t> a = with(test_tokens(3, nv, 1));
  const std::vector<int32_t> b = with(test_tokens(4, nv, 2));
  std::vector<int32_t> near = a;  // shares 21 of a's 23 tokens
  near[21] = near[21] == 5 ? 6 : 5;
  std::vector<int32_t> far(a.begin(), a.begin() + 14);  // shares 14: ring history of a's entry is gone
  far.push_back(7);
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    Batched bt(l, kind, sopts(2, 16, 4));
    const uint64_t ia = bt.submit(a, 8);
    bt.sched->run_until_idle();
    const uint64_t ia2 = bt.submit(a, 8);
    const uint64_t ib = bt.submit(b, 8);
    bt.sched->run_until_idle();
    const uint64_t in = bt.submit(near, 8);
    const uint64_t ifar = bt.submit(far, 8);
    bt.sched->run_until_idle();
    const auto& r = bt.run.reports;
    EXPECT_EQ(r.at(ia).cached_tokens, 0);
    EXPECT_EQ(r.at(ia2).cached_tokens, static_cast<int64_t>(a.size()) - 1);
    EXPECT_EQ(r.at(ia).tokens, alone(l, a, 8));
    EXPECT_EQ(r.at(ia2).tokens, r.at(ia).tokens);
    EXPECT_EQ(r.at(ib).tokens, alone(l, b, 8));
    EXPECT_EQ(r.at(in).tokens, alone(l, near, 8));
    EXPECT_EQ(r.at(ifar).tokens, alone(l, far, 8));
    const bool ring = l.model->kv_geometry().caches.back().window > 0 ||
                      l.model->kv_geometry().caches.front().window > 0;
    // b shares the 20-token system prompt with a's entry; near shares 21 tokens.
    EXPECT_EQ(r.at(ib).cached_tokens, 20) << kv_kind_name(kind);
    EXPECT_EQ(r.at(in).cached_tokens, 21) << kv_kind_name(kind);
    // far needs positions a's ring entry overwrote (window 8 + chunk 4 - 1 slots): a safe miss.
    if (ring) EXPECT_EQ(r.at(ifar).cached_tokens, 0) << kv_kind_name(kind);
    else EXPECT_EQ(r.at(ifar).cached_tokens, 14) << kv_kind_name(kind);
    const SchedulerSnapshot s = bt.sched->snapshot();
    EXPECT_EQ(s.prefix_lookups, 5);
    EXPECT_EQ(s.prefix_hits, ring ? 3 : 4);
    // Idle: the prefix cache's entries hold blocks, but a block pool reports
    // them free (evictable), as vLLM's kv_cache_usage does.
    EXPECT_GT(s.prefix_entries, 0);
    if (kind == KvKind::kBatchedCell) {
      EXPECT_GT(bt.cache->memory().used(), 0);
      EXPECT_EQ(s.kv_cache_usage, 0.0);
    }
  }
}

TEST_P(SchedulerModel, ForksOfOneCachedPrefixDoNotCorruptEachOther) {
  const Loaded l = load(GetParam());
  const std::vector<int32_t> p = test_tokens(18, l.model->n_vocab(), 5);
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    Batched bt(l, kind, sopts(3, 32, 2));
    const uint64_t first = bt.submit(p, 10, 11);
    bt.sched->run_until_idle();
    // Three sampled continuations of the same cached prompt, decoding side by side.
    const uint64_t x = bt.submit(p, 10, 12), y = bt.submit(p, 10, 13), z = bt.submit(p, 10, 14);
    bt.sched->run_until_idle();
    const uint64_t again = bt.submit(p, 10, 11);
    bt.sched->run_until_idle();
    const auto& r = bt.run.reports;
    EXPECT_EQ(r.at(first).tokens, alone(l, p, 10, 11));
    EXPECT_EQ(r.at(x).tokens, alone(l, p, 10, 12));
    EXPECT_EQ(r.at(y).tokens, alone(l, p, 10, 13));
    EXPECT_EQ(r.at(z).tokens, alone(l, p, 10, 14));
    EXPECT_EQ(r.at(again).tokens, r.at(first).tokens);
    for (uint64_t id : {x, y, z, again}) EXPECT_EQ(r.at(id).cached_tokens, 17);
  }
}

TEST_P(SchedulerModel, ChoicesEqualSingleRequestsWithConsecutiveSeeds) {
  const Loaded l = load(GetParam());
  const std::vector<int32_t> p = test_tokens(13, l.model->n_vocab(), 21);
  const int64_t n_prompt = static_cast<int64_t>(p.size());
  constexpr uint64_t kSeed = 40;
  std::vector<std::vector<int32_t>> want;
  for (uint64_t i = 0; i < 4; ++i) want.push_back(alone(l, p, 10, kSeed + i));
  const std::vector<int32_t> greedy = alone(l, p, 10);
  ASSERT_NE(want[0], want[1]);  // the seeds matter, so equal choices say something
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    Batched bt(l, kind, sopts(4, 16, 2));
    const uint64_t g = bt.submit_group(p, 10, kSeed, 4);
    bt.sched->run_until_idle();
    SchedulerSnapshot s = bt.sched->snapshot();
    // The prompt was forwarded once (in chunks of the max write), then one row per choice per step.
    EXPECT_EQ(s.prompt_tokens, n_prompt) << kv_kind_name(kind);
    EXPECT_EQ(s.rows, n_prompt + s.decode_rows);
    int64_t generated = 0;
    for (int i = 0; i < 4; ++i) {
      const RequestReport& r = bt.run.choices.at({g, i});
      EXPECT_EQ(r.tokens, want[i]) << kv_kind_name(kind) << " choice " << i;
      EXPECT_EQ(r.prompt_tokens, n_prompt);
      EXPECT_EQ(r.cached_tokens, 0);
      generated += r.generated_tokens;
    }
    EXPECT_EQ(s.generated_tokens, generated);
    // The same prompt again, greedy: three equal replies, its prefix from the cache.
    const uint64_t again = bt.submit_group(p, 10, 0, 3);
    bt.sched->run_until_idle();
    s = bt.sched->snapshot();
    EXPECT_EQ(s.prompt_tokens, n_prompt + 1) << kv_kind_name(kind);
    for (int i = 0; i < 3; ++i) {
      const RequestReport& r = bt.run.choices.at({again, i});
      EXPECT_EQ(r.tokens, greedy) << kv_kind_name(kind) << " choice " << i;
      EXPECT_EQ(r.cached_tokens, n_prompt - 1);
    }
    // And single requests with the group's seeds give its choices.
    std::vector<uint64_t> singles;
    for (uint64_t i = 0; i < 4; ++i) singles.push_back(bt.submit(p, 10, kSeed + i));
    bt.sched->run_until_idle();
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(bt.run.reports.at(singles[i]).tokens, want[i]);
    EXPECT_EQ(bt.sched->snapshot().running, 0);
  }
}

TEST_P(SchedulerModel, WindowOverrideAppliesToBatchedSessionsAndTheirPrefixes) {
  const Loaded l = load(GetParam());
  const std::vector<int32_t> p = test_tokens(21, l.model->n_vocab(), 8);
  const std::vector<int> windows = {6};
  Batched bt(l, KvKind::kBatchedCell, sopts(2, 16, 2), windows);
  const uint64_t a = bt.submit(p, 9);
  bt.sched->run_until_idle();
  const uint64_t b = bt.submit(p, 9);
  bt.sched->run_until_idle();
  const auto want = alone(l, p, 9, 0, windows);
  EXPECT_EQ(bt.run.reports.at(a).tokens, want);
  EXPECT_EQ(bt.run.reports.at(b).tokens, want);
  EXPECT_EQ(bt.run.reports.at(b).cached_tokens, 20);
}

INSTANTIATE_TEST_SUITE_P(Families, SchedulerModel,
                         ::testing::Values(synth::Family::kLlama, synth::Family::kMistral, synth::Family::kGemma3),
                         [](const auto& info) { return std::string(synth::family_name(info.param)); });
// gpt-oss: attention sinks on every layer and rings (window 8) on the even
// ones, so a prefix that needs overwritten ring history is a miss there too.
INSTANTIATE_TEST_SUITE_P(GptOss, SchedulerModel, ::testing::Values(synth::Family::kGptOss),
                         [](const auto&) { return std::string("gpt_oss"); });

TEST(SchedulerPrefixBytes, TheByteBoundHolds) {
  const Loaded l = load(synth::Family::kLlama);
  SchedulerOptions o = sopts(1, 16, 4);
  const int64_t one = kv_sequence_bytes(l.model->kv_geometry(), policy(1), 12);
  o.prefix_cache_bytes = one + one / 2;  // room for one 12-token prompt, not two
  Batched bt(l, KvKind::kBatchedSequence, o);
  for (uint32_t i = 0; i < 3; ++i) {
    bt.submit(test_tokens(12, l.model->n_vocab(), 40 + i), 2);
    bt.sched->run_until_idle();
    const SchedulerSnapshot s = bt.sched->snapshot();
    EXPECT_LE(s.prefix_bytes, o.prefix_cache_bytes);
    EXPECT_EQ(s.prefix_entries, 1);
  }
  EXPECT_EQ(bt.sched->snapshot().prefix_evictions, 2);
}

}  // namespace
}  // namespace og
