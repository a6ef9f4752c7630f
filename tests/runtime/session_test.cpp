// Session against a fake engine with scripted logits: stop rules, budgets,
// streaming, chunked prefill, history across turns, rewind and recompute.
#include "runtime/session.h"

#include <gtest/gtest.h>

#include <atomic>

#include "base/error.h"
#include "fakes.h"
#include "runtime/stop_filter.h"

namespace og {
namespace {

using namespace og::test;

// Plays a fixed list after the prompt: the k-th generated token (counted from
// the first position after `prompt_len`) is script[k], then kEos.
FakeEngine::Script after_prompt(int64_t prompt_len, std::vector<int32_t> script) {
  return [prompt_len, script](const std::vector<int32_t>& ctx) {
    const int64_t k = static_cast<int64_t>(ctx.size()) - prompt_len;
    return k >= 0 && k < static_cast<int64_t>(script.size()) ? script[k] : int32_t{kEos};
  };
}

struct Fixture {
  Fixture(FakeEngine::Script s, int64_t capacity = 64, int64_t max_write = 512, int ring = 0)
      : engine(std::move(s)) {
    auto c = std::make_unique<FakeCache>(capacity, max_write, ring);
    cache = c.get();
    session = std::make_unique<Session>(engine, std::move(c), tok);
  }
  TurnResult gen(std::vector<int32_t> prompt, GenerateOptions opts = default_opts()) {
    pieces.clear();
    return session->generate(prompt, sampler, opts, [this](std::string_view p) { pieces.emplace_back(p); });
  }
  static GenerateOptions default_opts() {
    GenerateOptions o;
    o.stop_ids = {kEos, kEot};
    return o;
  }
  FakeTokenizer tok;
  FakeEngine engine;
  FakeCache* cache = nullptr;
  std::unique_ptr<Session> session;
  Sampler sampler{SamplerConfig{}};
  std::vector<std::string> pieces;
};

TEST(Session, GreedyStreamsAndStopsOnStopId) {
  Fixture f(after_prompt(2, {kX, kY, kZ, kEot}));
  auto r = f.gen({kBos, kA});
  EXPECT_EQ(r.reason, StopReason::kStopToken);
  EXPECT_EQ(r.stop_token, kEot);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{kX, kY, kZ, kEot}));
  EXPECT_EQ(r.text, "xyz");
  EXPECT_EQ(f.pieces, (std::vector<std::string>{"x", "y", "z"}));
  // The stop token is committed to the history but not yet forwarded.
  EXPECT_EQ(f.session->history(), (std::vector<int32_t>{kBos, kA, kX, kY, kZ, kEot}));
  EXPECT_EQ(f.session->cached(), 5);
  EXPECT_EQ(r.prefilled, 2);
  EXPECT_EQ(f.session->stats().generated_tokens, 4);
  EXPECT_EQ(f.session->stats().decode_steps, 3);
  EXPECT_EQ(f.session->stats().prompt_tokens, 2);
}

TEST(Session, StopIdsComeFromTheOptions) {
  Fixture f(after_prompt(1, {kX, kEot, kY, kEos}));
  GenerateOptions o;
  o.stop_ids = {kEos};  // kEot is a control token: generated, not printed
  auto r = f.gen({kBos}, o);
  EXPECT_EQ(r.reason, StopReason::kStopToken);
  EXPECT_EQ(r.stop_token, kEos);
  EXPECT_EQ(r.text, "xy");
}

TEST(Session, MaxNewTokensBudget) {
  Fixture f([](const std::vector<int32_t>&) { return int32_t{kX}; });
  GenerateOptions o;
  o.max_new_tokens = 5;
  auto r = f.gen({kBos}, o);
  EXPECT_EQ(r.reason, StopReason::kMaxTokens);
  EXPECT_EQ(r.tokens.size(), 5u);
  EXPECT_EQ(r.text, "xxxxx");
  // The last token is not forwarded: 1 prefill + 4 decode steps.
  EXPECT_EQ(f.engine.calls, 5);
  EXPECT_EQ(f.session->position(), 6);
  EXPECT_EQ(f.session->cached(), 5);
  o.max_new_tokens = 0;
  auto r0 = f.gen({kA}, o);
  EXPECT_EQ(r0.reason, StopReason::kMaxTokens);
  EXPECT_TRUE(r0.tokens.empty());
}

