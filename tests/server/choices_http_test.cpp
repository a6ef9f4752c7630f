// OpenAI's n through the HTTP layer over the echo scheduler (choice i echoes
// the prompt from its token i): whole replies carry choices [0, n) with their
// index and the usage once (prompt once, completions summed); streams carry
// one choice per chunk, a role chunk and a finish chunk per choice, then the
// usage once and [DONE]; each choice's reply goes through its own tool-call
// parser; n beyond --max-n or --parallel is a 400; a client leaving cancels
// every choice; the request is counted once in /metrics.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "chat/jinja_chat.h"
#include "server_fixture.h"

namespace og::server::test {
namespace {

using nlohmann::json;

class Choices : public ServerFixture {
 protected:
  // What choice `choice` of the echo scheduler replies: the prompt from its token `choice`, n tokens.
  std::string echo_of(const std::vector<int32_t>& prompt, size_t n, size_t choice) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += tok_->decode(std::vector<int32_t>{prompt[(i + choice) % prompt.size()]});
    return s;
  }
  std::vector<int32_t> chat_prompt(const std::string& user) {
    return encode_chat(*tok_, tmpl_->render_segments(std::vector<ChatMessage>{{"user", user}}, true), true);
  }
  // Per choice index: its text (delta content or completion text), its chunks and finish reasons.
  struct PerChoice {
    std::string text;
    int role_chunks = 0, finish_chunks = 0, chunks = 0;
    std::string finish_reason;
    bool finished_before_text = false;
  };
  std::map<int, PerChoice> split(const SseEvents& e, bool chat) {
    std::map<int, PerChoice> out;
    for (const json& ch : e.chunks) {
      if (ch["choices"].empty()) continue;  // the usage chunk
      EXPECT_EQ(ch["choices"].size(), 1u) << ch.dump();
      const json& c = ch["choices"][0];
      PerChoice& p = out[c["index"].get<int>()];
      ++p.chunks;
      if (chat && c["delta"].contains("role")) {
        EXPECT_EQ(p.chunks, 1) << "the role chunk opens its choice";
        ++p.role_chunks;
      }
      const std::string piece = chat ? c["delta"].value("content", "") : c["text"].get<std::string>();
      if (p.finish_chunks > 0 && !piece.empty()) p.finished_before_text = true;
      p.text += piece;
      if (!c["finish_reason"].is_null()) {
        ++p.finish_chunks;
        p.finish_reason = c["finish_reason"];
      }
    }
    return out;
  }
};

TEST_F(Choices, WholeChatCarriesEveryChoiceAndTheUsageOnce) {
  start();
  const auto prompt = chat_prompt("Once upon a time");
  auto r = client().Post("/v1/chat/completions",
                         R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 6, "n": 3,
                             "seed": 7})",
                         "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(sched_->last_choices(), 3);
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u) << r->body;
  for (size_t i = 0; i < 3; ++i) {
    const json& c = j["choices"][i];
    EXPECT_EQ(c["index"], i);
    EXPECT_EQ(c["message"]["role"], "assistant");
    EXPECT_EQ(c["message"]["content"], echo_of(prompt, 6, i)) << i;
    EXPECT_EQ(c["finish_reason"], "length");
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 18);
  EXPECT_EQ(j["usage"]["total_tokens"], prompt.size() + 18);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], prompt.size() / 2);
  // One request in the metrics, with every choice's tokens.
  const std::string t = client().Get("/metrics")->body;
  EXPECT_NE(t.find("offgraph:requests_total{model_name=\"stories\",endpoint=\"chat\",finish_reason=\"length\"} 1"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("offgraph:e2e_request_latency_seconds_count{model_name=\"stories\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("offgraph:request_generation_tokens_sum{model_name=\"stories\"} 18"), std::string::npos) << t;
}

TEST_F(Choices, WholeCompletionsWithLogprobs) {
  start();
  const std::vector<int32_t> ids = tok_->encode("Once upon a time", true, false);
  auto r = client().Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4, "n": 2, "logprobs": 1})",
                         "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], echo_of(ids, 4, i));
    EXPECT_EQ(j["choices"][i]["logprobs"]["tokens"].size(), 4u);
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
  EXPECT_EQ(j["usage"]["prompt_tokens"], ids.size());
}

TEST_F(Choices, ChatStreamInterleavesChoicesThenUsageOnce) {
  start();
  auto c = client();
  const std::string body = post_sse(c, "/v1/chat/completions",
                                       R"({"messages": [{"role": "user", "content": "Once upon a time"}],
                                           "max_tokens": 6, "n": 3, "stream": true,
                                           "stream_options": {"include_usage": true}})");
  const SseEvents e = sse_events(body);
  EXPECT_TRUE(e.done);
  const auto prompt = chat_prompt("Once upon a time");
  const auto per = split(e, true);
  ASSERT_EQ(per.size(), 3u) << body;
  for (int i = 0; i < 3; ++i) {
    const PerChoice& p = per.at(i);
    EXPECT_EQ(p.role_chunks, 1) << i;
    EXPECT_EQ(p.finish_chunks, 1) << i;
    EXPECT_EQ(p.finish_reason, "length");
    EXPECT_FALSE(p.finished_before_text);
    EXPECT_EQ(p.text, echo_of(prompt, 6, i)) << i;
  }
  // The usage chunk comes once, last, after every choice's finish.
  int usage_chunks = 0;
  for (const json& ch : e.chunks) {
    EXPECT_EQ(ch["id"], e.chunks[0]["id"]);
    if (ch["choices"].empty()) ++usage_chunks;
    else EXPECT_TRUE(ch["usage"].is_null());
  }
  EXPECT_EQ(usage_chunks, 1);
  ASSERT_FALSE(e.chunks.empty());
  const json& last = e.chunks.back();
  ASSERT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(last["usage"]["completion_tokens"], 18);
}

