// Prompt logprobs (an echo request's): through the scheduler and through
// Session::generate, each prompt token after the first gets the log-softmax
// of the logits of the rows before it, as a plain twin computes them (one
// prefill per prefix, the last row's logits), with top alternatives; the
// events come in order, before any choice's first token, for every chunking;
// a prefix-cache hit is never taken for such a request; max_new_tokens 0
// prefills and samples nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/synth_fixture.h"
#include "runtime/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

using namespace og::test;

constexpr int64_t kSessionTokens = 96;

KvPolicy policy(int sequences, int64_t max_write) {
  KvPolicy p;
  p.max_capacity = kSessionTokens;
  p.initial_capacity = 8;
  p.max_write = max_write;
  p.max_sequences = sequences;
  p.block_size = 4;
  return p;
}

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded x;
    x.model = Model::load(synth_gguf(synth::Family::kQwen3));
    x.tok = Tokenizer::from_path(x.model->source_path());
    return x;
  }();
  return l;
}

// The plain twin: logprob of prompt[i] from a fresh prefill of prompt[0, i).
std::vector<float> reference(const std::vector<int32_t>& prompt, std::vector<int32_t>* top1) {
  const Loaded& l = loaded();
  ModelEngine engine(*l.model);
  std::vector<float> out;
  for (size_t i = 1; i < prompt.size(); ++i) {
    Session s(engine, make_kv_cache(KvKind::kSequence, l.model->kv_geometry(), policy(1, 512)), *l.tok);
    s.prefill(std::span<const int32_t>(prompt.data(), i), /*want_logits=*/true);
    const std::span<const float> z = s.logits();
    const float mx = *std::max_element(z.begin(), z.end());
    double sum = 0;
    for (float x : z) sum += std::exp(static_cast<double>(x - mx));
    out.push_back(static_cast<float>(z[prompt[i]] - mx - std::log(sum)));
    top1->push_back(static_cast<int32_t>(std::max_element(z.begin(), z.end()) - z.begin()));
  }
  return out;
}

void expect_matches(const std::vector<TokenEvent>& got, const std::vector<int32_t>& prompt,
                    const std::vector<float>& want, const std::vector<int32_t>& top1, const std::string& what) {
  ASSERT_EQ(got.size(), prompt.size() - 1) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].id, prompt[i + 1]) << what << " token " << i + 1;
    EXPECT_NEAR(got[i].logprob, want[i], 2e-3) << what << " token " << i + 1;
    ASSERT_EQ(got[i].top.size(), 2u) << what;
    EXPECT_EQ(got[i].top[0].id, top1[i]) << what << " token " << i + 1;
    EXPECT_GE(got[i].top[0].logprob, got[i].top[1].logprob) << what;
  }
}

TEST(PromptLogprobs, SchedulerEqualsThePlainTwinForEveryChunking) {
  const Loaded& l = loaded();
  const std::vector<int32_t> prompt = test_tokens(41, l.model->n_vocab(), 5);
  std::vector<int32_t> top1;
  const std::vector<float> want = reference(prompt, &top1);
  for (int64_t max_write : {1, 4, 7, 512})
    for (int64_t step_tokens : {5, 64}) {
      ModelEngine engine(*l.model);
      SchedulerOptions o;
      o.max_decode_sequences = 3;
      o.step_tokens = step_tokens;
      o.max_session_tokens = kSessionTokens;
      o.prefix_cache_entries = 2;
      Scheduler sched(engine, *l.tok, make_kv_cache(KvKind::kBatchedCell, l.model->kv_geometry(), policy(5, max_write)),
                      o);
      // The same prompt twice (the second could hit the prefix cache), the
      // second with three choices; log every event in order.
      std::vector<std::string> order;
      std::vector<TokenEvent> events[2];
      std::vector<RequestReport> reports;
      for (int k = 0; k < 2; ++k) {
        RequestOptions r;
        r.prompt = prompt;
        r.max_new_tokens = k == 0 ? 0 : 3;
        r.prompt_logprobs = true;
        r.top_logprobs = 2;
        std::vector<RequestCallbacks> cbs(k == 0 ? 1 : 3);
        for (size_t c = 0; c < cbs.size(); ++c) {
          cbs[c].on_prompt_token = [&, k](const TokenEvent& ev) {
            events[k].push_back(ev);
            order.push_back("p" + std::to_string(k));
          };
          cbs[c].on_token = [&, k](const TokenEvent&) { order.push_back("t" + std::to_string(k)); };
          cbs[c].on_finish = [&](const RequestReport& rep) { reports.push_back(rep); };
        }
        sched.submit_group(std::move(r), std::move(cbs));
        sched.run_until_idle();
      }
      const std::string what = "max_write " + std::to_string(max_write) + " step_tokens " + std::to_string(step_tokens);
      expect_matches(events[0], prompt, want, top1, what + " (first)");
      expect_matches(events[1], prompt, want, top1, what + " (second, 3 choices)");
      ASSERT_EQ(reports.size(), 4u);
      EXPECT_EQ(reports[0].generated_tokens, 0) << what;
      EXPECT_EQ(reports[0].reason, FinishReason::kLength) << what;
      for (const RequestReport& r : reports) EXPECT_EQ(r.cached_tokens, 0) << what;
      // Every prompt event of the second request precedes its choices' tokens.
      const auto last_p = std::find(order.rbegin(), order.rend(), "p1");
      const auto first_t = std::find(order.begin(), order.end(), "t1");
      ASSERT_NE(first_t, order.end());
      EXPECT_LT(order.rend() - last_p - 1, first_t - order.begin()) << what;
    }
}

TEST(PromptLogprobs, SessionGenerateGivesTheSameEvents) {
  const Loaded& l = loaded();
  const std::vector<int32_t> prompt = test_tokens(23, l.model->n_vocab(), 9);
  std::vector<int32_t> top1;
  const std::vector<float> want = reference(prompt, &top1);
  for (int64_t max_write : {3, 512}) {
    ModelEngine engine(*l.model);
    Session s(engine, make_kv_cache(KvKind::kSequence, l.model->kv_geometry(), policy(1, max_write)), *l.tok);
    Sampler sampler(SamplerConfig{});
    std::vector<TokenEvent> got;
    GenerateOptions o;
    o.max_new_tokens = 2;
    o.top_logprobs = 2;
    o.on_prompt_token = [&](const TokenEvent& ev) { got.push_back(ev); };
    const TurnResult r = s.generate(prompt, sampler, o, nullptr);
    expect_matches(got, prompt, want, top1, "max_write " + std::to_string(max_write));
    EXPECT_EQ(r.tokens.size(), 2u);
  }
}

}  // namespace
}  // namespace og
