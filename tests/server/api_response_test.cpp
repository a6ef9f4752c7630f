// Response shapes: whole responses (one choice or several), stream chunks
// (with their choice's index), usage with cached tokens,
// logprobs in both endpoints' shapes, errors, the model list, SSE framing,
// and invalid UTF-8 written as U+FFFD instead of throwing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_response.h"
#include "server/auth.h"

namespace og::server {
namespace {

using nlohmann::json;

ResponseMeta meta(Endpoint ep) { return {ep, "chatcmpl-abc", 1700000000, "stories"}; }

TEST(Response, ChatWhole) {
  CompletionResult r;
  r.text = "Hello";
  r.finish_reason = "length";
  r.usage = {12, 5, 8};
  const json j = json::parse(completion_body(meta(Endpoint::kChat), r));
  EXPECT_EQ(j["id"], "chatcmpl-abc");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "stories");
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens"], 12);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["total_tokens"], 17);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
}

TEST(Response, SeveralChoicesShareOneUsage) {
  CompletionResult a, b;
  a.text = "one";
  a.finish_reason = "stop";
  b.text = "two";
  b.finish_reason = "length";
  b.usage = {99, 99, 99};  // a choice's own usage is not read
  json j = json::parse(completion_body(meta(Endpoint::kChat), {a, b}, Usage{12, 9, 4}));
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][1]["message"]["content"], "two");
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["total_tokens"], 21);
  j = json::parse(completion_body(meta(Endpoint::kCompletion), {a, b}, Usage{12, 9, 4}));
  EXPECT_EQ(j["choices"][0]["text"], "one");
  EXPECT_EQ(j["choices"][1]["index"], 1);
  // Stream chunks name their choice.
  const ResponseMeta m = meta(Endpoint::kChat);
  EXPECT_EQ(json::parse(chunk_role(m, false, 2))["choices"][0]["index"], 2);
  EXPECT_EQ(json::parse(chunk_text(m, "x", nullptr, false, 0, 3))["choices"][0]["index"], 3);
  EXPECT_EQ(json::parse(chunk_reasoning(m, "x", nullptr, false, 4))["choices"][0]["index"], 4);
  EXPECT_EQ(json::parse(chunk_tool_call(m, ToolCallDelta{}, nullptr, false, 5))["choices"][0]["index"], 5);
  EXPECT_EQ(json::parse(chunk_finish(m, "stop", false, 6))["choices"][0]["index"], 6);
}

TEST(Response, CompletionWholeWithLogprobs) {
  CompletionResult r;
  r.text = "ab";
  r.finish_reason = "stop";
  r.with_logprobs = true;
  r.logprobs = {{"a", -0.1, {{"a", -0.1}, {"b", -2.0}}}, {"b", -0.3, {}}};
  const json j = json::parse(completion_body(meta(Endpoint::kCompletion), r));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "ab");
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"a", "b"}));
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][1].get<double>(), -0.3);
  EXPECT_DOUBLE_EQ(lp["top_logprobs"][0]["b"].get<double>(), -2.0);
  EXPECT_EQ(lp["text_offset"], json({0, 1}));
}

TEST(Response, ChatLogprobsShape) {
  const json lp = logprobs_json(Endpoint::kChat, {{"\xc3\xa9", -0.5, {{"x", -1}}}});
  ASSERT_EQ(lp["content"].size(), 1u);
  EXPECT_EQ(lp["content"][0]["token"], "\xc3\xa9");
  EXPECT_EQ(lp["content"][0]["bytes"], json({0xc3, 0xa9}));
  EXPECT_EQ(lp["content"][0]["top_logprobs"][0]["token"], "x");
}