TEST(Session, CapacityCapsGeneration) {
  // Every position is used: a prompt as long as the capacity fits (its last
  // row's logits give one token), and generation stops when the cache is full,
  // the final sampled token pending (issue: the last position was never used).
  Fixture f([](const std::vector<int32_t>&) { return int32_t{kY}; }, /*capacity=*/10);
  EXPECT_TRUE(f.session->fits(10));
  EXPECT_FALSE(f.session->fits(11));
  GenerateOptions o;
  o.max_new_tokens = 100;
  auto r = f.gen({kBos, kA, kA, kA}, o);
  EXPECT_EQ(r.reason, StopReason::kCapacity);
  EXPECT_EQ(r.tokens.size(), 7u);
  EXPECT_EQ(f.session->position(), 11);
  EXPECT_EQ(f.session->cached(), 10);
  EXPECT_FALSE(f.session->fits(0));
  // A prompt that cannot fit is refused and changes nothing.
  EXPECT_THROW(f.gen({kA}), Error);
  EXPECT_EQ(f.session->position(), 11);
  EXPECT_EQ(f.session->cached(), 10);
}

// An interrupt (Ctrl-C) ends the turn at the next step: what was generated
// is kept and committed, the text ends on a character boundary (the first
// bytes of a euro sign are dropped), and the next turn goes on from there.
TEST(Session, InterruptKeepsTheTurnOnACharacterBoundary) {
  Fixture f(after_prompt(2, {kX, kEuro1, kEuro2, kY, kEot}));
  std::atomic<bool> stop{false};
  GenerateOptions o = Fixture::default_opts();
  o.interrupt = &stop;
  o.on_token = [&](const TokenEvent& e) {
    if (e.id == kEuro1) stop = true;
  };
  auto r = f.gen({kBos, kA}, o);
  EXPECT_EQ(r.reason, StopReason::kInterrupted);
  EXPECT_STREQ(stop_reason_name(r.reason), "cancelled");
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{kX, kEuro1}));
  EXPECT_EQ(r.text, "x");
  EXPECT_EQ(f.session->position(), 4);
  // Interrupted before anything: the prompt is still committed.
  stop = true;
  auto r2 = f.gen({kA}, o);
  EXPECT_EQ(r2.reason, StopReason::kInterrupted);
  EXPECT_TRUE(r2.tokens.empty());
  EXPECT_EQ(f.session->position(), 5);
  stop = false;
  o.on_token = nullptr;
  auto r3 = f.gen({kB}, o);
  EXPECT_NE(r3.reason, StopReason::kInterrupted);
  EXPECT_EQ(f.session->position(), 6 + static_cast<int64_t>(r3.tokens.size()));
}

TEST(Session, StopStringAcrossTokensIsNotPrinted) {
  Fixture f(after_prompt(1, {kX, kSt, kOp, kY, kZ}));
  GenerateOptions o = Fixture::default_opts();
  o.stop_strings = {"TOP"};
  auto r = f.gen({kBos}, o);
  EXPECT_EQ(r.reason, StopReason::kStopString);
  EXPECT_EQ(r.stop_string, "TOP");
  EXPECT_EQ(r.text, "xS");
  // "ST" could start "TOP" only through its "T": "S" is printed once "OP" arrives.
  EXPECT_EQ(f.pieces, (std::vector<std::string>{"x", "S"}));
  // The stop string's tokens stay in the history (the exact model output).
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{kX, kSt, kOp}));
  EXPECT_EQ(f.session->history().back(), kOp);
}

TEST(Session, HeldBackPrefixIsReleasedWhenItDoesNotMatch) {
  Fixture f(after_prompt(1, {kX, kSt, kY, kEos}));
  GenerateOptions o = Fixture::default_opts();
  o.stop_strings = {"STOP"};
  auto r = f.gen({kBos}, o);
  EXPECT_EQ(r.reason, StopReason::kStopToken);
  EXPECT_EQ(r.text, "xSTy");
  EXPECT_EQ(f.pieces, (std::vector<std::string>{"x", "STy"}));
}

TEST(Session, HeldBackPrefixIsFlushedAtTheEnd) {
  Fixture f(after_prompt(1, {kX, kSt}));
  GenerateOptions o;
  o.max_new_tokens = 2;
  o.stop_strings = {"STOP"};
  auto r = f.gen({kBos}, o);
  EXPECT_EQ(r.reason, StopReason::kMaxTokens);
  EXPECT_EQ(r.text, "xST");
}

