// Sampler: greedy, temperature, top-k / top-p / min-p on small distributions,
// repeat, presence and frequency penalties, seed determinism and the draw's frequencies.
#include "runtime/run_setup.h"
#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <map>

#include "base/error.h"

namespace og {
namespace {

std::vector<float> log_probs(std::vector<double> p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

std::map<int32_t, double> as_map(const std::vector<std::pair<int32_t, double>>& d) {
  return {d.begin(), d.end()};
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  Sampler s({});
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -2.0f, 3.0f}, {}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{5.0f}, {}), 0);
}

// OpenAI's logit_bias: added before anything else; -100 bans the argmax,
// +100 forces a token, under greedy and under sampling alike.
TEST(Sampler, LogitBias) {
  const std::vector<float> logits{0.5f, 3.0f, 1.0f, -1.0f};
  SamplerConfig c;
  c.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(Sampler(c).sample(logits, {}), 2);
  c.logit_bias = {{3, 100.0f}, {99, 5.0f}};  // an id past the logits is ignored
  EXPECT_EQ(Sampler(c).sample(logits, {}), 3);
  c.temperature = 1.0;
  c.seed = 7;
  Sampler s(c);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits, {}), 3);
  c.logit_bias = {{0, 1.0f}};
  const auto d = as_map(Sampler(c).distribution(logits, {}));
  EXPECT_NEAR(d.at(0) / d.at(2), std::exp(0.5), 1e-6);  // 0.5 + 1 against 1.0
  c.logit_bias = {{0, std::numeric_limits<float>::infinity()}};
  EXPECT_THROW(Sampler{c}, Error);
}

TEST(Sampler, TemperatureOneIsSoftmax) {
  SamplerConfig c;
  c.temperature = 1.0;
  auto d = as_map(Sampler(c).distribution(log_probs({0.5, 0.25, 0.15, 0.1}), {}));
  EXPECT_NEAR(d[0], 0.5, 1e-6);
  EXPECT_NEAR(d[1], 0.25, 1e-6);
  EXPECT_NEAR(d[2], 0.15, 1e-6);
  EXPECT_NEAR(d[3], 0.1, 1e-6);
}

TEST(Sampler, TemperatureTwoFlattens) {
  SamplerConfig c;
  c.temperature = 2.0;
  auto d = as_map(Sampler(c).distribution(log_probs({0.64, 0.36}), {}));
  // p^(1/2) normalised: 0.8 / 1.4, 0.6 / 1.4
  EXPECT_NEAR(d[0], 0.8 / 1.4, 1e-6);
  EXPECT_NEAR(d[1], 0.6 / 1.4, 1e-6);
}

TEST(Sampler, TopK) {
  SamplerConfig c;
  c.temperature = 1.0;
  c.top_k = 2;
  auto d = Sampler(c).distribution(log_probs({0.15, 0.5, 0.1, 0.25}), {});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].first, 1);
  EXPECT_NEAR(d[0].second, 2.0 / 3, 1e-6);
  EXPECT_EQ(d[1].first, 3);
  EXPECT_NEAR(d[1].second, 1.0 / 3, 1e-6);
}

TEST(Sampler, TopP) {
  SamplerConfig c;
  c.temperature = 1.0;
  c.top_p = 0.7;  // 0.5 < 0.7 <= 0.75: keeps two
  auto d = as_map(Sampler(c).distribution(log_probs({0.5, 0.25, 0.15, 0.1}), {}));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0], 2.0 / 3, 1e-6);
  EXPECT_NEAR(d[1], 1.0 / 3, 1e-6);
  c.top_p = 0.4;  // the first alone passes 0.4
  EXPECT_EQ(Sampler(c).distribution(log_probs({0.5, 0.25, 0.15, 0.1}), {}).size(), 1u);
  c.top_p = 0.95;
  EXPECT_EQ(Sampler(c).distribution(log_probs({0.5, 0.25, 0.15, 0.1}), {}).size(), 4u);
}

TEST(Sampler, MinP) {
  SamplerConfig c;
  c.temperature = 1.0;
  c.min_p = 0.25;  // floor 0.125: drops 0.1
  auto d = as_map(Sampler(c).distribution(log_probs({0.5, 0.25, 0.15, 0.1}), {}));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_NEAR(d[2], 0.15 / 0.9, 1e-6);
  EXPECT_EQ(d.count(3), 0u);
  c.min_p = 0.6;  // floor 0.3: only the top
  EXPECT_EQ(Sampler(c).distribution(log_probs({0.5, 0.25, 0.15, 0.1}), {}).size(), 1u);
}

