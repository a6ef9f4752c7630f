// Speculation inside the scheduler (docs/speculative.md): each decoding
// session's verify rows ride in the shared step beside plain decode rows and
// prefill chunks; greedy output equals plain decoding token for token (scripted
// engine and real models, prefix-cache hits and n > 1 choices included); stop
// strings end inside a draft exactly as without it; the counters add up; a
// session whose drafts keep failing pauses its proposing.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <numeric>

#include "model/synth_fixture.h"
#include "runtime/scheduler.h"
#include "runtime/spec/draft_model.h"
#include "runtime/spec/ngram.h"
#include "runtime/spec/throttle.h"
#include "scheduler_fakes.h"

namespace og {
namespace {

using namespace og::test;

// x -> y -> z -> x ...: prompt lookup over "x y z x" predicts it perfectly.
int32_t cycle(int32_t tok, int64_t) { return tok == kX ? kY : tok == kY ? kZ : kX; }

// Thue-Morse over x / y by position: no period, so prompt lookup keeps finding
// earlier occurrences whose continuation is wrong.
int32_t thue_morse(int32_t, int64_t pos) { return __builtin_popcountll(static_cast<uint64_t>(pos + 1)) % 2 ? kX : kY; }

struct Out {
  RequestReport rep;
  std::string text;
  int finishes = 0;
};

struct Fake {
  Fake(SeqFakeEngine::Script s, bool spec, int max_decode = 4, int prefix_entries = 0, int64_t step_tokens = 64)
      : engine(std::move(s)) {
    SchedulerOptions o;
    o.max_decode_sequences = max_decode;
    o.step_tokens = step_tokens;
    o.max_session_tokens = 96;
    o.prefix_cache_entries = prefix_entries;
    o.spec.ngram = spec;
    KvPolicy p;
    p.max_capacity = o.max_session_tokens;
    p.initial_capacity = 8;
    p.max_write = 8;
    p.max_sequences = max_decode + prefix_entries;
    p.block_size = 4;
    sched = std::make_unique<Scheduler>(engine, tok, make_kv_cache(KvKind::kBatchedCell, engine.kv_geometry(), p), o);
  }
  uint64_t submit(std::vector<int32_t> prompt, int64_t max_new, std::vector<std::string> stops = {},
                  bool speculate = true, int n = 1) {
    RequestOptions r;
    r.prompt = std::move(prompt);
    r.max_new_tokens = max_new;
    r.stop_ids = {kEos, kEot};
    r.stop_strings = std::move(stops);
    r.speculate = speculate;
    std::vector<RequestCallbacks> cbs(static_cast<size_t>(n));
    for (int c = 0; c < n; ++c) {
      auto o = std::make_shared<Out>();
      cbs[c].on_text = [o](std::string_view t) { o->text += t; };
      cbs[c].on_finish = [o](const RequestReport& rep) {
        o->rep = rep;
        ++o->finishes;
      };
      pending.push_back(o);
    }
    const uint64_t id = sched->submit_group(std::move(r), std::move(cbs));
    for (int c = 0; c < n; ++c) outs[{id, c}] = pending[pending.size() - n + c];
    return id;
  }
  Out& out(uint64_t id, int choice = 0) { return *outs.at({id, choice}); }

