// The C API's engine (the scheduler): batched requests equal single runs,
// streaming order, cancellation, refusals, stats, and its bad uses.
#include <thread>
#include <tuple>

#include "api/api_test_util.h"
#include "offgraph/offgraph.hpp"

namespace {

using namespace og_test;

og_engine* new_engine(og_model* m, const char* dtype = "f32", int max_sequences = 4) {
  og_engine_options eo;
  og_engine_options_init(&eo);
  eo.kv_dtype = dtype;
  eo.max_sequences = max_sequences;
  eo.max_session_tokens = 256;
  og_engine* e = nullptr;
  EXPECT_EQ(og_engine_new(m, &eo, &e), OG_OK) << og_last_error();
  return e;
}

// The defaults the header promises (runtime/generation_limits.h engine_defaults,
// which the scheduler's own defaults are too: tests/runtime EngineDefaults).
TEST(CApiEngineOptions, DefaultsAreThePromisedOnes) {
  og_engine_options eo;
  og_engine_options_init(&eo);
  EXPECT_EQ(eo.max_sequences, 4);
  EXPECT_EQ(eo.max_session_tokens, 1024);
  EXPECT_EQ(eo.step_tokens, 512);
}

struct Read {
  std::string text;
  std::vector<int32_t> tokens;
  og_finish_reason reason = OG_FINISH_FAILED;
  std::string message;
  int64_t prompt_tokens = 0, generated_tokens = 0;
};

Read read_all(og_engine* e, uint64_t id) {
  Read r;
  for (;;) {
    og_event ev{};
    EXPECT_EQ(og_engine_next(e, id, 60000, &ev), OG_OK) << og_last_error();
    if (ev.kind == OG_EVENT_NONE) {
      ADD_FAILURE() << "no event within 60 s";
      return r;
    }
    if (ev.kind == OG_EVENT_TOKEN) r.tokens.push_back(ev.token);
    if (ev.kind == OG_EVENT_TEXT) r.text.append(ev.text, ev.len);
    if (ev.kind == OG_EVENT_FINISHED) {
      r.reason = ev.finish_reason;
      r.message.assign(ev.text, ev.len);
      r.prompt_tokens = ev.prompt_tokens;
      r.generated_tokens = ev.generated_tokens;
      return r;
    }
  }
}

// Greedy text of one session with an f32 cache.
std::string single_run(og_model* m, const std::vector<int32_t>& prompt, int64_t n) {
  og_session_options so;
  og_session_options_init(&so);
  so.kv_dtype = "f32";
  og_session* s = nullptr;
  EXPECT_EQ(og_session_new(m, &so, &s), OG_OK);
  og_generate_options o = greedy(n);
  og_generation g{};
  EXPECT_EQ(og_session_generate(s, prompt.data(), prompt.size(), &o, &g), OG_OK) << og_last_error();
  std::string t = text_of(g);
  og_generation_free(&g);
  og_session_free(s);
  return t;
}

TEST_F(ModelTest, EngineBatchEqualsSingleRuns) {
  const std::vector<std::vector<int32_t>> prompts = {
      kPromptIds, {1, 403, 407}, {1, 432, 383, 286}, {1, 403, 407, 261, 378, 432}, {1, 315}, {1, 426, 338}};
  og_engine* e = new_engine(model_);
  std::vector<uint64_t> ids;
  og_generate_options o = greedy(60);
  for (const auto& p : prompts) {
    uint64_t id = 0;
    ASSERT_EQ(og_engine_submit(e, p.data(), p.size(), &o, &id), OG_OK) << og_last_error();
    EXPECT_GT(id, 0u);
    ids.push_back(id);
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Read r = read_all(e, ids[i]);
    EXPECT_EQ(r.reason, OG_FINISH_LENGTH) << r.message;
    EXPECT_EQ(r.tokens.size(), 60u);
    EXPECT_EQ(r.generated_tokens, 60);
    EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(prompts[i].size()));
    EXPECT_EQ(r.text, single_run(model_, prompts[i], 60)) << "prompt " << i;
    if (i == 0) {
      EXPECT_EQ(r.text, kContinuation);
    }
  }
  og_engine_stats st{};
  ASSERT_EQ(og_engine_get_stats(e, &st), OG_OK);
  EXPECT_EQ(st.finished, prompts.size());
  EXPECT_EQ(st.generated_tokens, static_cast<int64_t>(60 * prompts.size()));
  EXPECT_GT(st.steps, 0);
  EXPECT_LE(st.peak_running, 4);
  // A finished request's id is forgotten once its finish was read.
  og_event ev{};
  EXPECT_EQ(og_engine_next(e, ids[0], 0, &ev), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("unknown request id"), std::string::npos);
  EXPECT_EQ(og_engine_free(e), OG_OK);
}