TEST_F(Choices, CompletionsStreamWithoutUsage) {
  start();
  auto c = client();
  const std::vector<int32_t> ids = tok_->encode("Once upon a time", true, false);
  const SseEvents e =
      sse_events(post_sse(c, "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 5, "n": 2, "stream": true})"));
  EXPECT_TRUE(e.done);
  const auto per = split(e, false);
  ASSERT_EQ(per.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(per.at(i).text, echo_of(ids, 5, i));
    EXPECT_EQ(per.at(i).finish_chunks, 1);
  }
  for (const json& ch : e.chunks) EXPECT_FALSE(ch.contains("usage"));
}

TEST_F(Choices, NBeyondTheServersLimitsIsA400) {
  start();
  model_.max_n = 2;
  auto r = client().Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "n": 3})",
                         "application/json");
  ASSERT_EQ(r->status, 400) << r->body;
  json err = json::parse(r->body)["error"];
  EXPECT_EQ(err["param"], "n");
  EXPECT_NE(err["message"].get<std::string>().find("--max-n"), std::string::npos) << r->body;
  model_.max_n = 8;
  model_.max_sequences = 2;
  r = client().Post("/v1/completions", R"({"prompt": "x", "n": 3})", "application/json");
  ASSERT_EQ(r->status, 400) << r->body;
  err = json::parse(r->body)["error"];
  EXPECT_EQ(err["param"], "n");
  EXPECT_NE(err["message"].get<std::string>().find("--parallel"), std::string::npos) << r->body;
  EXPECT_EQ(client().Post("/v1/completions", R"({"prompt": "x", "n": 2, "max_tokens": 2})", "application/json")->status,
            200);
  r = client().Post("/v1/completions", R"({"prompt": "x", "best_of": 2})", "application/json");
  ASSERT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "best_of");
}

TEST_F(Choices, DisconnectMidStreamCancelsEveryChoice) {
  start();
  auto c = client();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 200, "n": 3,
                 "stream": true})";
  req.set_header("Content-Type", "application/json");
  int chunks = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  c.send(req);  // the receiver's false closes the connection mid-stream
  for (int i = 0; i < 500 && sched_->cancelled() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(sched_->cancelled(), 3u);  // the echo scheduler counts choices
  EXPECT_TRUE(server_->wait_idle(5));
  EXPECT_LT(sched_->snapshot().generated_tokens, 600);
}

// Each choice's reply is parsed on its own: every choice carries its call.
const char* kTemplate =
    "{%- for m in messages %}{%- if m.role == 'user' %}{{ m.content }}{%- endif %}{%- endfor %}"
    "{#- the markers of replies: <tool_call> </tool_call> <think> </think> #}";
const std::string kCall = R"(<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>)";

class ChoicesTools : public ServerFixture {
 protected:
  void start_jinja() {
    start();
    jinja_ = std::make_unique<JinjaChatTemplate>(kTemplate, jinja_options_of(*tok_), "test");
    model_.tmpl = jinja_.get();
    model_.reply_format = detect_reply_format(jinja_->source());
    model_.max_session_tokens = 1024;
  }
  json request(bool stream) {
    json j = {{"messages", {{{"role", "user"}, {"content", "Let me check." + kCall + "END"}}}},
              {"stop", {"END"}},
              {"max_tokens", 200},
              {"n", 3},
              {"stream", stream}};
    j["tools"] = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}};
    return j;
  }
  std::unique_ptr<JinjaChatTemplate> jinja_;
};

TEST_F(ChoicesTools, EachChoiceHasItsOwnParser) {
  start_jinja();
  auto c = client();
  auto r = c.Post("/v1/chat/completions", request(false).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const json& ch = j["choices"][i];
    EXPECT_EQ(ch["index"], i);
    EXPECT_EQ(ch["finish_reason"], "tool_calls") << r->body;
    ASSERT_EQ(ch["message"]["tool_calls"].size(), 1u) << r->body;
    EXPECT_EQ(ch["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  }
  // The choices start their echo a token apart (choice 0 at the BOS, which
  // makes no text): different content, the same call.
  EXPECT_NE(j["choices"][0]["message"]["content"], j["choices"][2]["message"]["content"]);

  const SseEvents e = sse_events(post_sse(c, "/v1/chat/completions", request(true).dump()));
  EXPECT_TRUE(e.done);
  std::map<int, std::string> names;
  std::map<int, std::string> finish;
  for (const json& ch : e.chunks) {
    if (ch["choices"].empty()) continue;
    const json& c0 = ch["choices"][0];
    const int idx = c0["index"];
    if (c0["delta"].contains("tool_calls"))
      names[idx] += c0["delta"]["tool_calls"][0]["function"].value("name", "");
    if (!c0["finish_reason"].is_null()) finish[idx] = c0["finish_reason"];
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(names[i], "get_weather") << i;
    EXPECT_EQ(finish[i], "tool_calls") << i;
  }
}

}  // namespace
}  // namespace og::server::test