  FakeTokenizer tok;
  SeqFakeEngine engine;
  std::unique_ptr<Scheduler> sched;
  std::vector<std::shared_ptr<Out>> pending;
  std::map<std::pair<uint64_t, int>, std::shared_ptr<Out>> outs;
};

const std::vector<int32_t> kCyclePrompt = {kX, kY, kZ, kX};

TEST(SchedulerSpec, GreedyEqualsPlainInFewerStepsAndTheCountersAddUp) {
  Fake plain(cycle, false), spec(cycle, true);
  const uint64_t a = plain.submit(kCyclePrompt, 40), b = spec.submit(kCyclePrompt, 40);
  plain.sched->run_until_idle();
  spec.sched->run_until_idle();
  EXPECT_EQ(spec.out(b).rep.tokens, plain.out(a).rep.tokens);
  EXPECT_EQ(spec.out(b).text, plain.out(a).text);
  EXPECT_EQ(spec.out(b).rep.reason, FinishReason::kLength);
  const SchedulerSnapshot s = spec.sched->snapshot(), p = plain.sched->snapshot();
  EXPECT_EQ(p.spec_drafts, 0);
  EXPECT_GT(s.spec_drafts, 0);
  // Every draft of a perfect predictor is accepted; each verify step yields k + 1 tokens.
  EXPECT_EQ(s.spec_accepted_tokens, s.spec_draft_tokens);
  EXPECT_EQ(std::accumulate(s.spec_accepted_per_pos.begin(), s.spec_accepted_per_pos.end(), int64_t{0}),
            s.spec_accepted_tokens);
  ASSERT_FALSE(s.spec_accepted_per_pos.empty());
  EXPECT_EQ(s.spec_accepted_per_pos[0], s.spec_drafts);
  EXPECT_LT(s.steps, p.steps / 2);
  EXPECT_EQ(s.generated_tokens, 40);
}

TEST(SchedulerSpec, SpeculativeAndPlainSessionsShareOneStep) {
  Fake plain(cycle, false), spec(cycle, true);
  const std::vector<int32_t> other = {kY, kZ, kX, kY, kZ};
  const uint64_t a1 = plain.submit(kCyclePrompt, 20), a2 = plain.submit(other, 20);
  const uint64_t b1 = spec.submit(kCyclePrompt, 20), b2 = spec.submit(other, 20, {}, /*speculate=*/false);
  plain.sched->run_until_idle();
  spec.sched->run_until_idle();
  EXPECT_EQ(spec.out(b1).rep.tokens, plain.out(a1).rep.tokens);
  EXPECT_EQ(spec.out(b2).rep.tokens, plain.out(a2).rep.tokens);
  // The step after the prompts' carried b1's verify rows (the pending token and a
  // draft of 3: lookup over a period of 3 finds 3 tokens) and b2's one decode row.
  ASSERT_GE(spec.engine.batch_sizes.size(), 2u);
  EXPECT_EQ(spec.engine.batch_sizes[0], 9);  // both prompts
  EXPECT_EQ(spec.engine.batch_sizes[1], 5) << ::testing::PrintToString(spec.engine.batch_sizes);
}

TEST(SchedulerSpec, AStopStringInsideADraftEndsTheTextAsWithoutIt) {
  for (const std::string stop : {"zx", "yzxy", "x"}) {
    Fake plain(cycle, false), spec(cycle, true);
    const uint64_t a = plain.submit(kCyclePrompt, 30, {stop}), b = spec.submit(kCyclePrompt, 30, {stop});
    plain.sched->run_until_idle();
    spec.sched->run_until_idle();
    EXPECT_EQ(spec.out(b).text, plain.out(a).text) << stop;
    EXPECT_EQ(spec.out(b).rep.tokens, plain.out(a).rep.tokens) << stop;
    EXPECT_EQ(spec.out(b).rep.stop_string, stop);
  }
}

TEST(SchedulerSpec, ABudgetEndingInsideADraftGivesExactlyTheBudget) {
  for (int64_t max_new : {1, 2, 3, 6, 7}) {
    Fake plain(cycle, false), spec(cycle, true);
    const uint64_t a = plain.submit(kCyclePrompt, max_new), b = spec.submit(kCyclePrompt, max_new);
    plain.sched->run_until_idle();
    spec.sched->run_until_idle();
    EXPECT_EQ(spec.out(b).rep.tokens, plain.out(a).rep.tokens) << max_new;
    EXPECT_EQ(spec.out(b).rep.generated_tokens, max_new);
  }
}

TEST(SchedulerSpec, ChoicesOfAGroupEachSpeculateAndEqualPlain) {
  Fake plain(cycle, false), spec(cycle, true);
  const uint64_t a = plain.submit(kCyclePrompt, 16, {}, true, 3), b = spec.submit(kCyclePrompt, 16, {}, true, 3);
  plain.sched->run_until_idle();
  spec.sched->run_until_idle();
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(spec.out(b, c).rep.tokens, plain.out(a, c).rep.tokens) << c;
    EXPECT_EQ(spec.out(b, c).finishes, 1);
  }
  EXPECT_GE(spec.sched->snapshot().spec_drafts, 3);
}

TEST(SchedulerSpec, APrefixCacheHitStillSeesTheWholePromptAndSpeculates) {
  // The second request starts from the first's cached prompt: its proposer
  // must still find the n-grams of the part it never forwarded.
  std::vector<int32_t> prompt;
  for (int i = 0; i < 12; ++i) prompt.push_back(kX + i % 3);
  Fake plain(cycle, false), spec(cycle, true, 4, 4);
  const uint64_t want = plain.submit(prompt, 24);
  plain.sched->run_until_idle();
  const uint64_t first = spec.submit(prompt, 24);
  spec.sched->run_until_idle();
  const int64_t drafts_before = spec.sched->snapshot().spec_accepted_tokens;
  const uint64_t hit = spec.submit(prompt, 24);
  spec.sched->run_until_idle();
  EXPECT_EQ(spec.out(first).rep.tokens, plain.out(want).rep.tokens);
  EXPECT_EQ(spec.out(hit).rep.tokens, plain.out(want).rep.tokens);
  EXPECT_EQ(spec.out(hit).rep.cached_tokens, static_cast<int64_t>(prompt.size()) - 1);
  EXPECT_GT(spec.sched->snapshot().spec_accepted_tokens, drafts_before);
}

TEST(SchedulerSpec, CancelledMidGenerationFinishesOnceAndFreesItsSequence) {
  Fake spec(cycle, true, 2);
  const uint64_t a = spec.submit(kCyclePrompt, 80);
  for (int i = 0; i < 4; ++i) spec.sched->step();
  spec.sched->cancel(a);
  spec.sched->run_until_idle();
  EXPECT_EQ(spec.out(a).finishes, 1);
  EXPECT_EQ(spec.out(a).rep.reason, FinishReason::kCancelled);
  EXPECT_GT(spec.out(a).rep.generated_tokens, 4);  // verify steps yielded several tokens each
  const uint64_t b = spec.submit(kCyclePrompt, 8);  // the sequence is free again
  spec.sched->run_until_idle();
  EXPECT_EQ(spec.out(b).rep.generated_tokens, 8);
}

TEST(SchedulerSpec, FailingDraftsPauseProposingAndTheOutputStaysPlain) {
  Fake plain(thue_morse, false), spec(thue_morse, true);
  const std::vector<int32_t> prompt = {kX, kY, kY, kX};
  const uint64_t a = plain.submit(prompt, 80), b = spec.submit(prompt, 80);
  plain.sched->run_until_idle();
  spec.sched->run_until_idle();
  EXPECT_EQ(spec.out(b).rep.tokens, plain.out(a).rep.tokens);
  const SchedulerSnapshot s = spec.sched->snapshot();
  EXPECT_GT(s.spec_drafts, 0);
  EXPECT_GT(s.spec_pauses, 0) << s.spec_accepted_tokens << "/" << s.spec_draft_tokens;
}

// Logprob events of accepted tokens are those of plain decoding, one per token.
TEST(SchedulerSpec, LogprobEventsAreThePlainOnes) {
  auto events = [](bool spec) {
    Fake f(cycle, spec);
    RequestOptions r;
    r.prompt = kCyclePrompt;
    r.max_new_tokens = 20;
    r.logprobs = true;
    r.top_logprobs = 2;
    std::vector<TokenEvent> got;
    RequestCallbacks cb;
    cb.on_token = [&got](const TokenEvent& ev) { got.push_back(ev); };
    f.sched->submit(std::move(r), std::move(cb));
    f.sched->run_until_idle();
    return got;
  };
  const std::vector<TokenEvent> plain = events(false), spec = events(true);
  ASSERT_EQ(spec.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(spec[i].id, plain[i].id) << i;
    EXPECT_EQ(spec[i].logprob, plain[i].logprob) << i;
    ASSERT_EQ(spec[i].top.size(), plain[i].top.size()) << i;
    for (size_t k = 0; k < plain[i].top.size(); ++k) EXPECT_EQ(spec[i].top[k].id, plain[i].top[k].id) << i;
  }
}

// Sampled requests speculate too (the rejection rule): a seed fixes the text.
TEST(SchedulerSpec, SampledRequestsAreReproducibleBySeed) {
  auto sampled = [](uint64_t seed) {
    Fake f([](int32_t tok, int64_t) { return tok == kX ? kY : kX; }, true);
    RequestOptions r;
    r.prompt = {kX, kY, kX, kY, kX};
    r.max_new_tokens = 30;
    r.sampler.temperature = 0.7;
    r.sampler.seed = seed;
    std::vector<int32_t> got;
    RequestCallbacks cb;
    cb.on_finish = [&got](const RequestReport& rep) { got = rep.tokens; };
    f.sched->submit(std::move(r), std::move(cb));
    f.sched->run_until_idle();
    EXPECT_GT(f.sched->snapshot().spec_drafts, 0);
    return got;
  };
  const std::vector<int32_t> a = sampled(5);
  EXPECT_EQ(a.size(), 30u);
  EXPECT_EQ(sampled(5), a);
}

TEST(SchedulerSpec, TheThrottlePausesBelowTheRuleAndResumesAfter) {
  SpecThrottle t;
  for (int i = 0; i < SpecThrottle::kWindow - 1; ++i) t.record(4, 0);
  EXPECT_TRUE(t.allow());
  t.record(4, 3);  // 3 of 32 accepted: under 10 %
  EXPECT_EQ(t.pauses(), 1);
  for (int i = 0; i < SpecThrottle::kPauseSteps; ++i) EXPECT_FALSE(t.allow());
  EXPECT_TRUE(t.allow());
  SpecThrottle good;
  for (int i = 0; i < 3 * SpecThrottle::kWindow; ++i) good.record(4, i % 4 == 0 ? 4 : 0);  // 25 %
  EXPECT_EQ(good.pauses(), 0);
}

TEST(SchedulerSpec, BadSpecOptionsAreRefusedAtConstruction) {
  SeqFakeEngine engine(cycle);
  SchedulerOptions o;
  o.max_decode_sequences = 2;
  o.step_tokens = 8;
  o.max_session_tokens = 16;
  o.spec.ngram = true;
  o.spec.draft_min = 5;  // above draft_max 4
  KvPolicy p;
  p.max_capacity = 16;
  p.max_sequences = 2;
  p.block_size = 4;
  EXPECT_THROW(Scheduler(engine, FakeTokenizer(), make_kv_cache(KvKind::kBatchedCell, engine.kv_geometry(), p), o),
               Error);
}

// --- Real models ---

std::vector<int32_t> alone(Model& m, const Tokenizer& tok, const std::vector<int32_t>& prompt, int64_t max_new) {
  ModelEngine engine(m);
  KvPolicy p;
  p.max_capacity = 128;
  p.max_write = 8;
  Session s(engine, make_kv_cache(KvKind::kSequence, m.kv_geometry(), p), tok);
  Sampler sampler(SamplerConfig{});
  GenerateOptions o;
  o.max_new_tokens = max_new;
  return s.generate(prompt, sampler, o, nullptr).tokens;
}

// Greedy tokens of `prompts` batched with speculation (and a prefix cache).
std::vector<std::vector<int32_t>> batched(Model& m, const Tokenizer& tok, KvKind kind,
                                          const std::vector<std::vector<int32_t>>& prompts, int64_t max_new,
                                          SchedulerSnapshot* snap) {
  ModelEngine engine(m);
  SchedulerOptions o;
  o.max_decode_sequences = 3;
  o.step_tokens = 24;
  o.max_session_tokens = 128;
  o.prefix_cache_entries = 2;
  o.spec.ngram = true;
  KvPolicy p;
  p.max_capacity = 128;
  p.initial_capacity = 16;
  p.max_write = 8;
  p.max_sequences = 5;
  p.block_size = 4;
  Scheduler s(engine, tok, make_kv_cache(kind, m.kv_geometry(), p), o);
  std::vector<std::vector<int32_t>> got(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (i + 1 == prompts.size()) s.run_until_idle();  // the last one may then start from a prefix-cache entry
    RequestOptions r;
    r.prompt = prompts[i];
    r.max_new_tokens = max_new;
    RequestCallbacks cb;
    cb.on_finish = [&got, i](const RequestReport& rep) { got[i] = rep.tokens; };
    s.submit(std::move(r), std::move(cb));
  }
  s.run_until_idle();
  *snap = s.snapshot();
  return got;
}

TEST(SchedulerSpecModel, Stories260KGreedyEqualsPlainWithDraftsAccepted) {
  const std::string path = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
  auto m = Model::load(path);
  auto tok = Tokenizer::from_path(m->source_path());
  const std::vector<int32_t> story = tok->encode("Once upon a time, there was a little girl named Lily. She liked to "
                                                 "play. Once upon a time, there was a little",
                                                 true, false);
  const std::vector<int32_t> other = tok->encode("The dog ran to the park. The dog ran to the", true, false);
  const std::vector<std::vector<int32_t>> prompts = {story, other, story};  // the third hits the prefix cache
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    SchedulerSnapshot snap;
    const auto got = batched(*m, *tok, kind, prompts, 40, &snap);
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], alone(*m, *tok, prompts[i], 40)) << i;
    EXPECT_GT(snap.spec_accepted_tokens, 0) << kv_kind_name(kind);
    EXPECT_GT(snap.prefix_hits, 0) << kv_kind_name(kind);
  }
}