TEST_F(ModelTest, EngineCancelAndRefuse) {
  og_engine* e = new_engine(model_, "f16", 1);
  og_generate_options o = greedy(200);
  uint64_t a = 0, b = 0, c = 0;
  ASSERT_EQ(og_engine_submit(e, kPromptIds.data(), kPromptIds.size(), &o, &a), OG_OK);
  ASSERT_EQ(og_engine_submit(e, kPromptIds.data(), kPromptIds.size(), &o, &b), OG_OK);
  ASSERT_EQ(og_engine_cancel(e, b), OG_OK);
  ASSERT_EQ(og_engine_cancel(e, 999999), OG_OK);  // unknown: ignored
  const Read rb = read_all(e, b);
  EXPECT_EQ(rb.reason, OG_FINISH_CANCELLED);
  ASSERT_EQ(og_engine_cancel(e, a), OG_OK);
  EXPECT_EQ(read_all(e, a).reason, OG_FINISH_CANCELLED);
  // Too long for a session: refused with a reason.
  o.max_new_tokens = 1000;
  ASSERT_EQ(og_engine_submit(e, kPromptIds.data(), kPromptIds.size(), &o, &c), OG_OK);
  const Read rc = read_all(e, c);
  EXPECT_EQ(rc.reason, OG_FINISH_REFUSED);
  EXPECT_FALSE(rc.message.empty());
  og_engine_stats st{};
  ASSERT_EQ(og_engine_get_stats(e, &st), OG_OK);
  EXPECT_EQ(st.cancelled, 2u);
  EXPECT_EQ(st.refused, 1u);
  og_engine_free(e);
}

TEST_F(ModelTest, EngineFreeCancelsWhatRuns) {
  og_engine* e = new_engine(model_, "f16", 1);
  og_generate_options o = greedy(250);
  uint64_t id = 0;
  ASSERT_EQ(og_engine_submit(e, kPromptIds.data(), kPromptIds.size(), &o, &id), OG_OK);
  EXPECT_EQ(og_engine_free(e), OG_OK);
  og_event ev{};
  EXPECT_EQ(og_engine_next(e, id, 0, &ev), OG_ERR_INVALID_HANDLE);
}

