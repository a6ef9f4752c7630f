// The routes around generation (GET /v1/models/{id}, the routes without
// /v1), CORS, X-Request-Id and the access log, on a real HttpServer over the
// echo scheduler.
#include <nlohmann/json.hpp>

#include "server_fixture.h"

namespace og::server::test {
namespace {

using nlohmann::json;

const std::string kChat = R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 6})";

class Routes : public ServerFixture {
 protected:
  // Captures the server's log lines.
  HttpOptions logging(bool json_format) {
    HttpOptions o;
    o.log_json = json_format;
    o.log = [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(l);
    };
    return o;
  }
  // The log lines once there are at least n (the line follows the response).
  std::vector<std::string> lines(size_t n) {
    for (int i = 0; i < 2000; ++i) {  // up to 10 s: sanitizer builds are slow
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (lines_.size() >= n) return lines_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST_F(Routes, ModelById) {
  start();
  auto c = client();
  for (const char* path : {"/v1/models/stories", "/models/stories", "/v1/models/%73tories"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    ASSERT_EQ(r->status, 200) << path << " " << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["id"], "stories");
    EXPECT_EQ(j["object"], "model");
    EXPECT_EQ(j["created"], 1700000000);
    EXPECT_EQ(j["owned_by"], "offgraph");
    EXPECT_EQ(j["max_model_len"], 256);
  }
  for (const char* path : {"/v1/models/gpt-4", "/models/org/stories"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << path;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["error"]["code"], "model_not_found") << r->body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << r->body;
    EXPECT_EQ(j["error"]["param"], "model") << r->body;
  }
  EXPECT_EQ(c.Post("/v1/models/stories", "{}", "application/json")->status, 405);
  EXPECT_EQ(c.Get("/v1/models/")->status, 404);
  EXPECT_EQ(c.Get("/models/")->status, 404);
}

TEST_F(Routes, WithoutTheV1Prefix) {
  start();
  auto c = client();
  auto r = c.Get("/models");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(json::parse(r->body)["data"][0]["id"], "stories");
  r = c.Post("/chat/completions", kChat, "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  EXPECT_EQ(json::parse(r->body)["object"], "chat.completion");
  r = c.Post("/completions", R"({"prompt": "Once", "max_tokens": 2})", "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  EXPECT_EQ(json::parse(r->body)["object"], "text_completion");
  r = c.Get("/chat/completions");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  EXPECT_EQ(c.Get("/v1/tokenize")->status, 404);
  EXPECT_EQ(c.Get("/v2/models")->status, 404);
  EXPECT_EQ(c.Get("/v1/v1/models")->status, 404);
}

TEST_F(Routes, CorsOffSendsNoCorsHeaders) {
  start();
  auto c = client();
  const httplib::Headers origin{{"Origin", "https://app.example"}, {"Access-Control-Request-Method", "POST"}};
  auto r = c.Get("/v1/models", origin);
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  r = c.Options("/v1/chat/completions", origin);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Methods"));
}

TEST_F(Routes, CorsForListedOrigins) {
  HttpOptions o;
  o.cors_origins = {"https://app.example", "http://localhost:3000"};
  o.api_keys = {"sekret"};
  start(o);
  auto c = client();
  const httplib::Headers good{{"Origin", "https://app.example"}, {"Access-Control-Request-Method", "POST"},
                              {"Access-Control-Request-Headers", "authorization,content-type"}};
  const httplib::Headers bad{{"Origin", "https://evil.example"}, {"Access-Control-Request-Method", "POST"}};

  // The preflight needs no key.
  auto r = c.Options("/v1/chat/completions", good);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(r->get_header_value("Vary"), "Origin");
  EXPECT_NE(r->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Headers"), "Authorization, Content-Type, X-Request-Id");
  EXPECT_FALSE(r->get_header_value("Access-Control-Max-Age").empty());
  EXPECT_TRUE(r->body.empty());
  r = c.Options("/models", good);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_NE(r->get_header_value("Access-Control-Allow-Methods").find("GET"), std::string::npos);
  EXPECT_EQ(c.Options("/nowhere", good)->status, 404);

  // Another origin: no CORS headers, and OPTIONS is not a method of the route.
  r = c.Options("/v1/chat/completions", bad);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));

  // The real requests: the allowed origin's answers (errors too) carry the headers.
  httplib::Headers authed = good;
  authed.emplace("Authorization", "Bearer sekret");
  r = c.Post("/v1/chat/completions", authed, kChat, "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_EQ(r->get_header_value("Vary"), "Origin");
  r = c.Get("/v1/models", good);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  r = c.Get("/health", bad);
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  EXPECT_FALSE(r->has_header("Vary"));
}

TEST_F(Routes, CorsAnyOrigin) {
  HttpOptions o;
  o.cors_origins = {"*"};
  start(o);
  auto c = client();
  auto r = c.Get("/v1/models", httplib::Headers{{"Origin", "https://whoever.example"}});
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "*");
  r = c.Options("/tokenize", httplib::Headers{{"Origin", "null"}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  // No Origin: not a browser's cross-origin request, no CORS headers.
  r = c.Get("/v1/models");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
}

TEST_F(Routes, RequestIds) {
  start();
  auto c = client();
  auto r = c.Get("/v1/models", httplib::Headers{{"X-Request-Id", "trace-42/abc"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("X-Request-Id"), "trace-42/abc");
  r = c.Post("/v1/chat/completions", httplib::Headers{{"X-Request-Id", "gen-1"}}, kChat, "application/json");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(r->get_header_value("X-Request-Id"), "gen-1");
  // Generated when absent, unusable or too long; on errors too; different each time.
  std::set<std::string> ids;
  for (const std::string& sent : {std::string(), std::string(300, 'x'), std::string("bad\x01id")}) {
    httplib::Headers h;
    if (!sent.empty()) h.emplace("X-Request-Id", sent);
    r = c.Get("/nowhere", h);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, sent.find('\x01') == std::string::npos ? 404 : 400);  // a control byte: a bad head
    const std::string id = r->get_header_value("X-Request-Id");
    EXPECT_EQ(id.rfind("req-", 0), 0u) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 3u);
  r = c.Get("/health");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->get_header_value("X-Request-Id").empty());
}

TEST_F(Routes, AccessLogJson) {
  start(logging(true));
  auto c = client();
  auto r = c.Post("/v1/chat/completions", httplib::Headers{{"X-Request-Id", "whole-1"}}, kChat, "application/json");
  ASSERT_TRUE(r && r->status == 200);
  std::vector<std::string> got = lines(1);
  ASSERT_EQ(got.size(), 1u);
  json j = json::parse(got[0]);
  EXPECT_EQ(j["method"], "POST");
  EXPECT_EQ(j["path"], "/v1/chat/completions");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["request_id"], "whole-1");
  EXPECT_GT(j["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(j["generated_tokens"], 6);
  EXPECT_TRUE(j.contains("cached_tokens"));
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_GE(j["ttft_ms"].get<double>(), 0);
  EXPECT_GE(j["total_ms"].get<double>(), j["ttft_ms"].get<double>());
  EXPECT_TRUE(j["time"].is_string());

  // Probes are left out; a stream is logged once it ends; errors carry their message.
  ASSERT_EQ(c.Get("/health")->status, 200);
  ASSERT_EQ(c.Get("/metrics")->status, 200);
  r = c.Post("/completions", R"({"prompt": "Once upon", "max_tokens": 3, "stream": true})", "application/json");
  ASSERT_TRUE(r && r->status == 200);
  // The stream's line is written when its producer finishes, which can be after the client
  // has read the last chunk: wait for it so that the lines below come in request order.
  ASSERT_EQ(lines(2).size(), 2u);
  r = c.Post("/v1/chat/completions", R"({"messages": 5})", "application/json");
  ASSERT_TRUE(r && r->status == 400);
  const std::string error_id = r->get_header_value("X-Request-Id");
  got = lines(3);
  ASSERT_EQ(got.size(), 3u);
  j = json::parse(got[1]);
  EXPECT_EQ(j["path"], "/completions");
  EXPECT_EQ(j["generated_tokens"], 3);
  EXPECT_EQ(j["finish_reason"], "length");
  j = json::parse(got[2]);
  EXPECT_EQ(j["status"], 400);
  EXPECT_EQ(j["request_id"], error_id);
  EXPECT_NE(j["error"].get<std::string>().find("messages"), std::string::npos) << got[2];
  EXPECT_FALSE(j.contains("generated_tokens"));
}

TEST_F(Routes, AccessLogText) {
  HttpOptions o = logging(false);
  o.log_probes = true;
  start(o);
  auto c = client();
  ASSERT_EQ(c.Post("/v1/chat/completions", httplib::Headers{{"X-Request-Id", "t-1"}}, kChat, "application/json")->status,
            200);
  // The line follows the response: wait for it, or /health's can come first
  // (it did in a loaded sanitizer run).
  ASSERT_EQ(lines(1).size(), 1u);
  ASSERT_EQ(c.Get("/health")->status, 200);
  ASSERT_EQ(c.Get("/v1/models/nope")->status, 404);
  const std::vector<std::string> got = lines(3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_NE(got[0].find(" POST /v1/chat/completions 200 "), std::string::npos) << got[0];
  EXPECT_NE(got[0].find(" generated=6"), std::string::npos) << got[0];
  EXPECT_NE(got[0].find(" finish=length"), std::string::npos) << got[0];
  EXPECT_NE(got[0].find(" ttft="), std::string::npos) << got[0];
  EXPECT_NE(got[0].find(" id=t-1"), std::string::npos) << got[0];
  EXPECT_NE(got[1].find(" GET /health 200 "), std::string::npos) << got[1];
  EXPECT_NE(got[2].find(" GET /v1/models/nope 404 "), std::string::npos) << got[2];
  EXPECT_NE(got[2].find("error: The model 'nope' does not exist"), std::string::npos) << got[2];
}

}  // namespace
}  // namespace og::server::test