TEST(SchedulerSpecModel, SynthFamiliesGreedyEqualsPlain) {
  for (synth::Family f : {synth::Family::kLlama, synth::Family::kMistral, synth::Family::kGemma3}) {
    auto m = Model::load(synth_gguf(f));
    auto tok = Tokenizer::from_path(m->source_path());
    std::vector<int32_t> rep = test_tokens(6, m->n_vocab(), 3);
    std::vector<int32_t> p = rep;
    for (int i = 0; i < 3; ++i) p.insert(p.end(), rep.begin(), rep.end());  // lookup finds drafts here
    const std::vector<std::vector<int32_t>> prompts = {p, test_tokens(9, m->n_vocab(), 4)};
    SchedulerSnapshot snap;
    const auto got = batched(*m, *tok, KvKind::kBatchedCell, prompts, 24, &snap);
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], alone(*m, *tok, prompts[i], 24)) << i;
    EXPECT_GT(snap.spec_drafts, 0);
  }
}

// A draft model shared by the sessions (its own batched cache, a sequence per
// session slot): the target as its own draft accepts every draft token, a
// different model's drafts are mostly rejected; the output is plain either way.
struct DraftRun {
  std::vector<std::vector<int32_t>> tokens;
  SchedulerSnapshot snap;
};

DraftRun with_draft(Model& target, const Tokenizer& tok, Model& draft, const std::vector<std::vector<int32_t>>& prompts,
                    int64_t max_new, int n_choices = 1) {
  ModelEngine engine(target), draft_engine(draft);
  KvPolicy p;
  p.max_capacity = 128;
  p.initial_capacity = 16;
  p.max_write = 8;
  p.max_sequences = 3;
  p.block_size = 4;
  std::unique_ptr<KvCache> draft_cache = make_kv_cache(KvKind::kBatchedCell, draft.kv_geometry(), p);
  SchedulerOptions o;
  o.max_decode_sequences = 3;
  o.step_tokens = 24;
  o.max_session_tokens = 128;
  o.spec.draft_engine = &draft_engine;
  o.spec.draft_cache = draft_cache.get();
  o.spec.draft_tok = &tok;
  o.spec.draft_p_min = 0;
  DraftRun out;
  Scheduler s(engine, tok, make_kv_cache(KvKind::kBatchedSequence, target.kv_geometry(), p), o);
  out.tokens.resize(prompts.size() * n_choices);
  for (size_t i = 0; i < prompts.size(); ++i) {
    RequestOptions r;
    r.prompt = prompts[i];
    r.max_new_tokens = max_new;
    std::vector<RequestCallbacks> cbs(static_cast<size_t>(n_choices));
    for (auto& cb : cbs)
      cb.on_finish = [&out, i, n_choices](const RequestReport& rep) { out.tokens[i * n_choices + rep.choice] = rep.tokens; };
    s.submit_group(std::move(r), std::move(cbs));
  }
  s.run_until_idle();
  // Slots are reused: a later request on a slot starts its draft sequence afresh.
  RequestOptions again;
  again.prompt = prompts[0];
  again.max_new_tokens = max_new;
  RequestCallbacks cb;
  cb.on_finish = [&out](const RequestReport& rep) { out.tokens.push_back(rep.tokens); };
  s.submit(std::move(again), std::move(cb));
  s.run_until_idle();
  out.snap = s.snapshot();
  return out;
}

