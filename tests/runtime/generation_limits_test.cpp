// The one home of the generation bounds: each field's bound, the field carried
// as data, one message per mistake.
#include "runtime/generation_limits.h"
#include "runtime/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>

namespace og {
namespace {

TEST(GenerationLimits, InRangeSettingsPass) {
  GenerationSettings s;
  s.temperature = 2;
  s.top_p = 1;
  s.min_p = 0;
  s.repeat_penalty = 100;
  s.presence_penalty = -2;
  s.frequency_penalty = 2;
  s.top_k = -1;
  s.max_tokens = 0;
  s.n = 1;
  s.top_logprobs = 20;
  s.logit_bias = {{5, -100}, {6, 100}};
  s.stop = {"a", "b"};
  EXPECT_TRUE(check_generation_settings(s).empty());
}

TEST(GenerationLimits, OpenAiBoundsWithOneMessagePerMistake) {
  GenerationSettings s;
  s.temperature = 3;
  s.top_p = 0;
  s.presence_penalty = 2.5;
  s.top_logprobs = 21;
  const auto v = check_generation_settings(s);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].field, LimitField::kTemperature);
  EXPECT_EQ(v[0].message, "is 3, outside [0, 2]");
  EXPECT_EQ(describe_violation(v[0], "'temperature'"), "'temperature' is 3, outside [0, 2]");
  EXPECT_EQ(v[1].field, LimitField::kTopP);
  EXPECT_EQ(v[1].message, "is 0, outside (0, 1]");
  EXPECT_EQ(v[2].field, LimitField::kPresencePenalty);
  EXPECT_EQ(v[2].message, "is 2.5, outside [-2, 2]");
  EXPECT_EQ(v[3].field, LimitField::kTopLogprobs);
  EXPECT_EQ(v[3].message, "is 21, outside [0, 20]");
  EXPECT_STREQ(limit_field_name(v[3].field), "top_logprobs");
}

TEST(GenerationLimits, NonFiniteNumbersAreOutside) {
  GenerationSettings s;
  s.temperature = std::nan("");
  s.repeat_penalty = 1e300 * 1e300;
  const auto v = check_generation_settings(s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].message, "is nan, outside [0, 2]");
  EXPECT_EQ(v[1].message, "is inf, outside (0, 100]");
}

TEST(GenerationLimits, ListsCarryTheirIndex) {
  GenerationSettings s;
  s.stop = {"x", ""};
  s.logit_bias = {{7, 101}};
  const auto v = check_generation_settings(s);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].field, LimitField::kLogitBias);
  EXPECT_EQ(v[0].index, 7);
  EXPECT_EQ(v[0].message, "is 101, outside [-100, 100]");
  EXPECT_EQ(v[1].field, LimitField::kStop);
  EXPECT_EQ(v[1].index, 1);
  EXPECT_EQ(v[1].message, "is empty");
  s = {};
  s.stop.assign(limits::kStopStrings + 1, "x");
  ASSERT_EQ(check_generation_settings(s).size(), 1u);
  EXPECT_EQ(check_generation_settings(s)[0].message, "has 17 strings; at most 16");
}

}  // namespace
}  // namespace og

namespace og {
namespace {

// One set of engine defaults: the scheduler's own are og_engine_options_init's
// (which reads the same constants; tests/api checks its promised values).
TEST(EngineDefaults, TheSchedulerDefaultsAreTheLibrarys) {
  const SchedulerOptions o;
  EXPECT_EQ(o.max_decode_sequences, engine_defaults::kMaxSequences);
  EXPECT_EQ(o.max_session_tokens, engine_defaults::kMaxSessionTokens);
  EXPECT_EQ(o.step_tokens, engine_defaults::kStepTokens);
  EXPECT_EQ(engine_defaults::kMaxSequences, 4);  // promised by include/offgraph/offgraph.h
  EXPECT_EQ(engine_defaults::kMaxSessionTokens, 1024);
  EXPECT_EQ(engine_defaults::kStepTokens, 512);
}

}  // namespace
}  // namespace og
