// The HTTP server on a loopback port over a scripted scheduler: routes and
// status codes, OpenAI shapes whole and streamed (SSE framing), keys, body
// limits, the in-flight bound, a client leaving mid-stream cancelling its
// request, slow clients, draining, tokenize/detokenize and /metrics. /health
// is checked after every bad request.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "server_fixture.h"

namespace og::server::test {
namespace {

using nlohmann::json;

const std::string kChat = R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 6})";

// The "data:" payloads of an SSE body; fails the test on a malformed frame.
std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "unterminated event at " << at << " in " << body;
    if (end == std::string::npos) break;
    const std::string ev = body.substr(at, end - at);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    EXPECT_EQ(ev.find('\n'), std::string::npos) << ev;
    out.push_back(ev.substr(6));
    at = end + 2;
  }
  return out;
}

// Streams a POST and collects the body (httplib removes the chunked framing).
struct Streamed {
  int status = 0;
  std::string content_type, body;
};
Streamed post_stream(httplib::Client& c, const std::string& path, const std::string& body) {
  Streamed s;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    s.body.append(d, n);
    return true;
  };
  auto res = c.send(req);
  if (!res) s.body = "client error " + httplib::to_string(res.error());
  if (res) {
    s.status = res->status;
    s.content_type = res->get_header_value("Content-Type");
  }
  return s;
}

// A raw loopback connection for what no HTTP client sends.
int connect_raw(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

class Http : public ServerFixture {
 protected:
  void expect_healthy() {
    auto c = client();
    auto r = c.Get("/health");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "{\"status\":\"ok\"}");
  }
  // The reply the echo scheduler gives: the prompt's first n tokens as text.
  std::string echo_of(const std::vector<int32_t>& prompt, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += tok_->decode(std::vector<int32_t>{prompt[i % prompt.size()]});
    return s;
  }
  std::vector<int32_t> chat_prompt(const std::string& user) {
    return encode_chat(*tok_, tmpl_->render_segments(std::vector<ChatMessage>{{"user", user}}, true), true);
  }
  void expect_error(const httplib::Result& r, int status, const std::string& words) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    const json j = json::parse(r->body);
    EXPECT_TRUE(j["error"].contains("message") && j["error"].contains("type") && j["error"].contains("code"))
        << r->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(words), std::string::npos) << r->body;
    expect_healthy();
  }
};

TEST_F(Http, HealthIs503WhileLoading) {
  start({}, /*load=*/false);
  auto c = client();
  EXPECT_EQ(c.Get("/health")->status, 503);
  EXPECT_EQ(c.Get("/ready")->status, 503);
  EXPECT_EQ(c.Get("/v1/models")->status, 503);
  EXPECT_EQ(c.Post("/v1/chat/completions", kChat, "application/json")->status, 503);
  EXPECT_EQ(c.Get("/metrics")->status, 200);
  server_->set_model(model_, *sched_);
  expect_healthy();
  EXPECT_EQ(c.Get("/ready")->status, 200);
}

TEST_F(Http, Models) {
  start();
  auto r = client().Get("/v1/models");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const json j = json::parse(r->body);
  EXPECT_EQ(j["data"][0]["id"], "stories");
  EXPECT_EQ(j["data"][0]["max_model_len"], 256);
}

TEST_F(Http, ChatWhole) {
  start();
  auto r = client().Post("/v1/chat/completions", kChat, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  const json j = json::parse(r->body);
  const auto prompt = chat_prompt("Once upon a time");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "stories");
  EXPECT_EQ(j["choices"][0]["message"]["content"], echo_of(prompt, 6));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], prompt.size() / 2);
  EXPECT_EQ(sched_->last_options().prompt, prompt);
}