TEST(SchedulerSpecModel, ADraftModelGivesThePlainTextWhetherItAgreesOrNot) {
  auto m = Model::load(std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf");
  auto tok = Tokenizer::from_path(m->source_path());
  const std::vector<std::vector<int32_t>> prompts = {tok->encode("Once upon a time", true, false),
                                                     tok->encode("The dog ran", true, false)};
  const DraftRun self = with_draft(*m, *tok, *m, prompts, 30, 2);
  for (size_t i = 0; i < prompts.size(); ++i)
    for (int c = 0; c < 2; ++c) EXPECT_EQ(self.tokens[i * 2 + c], alone(*m, *tok, prompts[i], 30)) << i << " " << c;
  EXPECT_EQ(self.tokens.back(), alone(*m, *tok, prompts[0], 30));
  EXPECT_GT(self.snap.spec_drafts, 0);
  EXPECT_EQ(self.snap.spec_accepted_tokens, self.snap.spec_draft_tokens);  // the target as its own draft
  // A random-weight draft of the same vocabulary size: the text is still the target's.
  auto other = Model::load(synth_gguf(synth::Family::kLlama));
  ASSERT_LE(other->n_vocab(), m->n_vocab());
  const DraftRun wrong = with_draft(*m, *tok, *other, prompts, 30);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(wrong.tokens[i], alone(*m, *tok, prompts[i], 30)) << i;
  EXPECT_LT(wrong.snap.spec_accepted_tokens, wrong.snap.spec_draft_tokens);
}

}  // namespace
}  // namespace og