TEST(Session, SplitUtf8IsStreamedWhole) {
  Fixture f(after_prompt(1, {kEuro1, kEuro2, kX}));
  auto r = f.gen({kBos});
  EXPECT_EQ(r.text, "\xE2\x82\xACx");
  EXPECT_EQ(f.pieces, (std::vector<std::string>{"\xE2\x82\xAC", "x"}));
}

TEST(Session, ChunkedPrefill) {
  Fixture f(after_prompt(8, {kX}), 64, /*max_write=*/3);
  auto r = f.gen({kBos, kA, kB, kA, kB, kA, kB, kA});
  EXPECT_EQ(r.prefilled, 8);
  // Prefill in 3 + 3 + 2; only the last row asks for logits; then one decode step.
  EXPECT_EQ(f.engine.batch_sizes, (std::vector<int>{3, 3, 2, 1}));
  EXPECT_EQ(f.engine.logit_rows, 2);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{kX, kEos}));
}

TEST(Session, NextTurnPrefillsThePendingTokenFirst) {
  // Turn 1 stops on kEot (pending); turn 2 must prefill [kEot, kA].
  std::vector<std::vector<int32_t>> contexts;
  Fixture f([&](const std::vector<int32_t>& ctx) {
    contexts.push_back(ctx);
    return ctx.size() == 2 ? int32_t{kEot} : int32_t{kEos};
  });
  f.gen({kBos, kA});
  EXPECT_EQ(f.session->cached(), 2);
  f.engine.batch_sizes.clear();
  auto r = f.gen({kA});
  EXPECT_EQ(r.prefilled, 2);
  EXPECT_EQ(f.engine.batch_sizes, (std::vector<int>{2}));
  EXPECT_EQ(contexts.back(), (std::vector<int32_t>{kBos, kA, kEot, kA}));
}

TEST(Session, RewindWithinTheCache) {
  Fixture f(after_prompt(2, {kX, kY, kZ, kEos}));
  auto first = f.gen({kBos, kA});
  const int64_t start = 2;
  auto rr = f.session->rewind_to(start);
  EXPECT_EQ(rr.removed, 4);
  EXPECT_FALSE(rr.recomputed);
  EXPECT_EQ(f.session->position(), 2);
  EXPECT_EQ(f.session->cached(), 2);
  // Regenerating from the same point needs the logits of the last kept token again.
  auto again = f.gen({});
  EXPECT_EQ(again.tokens, first.tokens);
  EXPECT_EQ(again.text, first.text);
}

TEST(Session, RewindPastAWrappedRingRecomputes) {
  // A ring of window 4 with max_write 2 holds 5 slots.
  auto script = [](const std::vector<int32_t>& ctx) {
    return ctx.size() < 20 ? (ctx.size() % 2 ? int32_t{kX} : int32_t{kY}) : int32_t{kEos};
  };
  Fixture f(script, 64, /*max_write=*/2, /*ring=*/4);
  auto first = f.gen({kBos, kA, kB});
  EXPECT_EQ(f.session->position(), 21);
  // Small rewinds stay inside the ring.
  auto small = f.session->rewind_to(19);
  EXPECT_FALSE(small.recomputed);
  auto rr = f.session->rewind_to(8);
  EXPECT_TRUE(rr.recomputed);
  EXPECT_EQ(rr.recomputed_tokens, 8);
  EXPECT_GT(rr.history_begin, 0);
  EXPECT_EQ(f.cache->clears, 1);
  EXPECT_EQ(f.session->cached(), 8);
  EXPECT_EQ(f.session->position(), 8);
  EXPECT_EQ(f.session->stats().recomputed_tokens, 8);
  // Generation continues from exact history.
  auto again = f.gen({});
  std::vector<int32_t> expect(first.tokens.begin() + 5, first.tokens.end());
  EXPECT_EQ(again.tokens, expect);
}

TEST(Session, ResetStartsOver) {
  Fixture f(after_prompt(2, {kX, kEos}));
  auto a = f.gen({kBos, kA});
  f.session->reset();
  EXPECT_EQ(f.session->position(), 0);
  EXPECT_EQ(f.session->cached(), 0);
  auto b = f.gen({kBos, kA});
  EXPECT_EQ(a.tokens, b.tokens);
}