TEST_F(ModelTest, EngineBadInput) {
  og_engine_options eo;
  og_engine_options_init(&eo);
  og_engine* e = nullptr;
  eo.kv_kind = "sequence";
  EXPECT_EQ(og_engine_new(model_, &eo, &e), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("kv_kind"), std::string::npos);
  og_engine_options_init(&eo);
  eo.max_sequences = 0;
  EXPECT_EQ(og_engine_new(model_, &eo, &e), OG_ERR_INVALID_ARGUMENT);
  og_engine_options_init(&eo);
  eo.step_tokens = 2;
  EXPECT_EQ(og_engine_new(model_, &eo, &e), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_engine_new(nullptr, nullptr, &e), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(e, nullptr);

  e = new_engine(model_);
  uint64_t id = 0;
  EXPECT_EQ(og_engine_submit(e, nullptr, 0, nullptr, &id), OG_ERR_INVALID_ARGUMENT);
  const int32_t bad[] = {1, 600};
  EXPECT_EQ(og_engine_submit(e, bad, 2, nullptr, &id), OG_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(og_last_error()).find("token id 600"), std::string::npos) << og_last_error();
  og_generate_options o = greedy(10);
  o.sampler.top_p = 0;
  EXPECT_EQ(og_engine_submit(e, kPromptIds.data(), kPromptIds.size(), &o, &id), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("top_p"), std::string::npos);
  og_event ev{};
  EXPECT_EQ(og_engine_next(e, 12345, 0, &ev), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_engine_next(nullptr, 1, 0, &ev), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_engine_cancel(nullptr, 1), OG_ERR_INVALID_HANDLE);
  og_engine_stats st{};
  EXPECT_EQ(og_engine_get_stats(nullptr, &st), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_engine_get_stats(e, nullptr), OG_ERR_INVALID_ARGUMENT);
  og_engine_free(e);
  EXPECT_EQ(og_engine_free(e), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_engine_free(nullptr), OG_OK);
}

TEST_F(ModelTest, EngineFromManyThreads) {
  offgraph::Model m(kModelPath);
  og_engine_options eo;
  og_engine_options_init(&eo);
  eo.kv_dtype = "f32";
  offgraph::Engine engine(m, &eo);
  std::vector<std::string> texts(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      og_generate_options o = offgraph::default_generate_options();
      o.max_new_tokens = 60;
      texts[i] = engine.collect(engine.submit(kPromptIds, o)).text;
    });
  for (auto& t : threads) t.join();
  for (const std::string& t : texts) EXPECT_EQ(t, kContinuation);
  EXPECT_EQ(engine.stats().finished, 4u);
}

// og_engine_options' prompt lookup: the greedy text is the plain one, in fewer
// steps (the story repeats, so drafts are accepted); bad sizes are refused.
TEST_F(ModelTest, EngineSpeculationGivesThePlainTextInFewerSteps) {
  const std::string story =
      "Once upon a time, there was a little girl named Lily. She liked to play. Once upon a time, there was a little";
  og_tokens t{};
  ASSERT_EQ(og_tokenize(model_, story.data(), story.size(), 1, 0, &t), OG_OK) << og_last_error();
  const std::vector<int32_t> prompt(t.ids, t.ids + t.n);
  og_tokens_free(&t);
  int64_t steps[2] = {0, 0};
  for (int spec = 0; spec < 2; ++spec) {
    og_engine_options eo;
    og_engine_options_init(&eo);
    EXPECT_EQ(eo.spec_ngram_size, 0);
    EXPECT_EQ(eo.spec_draft_max, 4);
    eo.kv_dtype = "f32";
    eo.max_session_tokens = 256;
    eo.spec_ngram_size = spec ? 3 : 0;
    og_engine* e = nullptr;
    ASSERT_EQ(og_engine_new(model_, &eo, &e), OG_OK) << og_last_error();
    og_generate_options o = greedy(60);
    uint64_t id = 0;
    ASSERT_EQ(og_engine_submit(e, prompt.data(), prompt.size(), &o, &id), OG_OK) << og_last_error();
    EXPECT_EQ(read_all(e, id).text, single_run(model_, prompt, 60)) << "spec " << spec;
    og_engine_stats st{};
    ASSERT_EQ(og_engine_get_stats(e, &st), OG_OK);
    steps[spec] = st.steps;
    EXPECT_EQ(og_engine_free(e), OG_OK);
  }
  EXPECT_LT(steps[1], steps[0]);
  for (auto [size, min, max_draft] : {std::tuple{17, 1, 4}, std::tuple{3, 4, 4}, std::tuple{3, 1, 0}, std::tuple{-1, 1, 4}}) {
    og_engine_options eo;
    og_engine_options_init(&eo);
    eo.spec_ngram_size = size;
    eo.spec_ngram_min = min;
    eo.spec_draft_max = max_draft;
    og_engine* e = nullptr;
    EXPECT_EQ(og_engine_new(model_, &eo, &e), OG_ERR_INVALID_ARGUMENT) << size << " " << min << " " << max_draft;
    EXPECT_NE(std::string(og_last_error()).find("spec_"), std::string::npos) << og_last_error();
    EXPECT_EQ(e, nullptr);
  }
}

}  // namespace
