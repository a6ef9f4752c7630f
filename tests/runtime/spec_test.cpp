// Speculative decoding against fakes: prompt lookup's matches, the rejection
// rule's distribution (chi-square against p), and Session's verify step giving
// exactly plain decoding's turn (tokens, text, stop reason, history, cache
// length) with stop ids, stop strings, budgets, capacity, rings and undo, for
// proposers that are always right, always wrong and partly right.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "fakes.h"
#include "runtime/session.h"
#include "runtime/spec/accept.h"
#include "runtime/spec/ngram.h"

namespace og {
namespace {

using namespace og::test;

TEST(NgramProposer, ProposesWhatFollowedTheLatestMatch) {
  NgramProposer p(3);
  // ... a b x y | a b z x | a b -> the latest "a b" (n = 2; no 3-gram "z a b"... ) is followed by "z x"
  const std::vector<int32_t> h = {kA, kB, kX, kY, kA, kB, kZ, kX, kA, kB};
  EXPECT_EQ(p.propose(h, 2).tokens, (std::vector<int32_t>{kZ, kX}));
  EXPECT_EQ(p.propose(h, 8).tokens, (std::vector<int32_t>{kZ, kX, kA, kB}));  // up to the end of the history
  // A 3-gram match wins over a later 2-gram one.
  const std::vector<int32_t> h3 = {kX, kA, kB, kY, kZ, kA, kB, kSt, kX, kA, kB};
  EXPECT_EQ(p.propose(h3, 1).tokens, (std::vector<int32_t>{kY}));
  EXPECT_TRUE(p.propose(std::vector<int32_t>{kA, kB, kX}, 4).tokens.empty());  // no earlier x
  EXPECT_TRUE(p.propose(std::vector<int32_t>{kA}, 4).tokens.empty());
  EXPECT_TRUE(p.propose(h, 0).tokens.empty());
  EXPECT_THROW(NgramProposer(0), Error);
  EXPECT_THROW(NgramProposer(2, 3), Error);
  // A minimum of 2: the 1-gram match "b" no longer counts.
  EXPECT_TRUE(NgramProposer(3, 2).propose(std::vector<int32_t>{kB, kX, kA, kB}, 4).tokens.empty());
  EXPECT_EQ(NgramProposer(3, 1).propose(std::vector<int32_t>{kB, kX, kA, kB}, 4).tokens,
            (std::vector<int32_t>{kX, kA, kB}));
}

// Pearson's statistic of observed counts against probabilities.
double chi_square(const std::map<int32_t, int>& seen, const TokenDist& p, int n) {
  double x = 0;
  for (const auto& [t, pr] : p) {
    const double e = pr * n;
    const auto it = seen.find(t);
    const double o = it == seen.end() ? 0 : it->second;
    x += (o - e) * (o - e) / e;
  }
  return x;
}

// The 0.999 quantile of chi-square with df degrees of freedom (Wilson-Hilferty).
double chi_square_999(int df) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + 3.09 * std::sqrt(a), 3);
}

TEST(SpecAccept, RejectionRuleGivesTheTargetDistribution) {
  const TokenDist p = {{3, 0.4}, {4, 0.25}, {5, 0.2}, {6, 0.1}, {7, 0.05}};
  Rng rng(7);
  const int n = 40000;
  const double bound = chi_square_999(4);
  struct Case {
    TokenDist q;  // empty: a point mass at the draft
    bool sample_draft;
  };
  const std::vector<Case> cases = {
      {{}, false},                                              // point mass at a likely token
      {{{3, 0.1}, {4, 0.1}, {5, 0.1}, {6, 0.3}, {7, 0.4}}, true},  // q far from p
      {{{3, 0.5}, {8, 0.5}}, true},                             // q outside p's support
      {p, true},                                                // q == p: always accepted
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    std::map<int32_t, int> seen;
    int accepted = 0;
    for (int i = 0; i < n; ++i) {
      int32_t d = 4;
      if (cases[c].sample_draft) {
        double u = rng.next_double(), acc = 0;
        for (const auto& [t, pr] : cases[c].q) {
          d = t;
          if (u < (acc += pr)) break;
        }
      }
      const SpecChoice ch = spec_accept(p, d, cases[c].q, rng.next_double(), rng.next_double());
      ++seen[ch.token];
      accepted += ch.accepted;
      EXPECT_EQ(ch.accepted, ch.token == d);
    }
    EXPECT_LT(chi_square(seen, p, n), bound) << "case " << c;
    EXPECT_EQ(seen.count(8), 0u) << "case " << c;
    if (c == 3) {
      EXPECT_EQ(accepted, n);
    }
  }
  // A point mass at a token p excludes is always rejected.
  EXPECT_FALSE(spec_accept(p, 9, {}, 0.0, 0.5).accepted);
}