TEST(Session, FailedForwardLeavesTheSessionUnchanged) {
  Fixture f(after_prompt(2, {kX, kEos}), 64, /*max_write=*/2);
  f.gen({kBos, kA});
  const auto hist = f.session->history();
  const int64_t cached = f.session->cached();
  f.engine.throw_at_call = f.engine.calls + 1;  // the second prefill chunk fails
  EXPECT_THROW(f.gen({kA, kB, kA, kB}), Error);
  EXPECT_EQ(f.session->history(), hist);
  EXPECT_EQ(f.session->cached(), cached);
}

// Corrupt weights give NaN logits: an error naming the position, never tokens
// sampled from garbage, and the session keeps its history.
TEST(Session, NonFiniteLogitsAreAnError) {
  Fixture f(after_prompt(2, {kX, kY, kZ, kEos}));
  f.gen({kBos, kA});
  const auto hist = f.session->history();
  const int64_t cached = f.session->cached();
  f.engine.nan_at_call = f.engine.calls;  // the next turn's prefill
  try {
    f.gen({kA, kB});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite logit (NaN or inf) at position 7"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(f.session->history(), hist);
  EXPECT_EQ(f.session->cached(), cached);
  f.engine.nan_at_call = -1;
  EXPECT_EQ(f.gen({kA, kB}).reason, StopReason::kStopToken);  // and it still works
}

TEST(Session, NothingToGenerateFrom) {
  Fixture f(after_prompt(0, {kX}));
  EXPECT_THROW(f.gen({}), Error);
}

TEST(Session, SeededSamplingIsDeterministic) {
  auto run = [](uint64_t seed) {
    // Uniform logits: every token but the stops equally likely.
    FakeTokenizer tok;
    FakeEngine engine([](const std::vector<int32_t>& ctx) { return int32_t(kX + ctx.size() % 5); });
    Session s(engine, std::make_unique<FakeCache>(256, 512), tok);
    SamplerConfig c;
    c.temperature = 5.0;  // logits 10 vs 0: flattened enough to wander
    c.seed = seed;
    Sampler sampler(c);
    GenerateOptions o;
    o.max_new_tokens = 40;
    return s.generate(std::vector<int32_t>{kBos}, sampler, o, nullptr).tokens;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

// The frequency penalty counts this turn's generated tokens only: a prompt
// full of the favoured token does not lower it, each generated copy does.
TEST(Session, FrequencyPenaltyCountsThisTurnsTokens) {
  Fixture f([](const std::vector<int32_t>&) { return int32_t{kX}; });  // kX at 10, the rest at 0
  SamplerConfig c;
  c.frequency_penalty = 2.0;
  f.sampler = Sampler(c);
  GenerateOptions o;
  o.max_new_tokens = 6;
  const auto r = f.gen({kBos, kX, kX, kX, kX, kX, kX}, o);
  ASSERT_EQ(r.tokens.size(), 6u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r.tokens[i], kX) << i;  // 10 - 2 * i > 0
  EXPECT_NE(r.tokens[5], kX);  // 10 - 2 * 5 = 0 ties the others: the lowest id wins
  // A new turn starts counting again.
  o.max_new_tokens = 1;
  EXPECT_EQ(f.gen({kA}, o).tokens, std::vector<int32_t>{kX});
}

TEST(StopFilter, Basics) {
  StopFilter f({"abc", "bd"});
  EXPECT_EQ(f.push("xa"), "x");
  EXPECT_EQ(f.push("b"), "");
  EXPECT_EQ(f.push("x"), "abx");
  EXPECT_EQ(f.push("zb"), "z");
  EXPECT_EQ(f.push("dq"), "");
  EXPECT_TRUE(f.matched());
  EXPECT_EQ(f.matched_string(), "bd");
  EXPECT_EQ(f.push("more"), "");
  EXPECT_EQ(f.flush(), "");
  StopFilter none;
  EXPECT_EQ(none.push("abc"), "abc");
  EXPECT_THROW(StopFilter({""}), Error);
  StopFilter g({"END"});
  EXPECT_EQ(g.push("xxEN"), "xx");
  EXPECT_EQ(g.flush(), "EN");
  StopFilter h({"b", "abc"});
  EXPECT_EQ(h.push("xabc"), "x");  // earliest match wins
  EXPECT_EQ(h.matched_string(), "abc");
}

}  // namespace
}  // namespace og