TEST(Sampler, FiltersCompose) {
  SamplerConfig c;
  c.temperature = 1.0;
  c.top_k = 3;    // 0.5 0.25 0.15 -> renormalised 0.5/0.9 ...
  c.min_p = 0.4;  // floor 0.4 * 0.5/0.9: drops 0.15/0.9
  auto d = as_map(Sampler(c).distribution(log_probs({0.5, 0.25, 0.15, 0.1}), {}));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0], 2.0 / 3, 1e-6);
}

TEST(Sampler, RepeatPenaltyDividesPositiveMultipliesNegative) {
  SamplerConfig c;
  c.repeat_penalty = 2.0;
  Sampler s(c);
  const std::vector<float> logits = {2.0f, 1.5f, -1.0f, -1.5f};
  EXPECT_EQ(s.sample(logits, {}), 0);
  const std::vector<int32_t> recent = {0, 0, 2};
  EXPECT_EQ(s.sample(logits, recent), 1);  // 2.0 -> 1.0 < 1.5
  c.temperature = 1.0;
  auto d = as_map(Sampler(c).distribution(logits, recent));
  // penalised logits 1.0, 1.5, -2.0, -1.5
  const double z = std::exp(1.0) + std::exp(1.5) + std::exp(-2.0) + std::exp(-1.5);
  EXPECT_NEAR(d[2], std::exp(-2.0) / z, 1e-6);
  EXPECT_NEAR(d[0], std::exp(1.0) / z, 1e-6);
}

TEST(Sampler, RepeatPenaltyOnlyOverLastN) {
  SamplerConfig c;
  c.repeat_penalty = 4.0;
  c.repeat_last_n = 2;
  Sampler s(c);
  const std::vector<float> logits = {2.0f, 1.5f};
  EXPECT_EQ(s.sample(logits, std::vector<int32_t>{0, 1, 1}), 0);  // 0 is outside the window
  EXPECT_EQ(s.sample(logits, std::vector<int32_t>{1, 0, 0}), 1);
}

// OpenAI's semantics: a token generated c times loses presence * (c > 0) +
// frequency * c; tokens only in the prompt (the history) are not penalised.
TEST(Sampler, PresenceAndFrequencyPenaltiesCountGeneratedTokens) {
  SamplerConfig c;
  c.temperature = 1.0;
  c.presence_penalty = 0.5;
  c.frequency_penalty = 0.25;
  const std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<int32_t> history = {3, 3, 3, 0, 1, 1};  // the prompt was {3, 3, 3}
  const std::vector<int32_t> generated = {0, 1, 1};
  auto d = as_map(Sampler(c).distribution(logits, history, generated));
  // logits: 0 -> 1 - 0.5 - 0.25, 1 -> 1 - 0.5 - 0.5, 2 and 3 untouched
  const double l0 = 0.25, l1 = 0.0, l2 = 1.0;
  const double z = std::exp(l0) + std::exp(l1) + 2 * std::exp(l2);
  EXPECT_NEAR(d[0], std::exp(l0) / z, 1e-6);
  EXPECT_NEAR(d[1], std::exp(l1) / z, 1e-6);
  EXPECT_NEAR(d[2], std::exp(l2) / z, 1e-6);
  EXPECT_NEAR(d[3], std::exp(l2) / z, 1e-6);
}

TEST(Sampler, PenaltiesSteerGreedyAndNegativeOnesFavourRepeats) {
  SamplerConfig c;
  c.frequency_penalty = 0.4;
  Sampler s(c);
  const std::vector<float> logits = {2.0f, 1.5f, 1.0f};
  EXPECT_EQ(s.sample(logits, {}, std::vector<int32_t>{}), 0);
  EXPECT_EQ(s.sample(logits, {}, std::vector<int32_t>{0}), 0);     // 1.6 > 1.5
  EXPECT_EQ(s.sample(logits, {}, std::vector<int32_t>{0, 0}), 1);  // 1.2 < 1.5
  c = {};
  c.presence_penalty = 0.6;
  Sampler p(c);
  EXPECT_EQ(p.sample(logits, {}, std::vector<int32_t>{0, 0, 0, 0}), 1);  // once: 1.4 < 1.5
  EXPECT_EQ(p.sample(logits, {}, std::vector<int32_t>{0, 1}), 0);        // both lose 0.6
  c = {};
  c.presence_penalty = -1.0;
  Sampler neg(c);
  EXPECT_EQ(neg.sample(logits, {}, std::vector<int32_t>{1}), 1);  // 1.5 + 1 > 2.0
}

