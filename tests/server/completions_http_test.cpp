// /v1/completions beyond one prompt, over the echo scheduler: a prompt list
// answers every prompt's n choices (index = prompt * n + i) whole and
// streamed, with usage counting each prompt once; echo puts each prompt
// before its choices' text and, with logprobs, the prompt tokens' logprobs
// (the first null) before the generated ones, max_tokens 0 answering the
// prompt alone (lm-eval's log-likelihood requests); suffix builds the
// fill-in-the-middle prompt from the vocabulary's FIM tokens, and is a 400
// for a vocabulary without them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server_fixture.h"

namespace og::server::test {
namespace {

using nlohmann::json;

const std::string kStarcoderVocab = std::string(OG_TESTDATA_DIR) + "/vocab/ggml-vocab-starcoder.gguf";

class Completions : public ServerFixture {
 protected:
  // What choice `choice` of the echo scheduler replies: the prompt from its token `choice`, n tokens.
  std::string echo_of(const std::vector<int32_t>& prompt, size_t n, size_t choice) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += tok_->decode(std::vector<int32_t>{prompt[(i + choice) % prompt.size()]});
    return s;
  }
  json post(const std::string& body, int status = 200) {
    auto r = client().Post("/v1/completions", body, "application/json");
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, status) << r->body;
    return json::parse(r->body);
  }
};

TEST_F(Completions, APromptListAnswersEveryPromptsChoicesInOrder) {
  start();
  const std::vector<std::string> texts = {"Once upon a time", "The cat", "A dog ran"};
  const json j = post(R"({"prompt": ["Once upon a time", "The cat", "A dog ran"], "max_tokens": 4, "n": 2})");
  ASSERT_EQ(j["choices"].size(), 6u) << j.dump();
  int64_t prompt_tokens = 0;
  for (size_t p = 0; p < texts.size(); ++p) {
    const std::vector<int32_t> ids = tok_->encode(texts[p], true, false);
    prompt_tokens += static_cast<int64_t>(ids.size());
    for (size_t i = 0; i < 2; ++i) {
      const json& c = j["choices"][p * 2 + i];
      EXPECT_EQ(c["index"], p * 2 + i);
      EXPECT_EQ(c["text"], echo_of(ids, 4, i)) << p << " " << i;
      EXPECT_EQ(c["finish_reason"], "length");
    }
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(j["usage"]["completion_tokens"], 24);
  // One scheduler request per prompt, each of n choices.
  const auto sub = sched_->submitted();
  ASSERT_EQ(sub.size(), 3u);
  EXPECT_EQ(sub[1].prompt, tok_->encode("The cat", true, false));
  // The request is counted once.
  const std::string t = client().Get("/metrics")->body;
  EXPECT_NE(t.find("offgraph:requests_total{model_name=\"stories\",endpoint=\"completion\",finish_reason=\"length\"} 1"),
            std::string::npos)
      << t;
}

TEST_F(Completions, APromptListOfTokenIdsStreamsEveryChoiceWithTheUsageOnce) {
  start();
  auto c = client();
  const SseEvents e = sse_events(post_sse(
      c, "/v1/completions",
      R"({"prompt": [[1, 20, 30], [1, 40]], "max_tokens": 3, "stream": true, "stream_options": {"include_usage": true}})"));
  ASSERT_TRUE(e.done);
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  json usage;
  for (const json& ch : e.chunks) {
    if (ch["choices"].empty()) {
      usage = ch["usage"];
      continue;
    }
    const json& x = ch["choices"][0];
    text[x["index"].get<int>()] += x["text"].get<std::string>();
    if (!x["finish_reason"].is_null()) finish[x["index"].get<int>()] = x["finish_reason"];
  }
  ASSERT_EQ(text.size(), 2u);
  EXPECT_EQ(text[0], echo_of({1, 20, 30}, 3, 0));
  EXPECT_EQ(text[1], echo_of({1, 40}, 3, 0));
  EXPECT_EQ(finish[0], "length");
  EXPECT_EQ(finish[1], "length");
  EXPECT_EQ(usage["prompt_tokens"], 5);
  EXPECT_EQ(usage["completion_tokens"], 6);
}

TEST_F(Completions, EchoPutsThePromptFirst) {
  start();
  const std::vector<int32_t> ids = tok_->encode("Once upon a time", true, false);
  const json j = post(R"({"prompt": "Once upon a time", "max_tokens": 3, "echo": true})");
  EXPECT_EQ(j["choices"][0]["text"], "Once upon a time" + echo_of(ids, 3, 0));
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_FALSE(sched_->last_options().prompt_logprobs);  // no logprobs asked: nothing extra to compute
}

TEST_F(Completions, EchoWithLogprobsAndNoTokensGivesThePromptsLogprobs) {
  start();
  const std::vector<int32_t> ids = {1, 20, 30, 40};
  const json j = post(R"({"prompt": [1, 20, 30, 40], "max_tokens": 0, "echo": true, "logprobs": 2})");
  const json& c = j["choices"][0];
  EXPECT_EQ(c["text"], tok_->decode(ids));
  EXPECT_EQ(c["finish_reason"], "length");
  const json& lp = c["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 4u) << lp.dump();
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(lp["tokens"][i], tok_->token_bytes(ids[i]));
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][i].get<double>(), -0.25 * static_cast<double>(i));
    EXPECT_EQ(lp["top_logprobs"][i].size(), 1u);  // both alternatives are the same token
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(j["usage"]["completion_tokens"], 0);
  EXPECT_TRUE(sched_->last_options().prompt_logprobs);
  EXPECT_EQ(sched_->last_options().max_new_tokens, 0);
}