TEST_F(Http, SettingsReachTheScheduler) {
  start();
  auto r = client().Post("/v1/chat/completions", R"({"model": "stories", "messages": [{"role": "user", "content": "x"}],
      "max_tokens": 3, "temperature": 0.7, "top_k": 5, "top_p": 0.5, "min_p": 0.1, "seed": 42,
      "repetition_penalty": 1.2, "presence_penalty": 0.3, "frequency_penalty": -0.4, "stop": ["zz"],
      "logprobs": true, "top_logprobs": 2})",
                         "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const RequestOptions o = sched_->last_options();
  EXPECT_EQ(o.max_new_tokens, 3);
  EXPECT_DOUBLE_EQ(o.sampler.temperature, 0.7);
  EXPECT_EQ(o.sampler.top_k, 5);
  EXPECT_DOUBLE_EQ(o.sampler.top_p, 0.5);
  EXPECT_DOUBLE_EQ(o.sampler.min_p, 0.1);
  EXPECT_EQ(o.sampler.seed, 42u);
  EXPECT_DOUBLE_EQ(o.sampler.repeat_penalty, 1.2);
  EXPECT_DOUBLE_EQ(o.sampler.presence_penalty, 0.3);
  EXPECT_DOUBLE_EQ(o.sampler.frequency_penalty, -0.4);
  EXPECT_EQ(o.stop_strings, std::vector<std::string>{"zz"});
  EXPECT_EQ(o.stop_ids, tok_->special().stop_ids);
  EXPECT_TRUE(o.logprobs);
  EXPECT_EQ(o.top_logprobs, 2);
  const json j = json::parse(r->body);
  ASSERT_EQ(j["choices"][0]["logprobs"]["content"].size(), 3u);
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
  // Without max_tokens: the server's default for chat, the remaining session for completions' 16 at most.
  ASSERT_EQ(client().Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}]})",
                          "application/json")->status, 200);
  EXPECT_EQ(sched_->last_options().max_new_tokens, 8);
  ASSERT_EQ(client().Post("/v1/completions", R"({"prompt": "x"})", "application/json")->status, 200);
  EXPECT_EQ(sched_->last_options().max_new_tokens, 16);
}

TEST_F(Http, ChatStreamFraming) {
  start();
  auto c = client();
  const Streamed s = post_stream(c, "/v1/chat/completions",
                                 R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 6,
                                     "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(s.content_type, "text/event-stream");
  const auto events = sse_payloads(s.body);
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json first = json::parse(events[0]);
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  std::string id = first["id"];
  for (size_t i = 1; i + 3 < events.size(); ++i) {
    const json ch = json::parse(events[i]);
    EXPECT_EQ(ch["id"], id);
    EXPECT_EQ(ch["object"], "chat.completion.chunk");
    EXPECT_TRUE(ch["usage"].is_null());
    EXPECT_TRUE(ch["choices"][0]["finish_reason"].is_null());
    text += ch["choices"][0]["delta"]["content"].get<std::string>();
  }
  const json fin = json::parse(events[events.size() - 3]);
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
  const json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 6);
  EXPECT_EQ(text, echo_of(chat_prompt("Once upon a time"), 6));
}

TEST_F(Http, CompletionsWholeAndStreamed) {
  start();
  auto c = client();
  const std::vector<int32_t> ids = tok_->encode("Once upon a time", true, false);
  json ids_json = ids;
  auto r = c.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 5, "logprobs": 1})",
                  "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], echo_of(ids, 5));
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"].size(), 5u);
  r = c.Post("/v1/completions", json({{"prompt", ids_json}, {"max_tokens", 5}}).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["choices"][0]["text"], echo_of(ids, 5));
  const Streamed s = post_stream(c, "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 5, "stream": true})");
  const auto events = sse_payloads(s.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 2 < events.size(); ++i) text += json::parse(events[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, echo_of(ids, 5));
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
}