TEST(Response, ChatStreamChunks) {
  const ResponseMeta m = meta(Endpoint::kChat);
  json role = json::parse(chunk_role(m, false));
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  EXPECT_FALSE(role.contains("usage"));
  json text = json::parse(chunk_text(m, "Hi", nullptr, true));
  EXPECT_EQ(text["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(text["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(text.contains("usage") && text["usage"].is_null());
  json fin = json::parse(chunk_finish(m, "stop", false));
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(fin["choices"][0]["delta"].empty());
  json usage = json::parse(chunk_usage(m, {3, 4, 1}));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 7);
}

TEST(Response, CompletionStreamChunks) {
  const ResponseMeta m = meta(Endpoint::kCompletion);
  json text = json::parse(chunk_text(m, "Hi", nullptr, false));
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "Hi");
  json fin = json::parse(chunk_finish(m, "length", false));
  EXPECT_EQ(fin["choices"][0]["text"], "");
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "length");
}

TEST(Response, InvalidUtf8BecomesReplacementCharacter) {
  CompletionResult r;
  r.text = "a\xff" "b";
  r.finish_reason = "stop";
  const std::string body = completion_body(meta(Endpoint::kChat), r);
  const json j = json::parse(body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "a\xef\xbf\xbd" "b");
  EXPECT_NO_THROW({ const json parsed = json::parse(error_body(400, std::string("bad \xc3"))); (void)parsed; });
}

TEST(Response, Errors) {
  json j = json::parse(error_body(ApiError(400, "invalid_request_error", "model_not_found", "no such model", "model")));
  EXPECT_EQ(j["error"]["message"], "no such model");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  EXPECT_EQ(j["error"]["param"], "model");
  j = json::parse(error_body(401, "key"));
  EXPECT_EQ(j["error"]["type"], "authentication_error");
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(json::parse(error_body(404, "x"))["error"]["type"], "not_found_error");
  EXPECT_EQ(json::parse(error_body(503, "x"))["error"]["type"], "server_error");
  EXPECT_EQ(json::parse(error_body(429, "x"))["error"]["type"], "rate_limit_error");
}

TEST(Response, Models) {
  const json j = json::parse(models_body("stories", 5, 256));
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "stories");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["max_model_len"], 256);
}

TEST(Response, Ids) {
  const std::string a = new_response_id(Endpoint::kChat), b = new_response_id(Endpoint::kChat);
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 24u);
  EXPECT_NE(a, b);
  EXPECT_EQ(new_response_id(Endpoint::kCompletion).rfind("cmpl-", 0), 0u);
}

TEST(Sse, Framing) {
  EXPECT_EQ(sse_event("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_event("x\ny"), "data: x\ndata: y\n\n");
  EXPECT_EQ(sse_event(""), "data: \n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  // Text with newlines inside a chunk stays one data line (JSON escapes it).
  const std::string ev = sse_event(chunk_text(meta(Endpoint::kChat), "a\nb\r\n", nullptr, false));
  EXPECT_EQ(ev.find('\n'), ev.size() - 2);
  EXPECT_EQ(ev.find('\r'), std::string::npos);
}

TEST(Auth, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("", ""));
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secret", "secreT"));
  EXPECT_FALSE(constant_time_equal("secret", "secret1"));
  EXPECT_FALSE(constant_time_equal("secret1", "secret"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_FALSE(constant_time_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(Auth, Keys) {
  EXPECT_TRUE(ApiKeys().allows(""));
  const ApiKeys keys({"k1", "other-key"});
  EXPECT_TRUE(keys.enabled());
  EXPECT_TRUE(keys.allows("Bearer k1"));
  EXPECT_TRUE(keys.allows("Bearer other-key"));
  EXPECT_FALSE(keys.allows(""));
  EXPECT_FALSE(keys.allows("k1"));
  EXPECT_FALSE(keys.allows("Bearer k2"));
  EXPECT_FALSE(keys.allows("Bearer k1 "));
  EXPECT_TRUE(keys.allows("bearer k1"));  // RFC 7235: the scheme is case-insensitive
  EXPECT_TRUE(keys.allows("BEARER  k1"));
  EXPECT_FALSE(keys.allows("Bearer "));
  EXPECT_FALSE(keys.allows("Bearerk1"));
}

}  // namespace
}  // namespace og::server