TEST(Sampler, PenaltiesOffLeaveTheDistributionAlone) {
  SamplerConfig c;
  c.temperature = 1.0;
  const auto logits = log_probs({0.5, 0.3, 0.2});
  const std::vector<int32_t> generated = {0, 0, 1};
  EXPECT_EQ(as_map(Sampler(c).distribution(logits, generated, generated)), as_map(Sampler(c).distribution(logits, {})));
}

// A random seed is printed by `run` and must replay through --seed, an int64:
// it is never 2^63 or more.
TEST(Sampler, RandomSeedsFitInt64) {
  for (int i = 0; i < 64; ++i) {
    const uint64_t s = resolve_seed(-1);
    EXPECT_LE(s, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) << s;
  }
  EXPECT_EQ(resolve_seed(0), 0u);
  EXPECT_EQ(resolve_seed(std::numeric_limits<int64_t>::max()), static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
}

TEST(Sampler, SameSeedSameTokens) {
  SamplerConfig c;
  c.temperature = 1.0;
  c.seed = 1234;
  const std::vector<float> flat(8, 0.0f);
  auto draw = [&](uint64_t seed) {
    SamplerConfig cc = c;
    cc.seed = seed;
    Sampler s(cc);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(flat, {}));
    return out;
  };
  EXPECT_EQ(draw(1234), draw(1234));
  EXPECT_NE(draw(1234), draw(1235));
}

TEST(Sampler, DrawFollowsDistribution) {
  SamplerConfig c;
  c.temperature = 1.0;
  c.seed = 7;
  Sampler s(c);
  const auto logits = log_probs({0.5, 0.3, 0.2});
  std::map<int32_t, int> n;
  const int kDraws = 20000;
  for (int i = 0; i < kDraws; ++i) ++n[s.sample(logits, {})];
  EXPECT_NEAR(n[0] / double(kDraws), 0.5, 0.02);
  EXPECT_NEAR(n[1] / double(kDraws), 0.3, 0.02);
  EXPECT_NEAR(n[2] / double(kDraws), 0.2, 0.02);
}

TEST(Sampler, RngIsUniformInUnitInterval) {
  Rng r(99);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const double u = r.next_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

// Only what the maths needs is refused here (finite, not negative, a positive
// repeat penalty); the user's bounds are runtime/generation_limits.h's.
TEST(Sampler, BadConfigIsAnError) {
  SamplerConfig c;
  c.top_p = std::nan("");
  EXPECT_THROW(Sampler{c}, Error);
  c = {};
  c.temperature = -1;
  EXPECT_THROW(Sampler{c}, Error);
  c = {};
  c.min_p = -0.5;
  EXPECT_THROW(Sampler{c}, Error);
  c = {};
  c.repeat_penalty = 0;
  EXPECT_THROW(Sampler{c}, Error);
  c = {};
  c.presence_penalty = std::numeric_limits<double>::infinity();
  EXPECT_THROW(Sampler{c}, Error);
  c = {};
  c.frequency_penalty = std::nan("");
  EXPECT_THROW(Sampler{c}, Error);
}

// A setting past the user's bound is the edge's to refuse (one bound, one
// message: runtime/generation_limits.h); the sampler samples it: top_p 0
// keeps the most likely token, top_p above 1 keeps all, min_p above 1 keeps
// the most likely only, a temperature or repeat penalty past the bound just
// flattens or penalises more. (The sampler refused top_p 0 and min_p 2 with
// bounds and words of its own.)
TEST(Sampler, SettingsPastTheUserBoundsAreTheEdgesToRefuse) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f};
  SamplerConfig c;
  c.temperature = 1;
  c.top_p = 0;
  EXPECT_EQ(Sampler(c).distribution(logits, {}, {}).size(), 1u);
  c.top_p = -1;
  EXPECT_EQ(Sampler(c).distribution(logits, {}, {}).size(), 1u);
  c.top_p = 1.5;
  EXPECT_EQ(Sampler(c).distribution(logits, {}, {}).size(), 3u);
  c = {};
  c.temperature = 1;
  c.min_p = 2;
  const auto d = Sampler(c).distribution(logits, {}, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].first, 1);
  c = {};
  c.temperature = 8;
  c.repeat_penalty = 500;
  Sampler s(c);
  const int32_t recent[] = {1};
  const int32_t t = s.sample(logits, recent, {});
  EXPECT_TRUE(t >= 0 && t < 3);
}

}  // namespace
}  // namespace og