TEST_F(Http, StopStringEndsTheReply) {
  start();
  const auto prompt = chat_prompt("Once upon a time");
  const std::string full = echo_of(prompt, 12);
  const std::string stop = full.substr(full.size() / 2, 3);
  auto r = client().Post("/v1/chat/completions",
                         json({{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                               {"max_tokens", 12},
                               {"stop", stop}})
                             .dump(),
                         "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["message"]["content"], full.substr(0, full.find(stop)));
}

TEST_F(Http, BadRequestsKeepTheServerUp) {
  HttpOptions o;
  o.max_body_bytes = 4096;
  start(o);
  auto c = client();
  expect_error(c.Post("/v1/chat/completions", "{nope", "application/json"), 400, "not valid JSON");
  expect_error(c.Post("/v1/chat/completions", "", "application/json"), 400, "empty");
  expect_error(c.Post("/v1/chat/completions", R"({"messages": []})", "application/json"), 400, "empty");
  expect_error(c.Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": 1}]})", "application/json"),
               400, "must be");
  expect_error(c.Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "functions": []})",
                      "application/json"),
               400, "'functions' is not supported");
  expect_error(c.Post("/v1/chat/completions",
                      R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"99999": 2}})",
                      "application/json"),
               400, "'logit_bias': token id 99999 is out of range [0, ");
  expect_error(c.Post("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}",
                      "application/json"),
               400, "UTF-8");
  expect_error(c.Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "n": 9})",
                      "application/json"),
               400, "--max-n");
  expect_error(c.Post("/v1/completions", R"({"prompt": "x", "best_of": 3})", "application/json"), 400,
               "'best_of' must be 1");
  const std::string long_text(2000, 'a');
  expect_error(c.Post("/v1/completions", json({{"prompt", long_text}}).dump(), "application/json"), 400,
               "tokens does not fit: a session of 256 positions holds the prompt and at least one generated token");
  expect_error(c.Post("/v1/completions", R"({"prompt": "x", "max_tokens": 1000})", "application/json"), 400,
               "exceeds this server's session limit");
  expect_error(c.Post("/v1/completions", R"({"prompt": [1, 99999]})", "application/json"), 400,
               "'prompt[1]': token id 99999 is out of range [0, ");
  expect_error(c.Post("/v1/completions", R"({"prompt": [1, -3]})", "application/json"), 400,
               "'prompt[1]': token id -3 is out of range [0, ");
  expect_error(c.Post("/v1/completions", json({{"prompt", std::string(5000, 'a')}}).dump(), "application/json"), 413,
               "--max-body-bytes");
  expect_error(c.Get("/v1/nothing"), 404, "no route");
  expect_error(c.Get("/v1/chat/completions"), 405, "not allowed");
  expect_error(c.Post("/health", "{}", "application/json"), 405, "not allowed");
  EXPECT_EQ(c.Get("/v1/chat/completions")->get_header_value("Allow"), "POST");
  // The engine and its counters saw none of them.
  EXPECT_EQ(sched_->finished(), 0u);
}

TEST_F(Http, ChunkedBodyOverTheLimitIs413) {
  HttpOptions o;
  o.max_body_bytes = 1000;
  start(o);
  const int fd = connect_raw(port_);
  std::string req = "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) req += "200\r\n" + std::string(512, ' ') + "\r\n";
  req += "0\r\n\r\n";
  send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  const std::string resp = read_all(fd);
  close(fd);
  EXPECT_EQ(resp.rfind("HTTP/1.1 413", 0), 0u) << resp.substr(0, 200);
  expect_healthy();
}

TEST_F(Http, DeclaredLengthsAreCheckedBeforeTheBody) {
  HttpOptions o;
  o.max_body_bytes = 1000;
  start(o);
  const struct {
    const char* length;
    const char* status;
  } cases[] = {{"99999999999999999999999", "HTTP/1.1 413"}, {"1001", "HTTP/1.1 413"}, {"12abc", "HTTP/1.1 400"}};
  for (const auto& c : cases) {
    const int fd = connect_raw(port_);
    const std::string req = std::string("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: ") + c.length +
                            "\r\nConnection: close\r\n\r\n";
    send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    char buf[16] = {};
    const ssize_t n = recv(fd, buf, 12, MSG_WAITALL);
    close(fd);
    EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), c.status) << c.length;
    expect_healthy();
  }
}

TEST_F(Http, ApiKeys) {
  HttpOptions o;
  o.api_keys = {"sekret", "second"};
  start(o);
  auto c = client();
  expect_error(c.Post("/v1/chat/completions", kChat, "application/json"), 401, "API key is required");
  expect_error(c.Get("/v1/models"), 401, "required");
  expect_error(c.Post("/tokenize", R"({"prompt": "x"})", "application/json"), 401, "required");
  c.set_bearer_token_auth("wrong");
  expect_error(c.Post("/v1/chat/completions", kChat, "application/json"), 401, "not valid");
  c.set_bearer_token_auth("sekret");
  EXPECT_EQ(c.Post("/v1/chat/completions", kChat, "application/json")->status, 200);
  c.set_bearer_token_auth("second");
  EXPECT_EQ(c.Get("/v1/models")->status, 200);
  auto open = client();
  EXPECT_EQ(open.Get("/health")->status, 200);
  EXPECT_EQ(open.Get("/metrics")->status, 200);
}

