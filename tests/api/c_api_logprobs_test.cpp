// Logprobs in og_generation (og_generate_options.logprobs / top_logprobs):
// each generated token's log-softmax of the raw logits, as the server reports
// them, with the top alternatives most likely first; the same from
// og_session_generate and a stream; bounds and the engine's refusal.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "api/api_test_util.h"

namespace og_test {
namespace {

// log_softmax(logits)[id] in double.
double log_softmax(const float* l, size_t n, int32_t id) {
  const double m = *std::max_element(l, l + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(double(l[i]) - m);
  return double(l[id]) - m - std::log(sum);
}

TEST_F(ModelTest, LogprobsOfEachGeneratedTokenAndItsAlternatives) {
  og_session* s = new_session();
  og_generate_options o = greedy(12);
  o.logprobs = 1;
  o.top_logprobs = 5;
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  ASSERT_EQ(g.tokens.n, 12u);
  ASSERT_NE(g.logprobs, nullptr);
  ASSERT_EQ(g.top_k, 5);
  for (size_t i = 0; i < g.tokens.n; ++i) {
    EXPECT_LE(g.logprobs[i], 0.0f);
    // Greedy: the sampled token is the most likely alternative, with the same logprob.
    EXPECT_EQ(g.top_ids[i * 5], g.tokens.ids[i]) << i;
    EXPECT_EQ(g.top_logprobs[i * 5], g.logprobs[i]) << i;
    for (int k = 1; k < 5; ++k) EXPECT_LE(g.top_logprobs[i * 5 + k], g.top_logprobs[i * 5 + k - 1]);
  }
  // The last token's logprob is the log-softmax of the logits it was drawn from.
  const float* l = nullptr;
  size_t nv = 0;
  ASSERT_EQ(og_session_logits(s, &l, &nv), OG_OK) << og_last_error();
  const size_t last = g.tokens.n - 1;
  EXPECT_NEAR(g.logprobs[last], log_softmax(l, nv, g.tokens.ids[last]), 1e-5);
  EXPECT_NEAR(g.top_logprobs[last * 5 + 3], log_softmax(l, nv, g.top_ids[last * 5 + 3]), 1e-5);

  // A stream gives the same numbers in its finish.
  ASSERT_EQ(og_session_reset(s), OG_OK);
  ASSERT_EQ(og_session_stream_start(s, kPromptIds.data(), kPromptIds.size(), &o), OG_OK);
  int32_t tok;
  const char* t;
  size_t n;
  int done = 0;
  while (!done) ASSERT_EQ(og_session_stream_next(s, &tok, &t, &n, &done), OG_OK);
  og_generation sg{};
  ASSERT_EQ(og_session_stream_finish(s, &sg), OG_OK);
  ASSERT_EQ(sg.tokens.n, g.tokens.n);
  EXPECT_TRUE(std::equal(g.logprobs, g.logprobs + g.tokens.n, sg.logprobs));
  EXPECT_TRUE(std::equal(g.top_ids, g.top_ids + 5 * g.tokens.n, sg.top_ids));
  og_generation_free(&sg);
  og_generation_free(&g);
  og_generation_free(&g);  // twice is fine
  EXPECT_EQ(g.logprobs, nullptr);

  // Without logprobs the arrays stay NULL; logprobs alone has no alternatives.
  o.logprobs = 0;
  o.top_logprobs = 0;
  ASSERT_EQ(og_session_reset(s), OG_OK);
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK);
  EXPECT_EQ(g.logprobs, nullptr);
  EXPECT_EQ(g.top_ids, nullptr);
  og_generation_free(&g);
  o.logprobs = 1;
  ASSERT_EQ(og_session_generate(s, nullptr, 0, &o, &g), OG_OK);
  EXPECT_NE(g.logprobs, nullptr);
  EXPECT_EQ(g.top_k, 0);
  EXPECT_EQ(g.top_ids, nullptr);
  og_generation_free(&g);
  og_session_free(s);
}

TEST_F(ModelTest, LogprobsBounds) {
  og_session* s = new_session();
  og_generate_options o = greedy(4);
  o.top_logprobs = 21;
  og_generation g{};
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "top_logprobs is 21, outside [0, 20]");
  o.top_logprobs = -1;
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  og_session_free(s);
  og_engine* e = nullptr;
  ASSERT_EQ(og_engine_new(model_, nullptr, &e), OG_OK);
  o.top_logprobs = 0;
  o.logprobs = 1;
  uint64_t id = 0;
  EXPECT_EQ(og_engine_submit(e, kPromptIds.data(), kPromptIds.size(), &o, &id), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("not by the engine"), std::string::npos) << og_last_error();
  og_engine_free(e);
}

}  // namespace
}  // namespace og_test