// The cycle x y z x y z ... after the prompt, then kEot once the context holds `end` tokens.
FakeEngine::Script cycle(int64_t end) {
  return [end](const std::vector<int32_t>& ctx) -> int32_t {
    if (static_cast<int64_t>(ctx.size()) >= end) return kEot;
    switch (ctx.back()) {
      case kX: return kY;
      case kY: return kZ;
      default: return kX;
    }
  };
}

// Proposes what `next` would say, token after token (right) or a fixed wrong token.
class ScriptProposer : public SpecProposer {
 public:
  ScriptProposer(FakeEngine::Script next, bool wrong) : next_(std::move(next)), wrong_(wrong) {}
  Draft propose(std::span<const int32_t> history, int64_t max_tokens) override {
    Draft d;
    std::vector<int32_t> ctx(history.begin(), history.end());
    for (int64_t i = 0; i < max_tokens; ++i) {
      const int32_t t = wrong_ ? kSt : next_(ctx);
      d.tokens.push_back(t);
      ctx.push_back(t);
    }
    ++calls;
    return d;
  }
  void verified(int64_t proposed, int64_t accepted) override {
    EXPECT_LE(accepted, proposed);
    total_accepted += accepted;
  }
  std::string name() const override { return "script"; }
  int calls = 0;
  int64_t total_accepted = 0;

 private:
  FakeEngine::Script next_;
  bool wrong_;
};

struct Outcome {
  TurnResult r;
  std::vector<int32_t> history;
  int64_t cached = 0;
  std::string streamed;
  Stats stats;
  int clears = 0;
};

Outcome run(FakeEngine::Script script, std::vector<int32_t> prompt, GenerateOptions o, SpecProposer* proposer,
            int64_t capacity = 64, int64_t max_write = 512, int ring = 0, int64_t draft_max = 4) {
  FakeTokenizer tok;
  FakeEngine engine(script);
  auto c = std::make_unique<FakeCache>(capacity, max_write, ring);
  FakeCache* cache = c.get();
  Session s(engine, std::move(c), tok);
  Sampler sampler{SamplerConfig{}};
  o.spec.proposer = proposer;
  o.spec.draft_max = draft_max;
  Outcome out;
  out.r = s.generate(prompt, sampler, o, [&](std::string_view p) { out.streamed += p; });
  out.history = s.history();
  out.cached = s.cached();
  out.stats = s.stats();
  out.clears = cache->clears;
  return out;
}

void expect_same(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(a.r.tokens, b.r.tokens);
  EXPECT_EQ(a.r.text, b.r.text);
  EXPECT_EQ(a.streamed, b.streamed);
  EXPECT_EQ(a.r.reason, b.r.reason);
  EXPECT_EQ(a.r.stop_string, b.r.stop_string);
  EXPECT_EQ(a.history, b.history);
  EXPECT_EQ(a.cached, b.cached);
}

GenerateOptions opts(int64_t max_new, std::vector<std::string> stops = {}) {
  GenerateOptions o;
  o.max_new_tokens = max_new;
  o.stop_ids = {kEos, kEot};
  o.stop_strings = std::move(stops);
  return o;
}

TEST(SpecSession, SameTurnAsPlainForRightWrongAndLookupProposers) {
  const std::vector<int32_t> prompt = {kBos, kA, kX, kY, kZ, kX};
  for (int64_t end : {9, 17, 40}) {          // a stop id early, mid-draft, past the budget
    for (int64_t max_new : {1, 2, 5, 23}) {  // budgets that end inside a draft
      for (int64_t draft_max : {1, 3, 8}) {
        SCOPED_TRACE(testing::Message() << "end " << end << " max_new " << max_new << " draft_max " << draft_max);
        const Outcome plain = run(cycle(end), prompt, opts(max_new), nullptr);
        ScriptProposer right(cycle(end), false), wrong(cycle(end), true);
        NgramProposer lookup(2);
        const Outcome a = run(cycle(end), prompt, opts(max_new), &right, 64, 512, 0, draft_max);
        const Outcome b = run(cycle(end), prompt, opts(max_new), &wrong, 64, 512, 0, draft_max);
        const Outcome c = run(cycle(end), prompt, opts(max_new), &lookup, 64, 512, 0, draft_max);
        expect_same(plain, a);
        expect_same(plain, b);
        expect_same(plain, c);
        EXPECT_EQ(b.stats.spec_accepted_tokens, 0);
        // The script is the target: only the last draft (past a stop id) loses tokens.
        EXPECT_GE(a.stats.spec_accepted_tokens, a.stats.spec_draft_tokens - draft_max);
        if (max_new >= 5 && end >= 17) {
          EXPECT_GT(a.stats.spec_accepted_tokens, 0);
          EXPECT_LT(a.stats.decode_steps, plain.stats.decode_steps);
          EXPECT_GT(c.stats.spec_accepted_tokens, 0);  // the cycle repeats what the prompt holds
        }
      }
    }
  }
}