TEST_F(Http, InFlightBoundGives429) {
  HttpOptions o;
  o.max_in_flight = 2;
  start(o);
  sched_->hold();
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int i = 0; i < 2; ++i)
    ts.emplace_back([&] {
      auto c = client();
      if (c.Post("/v1/chat/completions", kChat, "application/json")->status == 200) ++ok;
    });
  // Both held requests must hold their slots (be in the scheduler), not only count in
  // flight: a request still being parsed counts in in_flight() before it takes a slot,
  // and the third request could then take that slot and wait behind the hold.
  auto queued = [&] { return sched_->snapshot().waiting + sched_->snapshot().running; };
  for (int i = 0; i < 500 && queued() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(queued(), 2);
  ASSERT_EQ(server_->in_flight(), 2);
  auto c = client();
  auto r = c.Post("/v1/chat/completions", kChat, "application/json");
  sched_->release();
  expect_error(r, 429, "limit");
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 2);
  EXPECT_TRUE(server_->wait_idle(5));
}

TEST_F(Http, DisconnectMidStreamCancels) {
  start();
  auto c = client();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 200, "stream": true})";
  req.set_header("Content-Type", "application/json");
  int chunks = 0;
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };
  c.send(req);  // the receiver's false closes the connection mid-stream
  for (int i = 0; i < 500 && sched_->cancelled() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(sched_->cancelled(), 1u);
  EXPECT_TRUE(server_->wait_idle(5));
  EXPECT_LT(sched_->snapshot().generated_tokens, 200);
  expect_healthy();
}