TEST_F(Completions, EchoWithLogprobsPrefixesTheGeneratedLogprobs) {
  start();
  const std::vector<int32_t> ids = {1, 20, 30};
  const json j = post(R"({"prompt": [1, 20, 30], "max_tokens": 2, "echo": true, "logprobs": 0, "n": 2})");
  for (size_t i = 0; i < 2; ++i) {
    const json& c = j["choices"][i];
    EXPECT_EQ(c["text"], tok_->decode(ids) + echo_of(ids, 2, i));
    const json& lp = c["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), 5u) << lp.dump();
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][2].get<double>(), -0.5);   // the prompt's third token
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][3].get<double>(), -0.5);   // the first generated (the fake's)
  }
}

TEST_F(Completions, StreamedEchoOpensEachChoiceWithItsPrompt) {
  start();
  auto c = client();
  const SseEvents e = sse_events(post_sse(
      c, "/v1/completions", R"({"prompt": ["Once", "The cat"], "max_tokens": 2, "echo": true, "logprobs": 1,
                              "stream": true})"));
  ASSERT_TRUE(e.done);
  std::map<int, std::vector<json>> per;
  for (const json& ch : e.chunks) per[ch["choices"][0]["index"].get<int>()].push_back(ch["choices"][0]);
  ASSERT_EQ(per.size(), 2u);
  const std::vector<std::string> texts = {"Once", "The cat"};
  for (int p = 0; p < 2; ++p) {
    const json& first = per[p].front();
    EXPECT_EQ(first["text"], texts[p]);
    const size_t n = tok_->encode(texts[p], true, false).size();
    ASSERT_EQ(first["logprobs"]["tokens"].size(), n) << first.dump();
    EXPECT_TRUE(first["logprobs"]["token_logprobs"][0].is_null());
    std::string all;
    for (const json& x : per[p]) all += x["text"].get<std::string>();
    EXPECT_EQ(all, texts[p] + echo_of(tok_->encode(texts[p], true, false), 2, 0));
  }
}

TEST_F(Completions, SuffixBuildsTheFillInTheMiddlePrompt) {
  start({}, true, kStarcoderVocab);
  const SpecialTokens& s = tok_->special();
  ASSERT_GE(s.fim_pre, 0);
  const json j = post(R"j({"prompt": "def add(a, b):\n    ", "suffix": "\n\nprint(add(1, 2))", "max_tokens": 2})j");
  EXPECT_EQ(j["choices"].size(), 1u);
  std::vector<int32_t> want;
  if (s.add_bos) want.push_back(s.bos);
  want.push_back(s.fim_pre);
  for (int32_t id : tok_->encode("def add(a, b):\n    ", false, false)) want.push_back(id);
  want.push_back(s.fim_suf);
  for (int32_t id : tok_->encode("\n\nprint(add(1, 2))", false, false)) want.push_back(id);
  want.push_back(s.fim_mid);
  EXPECT_EQ(sched_->last_options().prompt, want);
}

TEST_F(Completions, BadRequestsAre400s) {
  start();
  struct Case {
    const char* body;
    const char* param;
    const char* words;
  };
  const Case cases[] = {
      {R"({"prompt": "x", "suffix": "y"})", "suffix", "no FIM tokens"},
      {R"({"prompt": ["a", [1, 99999]]})", "prompt", "prompt[1][1]"},
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens", "echo"},
      {R"({"prompt": "x", "n": 9})", "n", "--max-n"},
  };
  for (const Case& c : cases) {
    const json j = post(c.body, 400);
    EXPECT_EQ(j["error"]["param"], c.param) << c.body << " -> " << j.dump();
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.words), std::string::npos) << c.body << " -> " << j.dump();
  }
  EXPECT_TRUE(sched_->submitted().empty());
}

}  // namespace
}  // namespace og::server::test