TEST(SpecSession, StopStringsAndCapacityApplyToAcceptedTokensOneByOne) {
  const std::vector<int32_t> prompt = {kBos, kX};
  ScriptProposer right(cycle(60), false);
  // "zx" spans two tokens inside one verified draft; the text stops before it.
  const Outcome plain = run(cycle(60), prompt, opts(40, {"zx"}), nullptr);
  const Outcome spec = run(cycle(60), prompt, opts(40, {"zx"}), &right, 64, 512, 0, 8);
  expect_same(plain, spec);
  EXPECT_EQ(spec.r.reason, StopReason::kStopString);
  EXPECT_EQ(spec.r.text, "y");
  // A cache of 12 positions ends the turn on capacity at the same token.
  const Outcome pc = run(cycle(60), prompt, opts(40), nullptr, 12);
  const Outcome sc = run(cycle(60), prompt, opts(40), &right, 12, 512, 0, 8);
  expect_same(pc, sc);
  EXPECT_EQ(sc.r.reason, StopReason::kCapacity);
}

TEST(SpecSession, RingRewindsNeverNeedRecomputation) {
  // Window 4, max_write 4: drafts of at most 3 tokens; every rejection's rewind
  // stays inside the ring's window + max_write - 1 slots.
  const std::vector<int32_t> prompt = {kBos, kX, kY};
  ScriptProposer right(cycle(200), false), wrong(cycle(200), true);
  NgramProposer lookup(3);
  const Outcome plain = run(cycle(200), prompt, opts(150), nullptr, 256, 4, 4);
  for (SpecProposer* p : std::vector<SpecProposer*>{&right, &wrong, &lookup}) {
    const Outcome o = run(cycle(200), prompt, opts(150), p, 256, 4, 4, 16);
    expect_same(plain, o);
    EXPECT_EQ(o.clears, 0) << p->name();
    EXPECT_EQ(o.stats.recomputed_tokens, 0);
    EXPECT_LE(o.stats.spec_draft_tokens, 3 * o.stats.spec_drafts);
  }
}

TEST(SpecSession, UndoAfterASpeculativeTurnIsExact) {
  FakeTokenizer tok;
  FakeEngine engine(cycle(100));
  Session s(engine, std::make_unique<FakeCache>(128, 512), tok);
  Sampler sampler{SamplerConfig{}};
  ScriptProposer right(cycle(100), false);
  GenerateOptions o = opts(12);
  o.spec.proposer = &right;
  const TurnResult first = s.generate(std::vector<int32_t>{kBos, kX}, sampler, o, nullptr);
  const std::vector<int32_t> after_first = s.history();
  const TurnResult second = s.generate(std::vector<int32_t>{kA}, sampler, o, nullptr);
  EXPECT_GT(s.stats().spec_accepted_tokens, 0);
  // Undo the second turn, then redo it: the same reply from the same state.
  s.rewind_to(static_cast<int64_t>(after_first.size()));
  EXPECT_EQ(s.history(), after_first);
  EXPECT_LE(s.cached(), s.position());
  const TurnResult again = s.generate(std::vector<int32_t>{kA}, sampler, o, nullptr);
  EXPECT_EQ(again.tokens, second.tokens);
  (void)first;
}

// Under sampling, the first two tokens of a turn through the verify step have
// the distribution of plain sampling (two-sample chi-square over seeds).
TEST(SpecSession, SampledTurnsKeepTheTargetDistribution) {
  // Logits favour the cycle's token by 10 over 12 others: at temperature 8
  // every token is likely, so drafts are often rejected.
  const std::vector<int32_t> prompt = {kBos, kX, kY, kZ, kX};
  const int n = 1500;
  auto counts = [&](bool spec) {
    std::map<std::pair<int32_t, int32_t>, int> c;
    for (int seed = 1; seed <= n; ++seed) {
      FakeTokenizer tok;
      FakeEngine engine(cycle(100));
      Session s(engine, std::make_unique<FakeCache>(64, 512), tok);
      SamplerConfig sc;
      sc.temperature = 8;
      sc.top_k = 4;
      sc.seed = static_cast<uint64_t>(seed);
      Sampler sampler(sc);
      ScriptProposer right(cycle(100), false);
      GenerateOptions o = opts(3);
      o.stop_ids = {};
      if (spec) o.spec.proposer = &right;
      const TurnResult r = s.generate(prompt, sampler, o, nullptr);
      ++c[{r.tokens[1], r.tokens[2]}];
    }
    return c;
  };
  const auto a = counts(false), b = counts(true);
  std::map<std::pair<int32_t, int32_t>, std::pair<int, int>> cells;
  for (const auto& [k, v] : a) cells[k].first = v;
  for (const auto& [k, v] : b) cells[k].second = v;
  double x = 0;
  int df = -1;
  for (const auto& [k, v] : cells) {
    const double tot = v.first + v.second;
    if (tot < 10) continue;  // sparse cells add noise, not power
    const double e = tot / 2;
    x += (v.first - e) * (v.first - e) / e + (v.second - e) * (v.second - e) / e;
    ++df;
  }
  ASSERT_GE(df, 4);
  EXPECT_LT(x, chi_square_999(df)) << "df " << df;
}

}  // namespace
}  // namespace og