// A whole (non-streamed) answer: a client that closes its connection while
// the request waits has it cancelled; one that stays gets its answer however
// long the wait (the check never mistakes an open, quiet client for a gone one).
TEST_F(Http, DisconnectWhileWaitingForAWholeAnswerCancels) {
  start();
  sched_->hold();
  const std::string body = R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 50})";
  const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  const int fd = connect_raw(port_);
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  for (int i = 0; i < 500 && sched_->snapshot().waiting == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(sched_->snapshot().waiting, 1);
  close(fd);
  for (int i = 0; i < 500 && sched_->cancelled() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(sched_->cancelled(), 1u);
  EXPECT_TRUE(server_->wait_idle(5));

  sched_->hold();
  std::thread late([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    sched_->release();
  });
  auto r = client().Post("/v1/chat/completions", body, "application/json");
  late.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(sched_->cancelled(), 1u);
  expect_healthy();
}

TEST_F(Http, SlowClientTimesOut) {
  HttpOptions o;
  o.timeout_s = 1;
  start(o);
  const int fd = connect_raw(port_);
  const std::string part = "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"prompt\":";
  send(fd, part.data(), part.size(), MSG_NOSIGNAL);
  expect_healthy();  // other clients are served meanwhile
  const std::string resp = read_all(fd);  // the server gives up on the stalled body: 408, then closes
  close(fd);
  EXPECT_EQ(resp.rfind("HTTP/1.1 408", 0), 0u) << resp.substr(0, 200);
  expect_healthy();
}

TEST_F(Http, ConcurrentStreams) {
  start();
  constexpr int kClients = 16;
  std::vector<std::string> texts(kClients);
  std::vector<std::thread> ts;
  for (int i = 0; i < kClients; ++i)
    ts.emplace_back([&, i] {
      auto c = client();
      const Streamed s = post_stream(
          c, "/v1/chat/completions",
          json({{"messages", {{{"role", "user"}, {"content", "story number " + std::to_string(i)}}}},
                {"max_tokens", 10},
                {"stream", true}})
              .dump());
      EXPECT_EQ(s.status, 200) << "client " << i << ": " << s.body;
      const auto ev = sse_payloads(s.body);
      for (size_t k = 1; k + 2 < ev.size(); ++k) texts[i] += json::parse(ev[k])["choices"][0]["delta"]["content"];
    });
  for (auto& t : ts) t.join();
  for (int i = 0; i < kClients; ++i)
    EXPECT_EQ(texts[i], echo_of(chat_prompt("story number " + std::to_string(i)), 10)) << i;
  EXPECT_TRUE(server_->wait_idle(5));
}

TEST_F(Http, DrainRefusesNewWork) {
  start();
  server_->drain();
  auto c = client();
  EXPECT_EQ(c.Get("/health")->status, 503);
  EXPECT_EQ(c.Get("/ready")->status, 503);
  auto r = c.Post("/v1/chat/completions", kChat, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_TRUE(server_->wait_idle(1));
}

TEST_F(Http, TokenizeDetokenize) {
  start();
  auto c = client();
  auto r = c.Post("/tokenize", R"({"prompt": "Once upon a time"})", "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  const std::vector<int32_t> ids = j["tokens"];
  EXPECT_EQ(ids, tok_->encode("Once upon a time", true, false));
  EXPECT_EQ(j["count"], ids.size());
  r = c.Post("/tokenize", R"({"messages": [{"role": "user", "content": "hi"}]})", "application/json");
  EXPECT_EQ(json::parse(r->body)["tokens"].get<std::vector<int32_t>>(), chat_prompt("hi"));
  r = c.Post("/detokenize", json({{"tokens", ids}}).dump(), "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["prompt"], tok_->decode(ids));
  expect_error(c.Post("/detokenize", R"({"tokens": [100000]})", "application/json"), 400,
               "'tokens[0]': token id 100000 is out of range [0, ");
  expect_error(c.Post("/tokenize", R"({"prompt": 3})", "application/json"), 400, "must be a string");
}

TEST_F(Http, MetricsAfterRequests) {
  start();
  auto c = client();
  ASSERT_EQ(c.Post("/v1/chat/completions", kChat, "application/json")->status, 200);
  ASSERT_EQ(c.Post("/v1/chat/completions", "{", "application/json")->status, 400);
  auto r = c.Get("/metrics");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& t = r->body;
  EXPECT_NE(t.find("vllm:num_requests_waiting{model_name=\"stories\"} 0"), std::string::npos) << t;
  EXPECT_NE(t.find("vllm:num_requests_running{model_name=\"stories\"}"), std::string::npos);
  EXPECT_NE(t.find("vllm:kv_cache_usage_perc{model_name=\"stories\"}"), std::string::npos);
  EXPECT_NE(t.find("offgraph:requests_total{model_name=\"stories\",endpoint=\"chat\",finish_reason=\"length\"} 1"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("offgraph:http_responses_total{model_name=\"stories\",code=\"400\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("offgraph:inter_token_latency_seconds_count{model_name=\"stories\"} 5"), std::string::npos) << t;
  EXPECT_NE(t.find("offgraph:e2e_request_latency_seconds_count{model_name=\"stories\"} 1"), std::string::npos) << t;
}

// An unknown model is a 404 in OpenAI's shape on every route that takes
// `model` (openai-node then raises NotFoundError, as against OpenAI).
TEST_F(Http, UnknownModelIs404OnEveryRoute) {
  start();
  auto c = client();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/chat/completions", R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})"},
      {"/v1/completions", R"({"model": "gpt-4", "prompt": "x", "max_tokens": 1})"},
      {"/tokenize", R"({"model": "gpt-4", "prompt": "x"})"},
      {"/detokenize", R"({"model": "gpt-4", "tokens": [1]})"},
      {"/apply-template", R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})"},
  };
  for (const auto& [path, body] : cases) {
    SCOPED_TRACE(path);
    auto r = c.Post(path, body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << r->body;
    const json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["type"], "invalid_request_error") << r->body;
    EXPECT_EQ(e["code"], "model_not_found") << r->body;
    EXPECT_EQ(e["param"], "model") << r->body;
    EXPECT_NE(e["message"].get<std::string>().find("The model 'gpt-4' does not exist or you do not have access to it"),
              std::string::npos)
        << r->body;
  }
  expect_healthy();
}

}  // namespace
}  // namespace og::server::test
