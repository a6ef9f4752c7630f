// Request parsing: every field's type and range, unknown (ignored, listed)
// and unsupported (400) fields, tools, tool_choice and agents' messages, stop as a string or a list, max_tokens vs max_completion_tokens,
// prompts as text or ids, malformed JSON and invalid UTF-8: each bad body is
// one 400 naming the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/api_request.h"

namespace og::server {
namespace {

using nlohmann::json;

GenerationRequest chat(const std::string& body) { return parse_chat_request(parse_json_object(body)); }
GenerationRequest completion(const std::string& body) { return parse_completion_request(parse_json_object(body)); }

// The ApiError a parse throws (status 0 when it does not throw).
template <class F>
ApiError error_of(F f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "", "no error");
}

const std::string kMsgs = R"("messages": [{"role": "user", "content": "hi"}])";

TEST(ChatRequest, Minimal) {
  const GenerationRequest r = chat("{" + kMsgs + "}");
  EXPECT_EQ(r.endpoint, Endpoint::kChat);
  EXPECT_EQ(r.model, "");
  ASSERT_EQ(r.forms.messages.size(), 1u);
  EXPECT_EQ(r.forms.messages[0].role, "user");
  EXPECT_EQ(r.forms.messages[0].content, "hi");
  EXPECT_FALSE(r.params.max_tokens);
  EXPECT_FALSE(r.params.temperature);
  EXPECT_FALSE(r.params.stream);
}

TEST(ChatRequest, AllSettings) {
  const GenerationRequest r = chat(R"({"model": "m", "messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "name": "x"},
      {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}],
    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
    "repetition_penalty": 1.1, "seed": -3, "stop": ["x", "yy"], "n": 1, "presence_penalty": 0.5,
    "frequency_penalty": -1.25, "logprobs": true, "top_logprobs": 3, "stream": true,
    "stream_options": {"include_usage": true}, "user": "u1", "logit_bias": {}, "response_format": {"type": "text"},
    "cache_salt": "tenant-7"})");
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.forms.messages.size(), 4u);
  EXPECT_EQ(r.forms.messages[0].role, "system");
  EXPECT_EQ(r.forms.messages[1].content, "ab");
  EXPECT_EQ(*r.params.max_tokens, 7);
  EXPECT_DOUBLE_EQ(*r.params.temperature, 0.5);
  EXPECT_DOUBLE_EQ(*r.params.top_p, 0.9);
  EXPECT_EQ(*r.params.top_k, 40);
  EXPECT_DOUBLE_EQ(*r.params.min_p, 0.05);
  EXPECT_DOUBLE_EQ(*r.params.repetition_penalty, 1.1);
  EXPECT_DOUBLE_EQ(*r.params.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(*r.params.frequency_penalty, -1.25);
  EXPECT_EQ(*r.params.seed, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(r.params.stop, (std::vector<std::string>{"x", "yy"}));
  EXPECT_TRUE(r.params.logprobs);
  EXPECT_EQ(r.params.top_logprobs, 3);
  EXPECT_TRUE(r.params.stream);
  EXPECT_TRUE(r.params.include_usage);
  EXPECT_EQ(r.params.cache_salt, "tenant-7");
}

// Fields we do not know are accepted and listed (with where they are) for the
// server's log; OpenAI's metadata fields and an echoed assistant message's
// refusal are accepted silently.
TEST(ChatRequest, UnknownFieldsAreIgnoredAndListed) {
  const GenerationRequest r = chat(R"({"messages": [{"role": "user", "content": "hi", "foo": 1},
      {"role": "assistant", "content": "ok", "refusal": null, "annotations": []}],
    "temprature": 1, "cache_prompt": true, "user": "u", "store": false, "stream": true,
    "stream_options": {"include_usage": true, "x": 1}})");
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"messages[0].foo", "stream_options.x", "temprature", "cache_prompt"}));
  EXPECT_TRUE(completion(R"({"prompt": "x", "max_completion_tokens": 4})").ignored ==
              std::vector<std::string>{"max_completion_tokens"});
}

// An agent's conversation: tools, a call with its arguments as a JSON string
// (a mapping for the template), the tool's result, null content.
TEST(ChatRequest, ToolsAndToolMessages) {
  const GenerationRequest r = chat(R"({"messages": [
      {"role": "system", "content": "s"},
      {"role": "user", "content": "weather in Paris?"},
      {"role": "assistant", "content": null, "reasoning_content": "think", "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": [{"type": "text", "text": "sunny"}]}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true}}],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "parallel_tool_calls": false,
    "chat_template_kwargs": {"enable_thinking": false}, "reasoning_effort": "low"})");
  EXPECT_TRUE(r.ignored.empty()) << r.ignored[0];
  EXPECT_EQ(r.chat.tools.size(), 1u);
  EXPECT_EQ(r.chat.tool_choice->kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(r.chat.tool_choice->function, "get_weather");
  EXPECT_FALSE(r.chat.parallel_tool_calls);
  EXPECT_EQ(r.forms.needs_jinja, "messages[2].tool_calls");
  const nlohmann::ordered_json& t = r.forms.template_request;
  ASSERT_EQ(t["messages"].size(), 4u);
  EXPECT_EQ(t["messages"][2]["content"], "");
  EXPECT_EQ(t["messages"][2]["reasoning_content"], "think");
  EXPECT_EQ(t["messages"][2]["thinking"], "think");  // the analysis before a call, as gpt-oss's template reads it
  EXPECT_EQ(t["messages"][2]["tool_calls"][0]["function"]["arguments"]["days"], 2);
  EXPECT_EQ(t["messages"][2]["tool_calls"][0]["function"]["arguments"].begin().key(), "city");  // order kept
  EXPECT_EQ(t["messages"][3]["role"], "tool");
  EXPECT_EQ(t["messages"][3]["content"], "sunny");
  EXPECT_EQ(t["messages"][3]["tool_call_id"], "call_1");
  EXPECT_EQ(t["tools"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(t["chat_template_kwargs"]["enable_thinking"], false);
  EXPECT_EQ(t["chat_template_kwargs"]["reasoning_effort"], "low");
  // The plain messages the built-in templates would see.
  ASSERT_EQ(r.forms.messages.size(), 4u);
  EXPECT_EQ(r.forms.messages[3].role, "tool");
  EXPECT_EQ(r.forms.messages[3].content, "sunny");
}

// The parse fills one og::ChatRequest (the library's) and the Jinja form is
// its render_forms(), still the request as the client sent it: a tool with
// its key order, extra fields, null description and strict false; an
// assistant's empty tool_calls list; the kwargs' order.
TEST(ChatRequest, TheJinjaFormIsTheRequestAsSent) {
  const GenerationRequest r = chat(R"({"messages": [
      {"role": "user", "content": "u"},
      {"role": "assistant", "content": "a", "tool_calls": []}],
    "tools": [{"function": {"parameters": {"type": "object", "properties": {"b": {}, "a": {}}}, "name": "f",
               "description": null, "strict": false, "x-extra": 1}, "type": "function"}],
    "chat_template_kwargs": {"z": 1, "a": 2}})");
  const nlohmann::ordered_json& t = r.forms.template_request;
  EXPECT_EQ(t["tools"].dump(), R"([{"function":{"parameters":{"type":"object","properties":{"b":{},"a":{}}},"name":"f",)"
                               R"("description":null,"strict":false,"x-extra":1},"type":"function"}])");
  ASSERT_TRUE(t["messages"][1].contains("tool_calls"));
  EXPECT_TRUE(t["messages"][1]["tool_calls"].empty());
  EXPECT_EQ(t["chat_template_kwargs"].dump(), R"({"z":1,"a":2})");
  EXPECT_EQ(r.forms.needs_jinja, "tools");  // an empty tool_calls list needs no Jinja
  // The typed reading the library's planning uses.
  ASSERT_EQ(r.chat.tools.size(), 1u);
  EXPECT_EQ(r.chat.tools[0].name, "f");
  EXPECT_FALSE(r.chat.tools[0].description.has_value());
  EXPECT_EQ(r.chat.tools[0].parameters, R"({"type":"object","properties":{"b":{},"a":{}}})");
  EXPECT_EQ(r.chat.messages[1].content, "a");
  const ChatRenderForms again = render_forms(r.chat);
  EXPECT_EQ(again.template_request, t);
}

// The analysis before a call reaches the template as `thinking` (what gpt-oss's
// reads): sent so, or copied from reasoning_content when the turn is calls
// only; a turn with content keeps its reasoning_content alone.
TEST(ChatRequest, ThinkingBeforeACall) {
  const std::string call = R"("tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}])";
  auto msg = [&](const std::string& fields) {
    const GenerationRequest r = chat(R"({"messages": [{"role": "user", "content": "u"}, {"role": "assistant", )" +
                                     fields + "}]}");
    EXPECT_TRUE(r.ignored.empty()) << r.ignored[0];
    return r.forms.template_request["messages"][1];
  };
  EXPECT_EQ(msg(R"("content": null, "thinking": "t", )" + call)["thinking"], "t");
  EXPECT_EQ(msg(R"("content": "", "reasoning_content": "r", )" + call)["thinking"], "r");
  const auto both = msg(R"("content": null, "reasoning_content": "r", "thinking": "t", )" + call);
  EXPECT_EQ(both["thinking"], "t");
  EXPECT_EQ(both["reasoning_content"], "r");
  EXPECT_FALSE(msg(R"("content": "c", "reasoning_content": "r", )" + call).contains("thinking"));
  EXPECT_FALSE(msg(R"("content": "c", "reasoning_content": "r")").contains("thinking"));
  EXPECT_EQ(chat(R"({"messages": [{"role": "assistant", "content": "a", "thinking": "t"}]})").forms.needs_jinja,
            "messages[0].thinking");
  EXPECT_THROW(chat(R"({"messages": [{"role": "assistant", "content": "a", "thinking": 5}]})"), ApiError);
}

TEST(ChatRequest, ToolChoiceForms) {
  const std::string tools = R"(, "tools": [{"type": "function", "function": {"name": "f"}}])";
  EXPECT_EQ(chat("{" + kMsgs + "}").chat.tool_choice->kind, ToolChoice::Kind::kNone);  // no tools: nothing to call
  EXPECT_EQ(chat("{" + kMsgs + tools + "}").chat.tool_choice->kind, ToolChoice::Kind::kAuto);
  EXPECT_EQ(chat("{" + kMsgs + tools + R"(, "tool_choice": "none"})").chat.tool_choice->kind, ToolChoice::Kind::kNone);
  EXPECT_EQ(chat("{" + kMsgs + tools + R"(, "tool_choice": "required"})").chat.tool_choice->kind,
            ToolChoice::Kind::kRequired);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "tool_choice": "auto"})").chat.tools.size(), 0u);
  EXPECT_EQ(chat("{" + kMsgs + tools + "}").forms.needs_jinja, "tools");
  EXPECT_EQ(chat("{" + kMsgs + "}").forms.needs_jinja, "");
  EXPECT_EQ(chat("{" + kMsgs + R"(, "tools": []})").forms.needs_jinja, "");
}

TEST(ApplyTemplateRequest, Forms) {
  ApplyTemplateRequest a = parse_apply_template_request(parse_json_object("{" + kMsgs + R"(, "add_generation_prompt": false})"));
  EXPECT_FALSE(a.chat.add_generation_prompt);
  EXPECT_EQ(a.forms.template_request["add_generation_prompt"], false);
  EXPECT_EQ(a.forms.template_request["messages"][0]["content"], "hi");
  EXPECT_EQ(a.chat.messages.at(0).content, "hi");
  EXPECT_EQ(error_of([] { parse_apply_template_request(parse_json_object("{}")); }).param(), "messages");
}

TEST(ChatRequest, StructuredOutput) {
  EXPECT_FALSE(chat("{" + kMsgs + "}").params.grammar);
  GenerationRequest r = chat("{" + kMsgs + R"(, "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(r.params.grammar);
  EXPECT_EQ(r.params.grammar_from, "response_format");
  r = chat("{" + kMsgs + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
      "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}})");
  ASSERT_TRUE(r.params.grammar);
  grammar::Matcher m(r.params.grammar);
  EXPECT_TRUE(m.accept_bytes(R"({"a": 12})"));
  EXPECT_TRUE(m.is_complete());
  grammar::Matcher bad(r.params.grammar);
  EXPECT_FALSE(bad.accept_bytes(R"({"a": "x"})"));
  r = chat("{" + kMsgs + R"(, "json_schema": {"type": "string", "enum": ["yes", "no"]}})");
  EXPECT_EQ(r.params.grammar_from, "json_schema");
  r = chat("{" + kMsgs + R"(, "grammar": "root ::= \"yes\" | \"no\""})");
  EXPECT_EQ(r.params.grammar_from, "grammar");
  EXPECT_TRUE(completion(R"({"prompt": "x", "response_format": {"type": "json_object"}})").params.grammar);
}

TEST(ChatRequest, Choices) {
  EXPECT_EQ(chat("{" + kMsgs + "}").params.n, 1);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "n": 1})").params.n, 1);
  // Any count parses; the server's --max-n is checked where the request meets the model.
  EXPECT_EQ(chat("{" + kMsgs + R"(, "n": 4})").params.n, 4);
  EXPECT_EQ(chat("{" + kMsgs + R"(, "n": 100})").params.n, 100);
  EXPECT_EQ(completion(R"({"prompt": "x", "n": 3})").params.n, 3);
}

TEST(ChatRequest, LogitBias) {
  const GenerationRequest r = chat("{" + kMsgs + R"(, "logit_bias": {"5": -100, "17": 2.5}})");
  EXPECT_EQ(r.params.logit_bias, (std::vector<std::pair<int64_t, double>>{{5, -100.0}, {17, 2.5}}));
}

TEST(ChatRequest, StopAsStringAndNulls) {
  const GenerationRequest r = chat("{" + kMsgs + R"(, "stop": "\n\n", "temperature": null, "max_tokens": null})");
  EXPECT_EQ(r.params.stop, (std::vector<std::string>{"\n\n"}));
  EXPECT_FALSE(r.params.temperature);
  EXPECT_FALSE(r.params.max_tokens);
}

TEST(ChatRequest, MaxTokensSpellings) {
  EXPECT_EQ(*chat("{" + kMsgs + R"(, "max_tokens": 5})").params.max_tokens, 5);
  EXPECT_EQ(*chat("{" + kMsgs + R"(, "max_completion_tokens": 6})").params.max_tokens, 6);
  EXPECT_EQ(*chat("{" + kMsgs + R"(, "max_tokens": 6, "max_completion_tokens": 6})").params.max_tokens, 6);
  const ApiError e = error_of([&] { chat("{" + kMsgs + R"(, "max_tokens": 5, "max_completion_tokens": 6})"); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "max_completion_tokens");
}

TEST(ChatRequest, TopKMinusOneIsOff) { EXPECT_EQ(*chat("{" + kMsgs + R"(, "top_k": -1})").params.top_k, 0); }

struct BadCase {
  const char* body;
  const char* param;  // expected ApiError::param ("" = none)
  const char* words;  // expected in the message
};

// Each sampler bound is the one of runtime/generation_limits.h, in its words:
// the C API and the commands give the same message under their own names.
TEST(ChatRequest, BoundsAreTheSharedOnes) {
  const struct {
    std::string extra, param, message;
  } cases[] = {
      {R"("temperature": 3)", "temperature", "'temperature' is 3, outside [0, 2]"},
      {R"("temperature": 2.5)", "temperature", "'temperature' is 2.5, outside [0, 2]"},
      {R"("top_p": 0)", "top_p", "'top_p' is 0, outside (0, 1]"},
      {R"("presence_penalty": -2.5)", "presence_penalty", "'presence_penalty' is -2.5, outside [-2, 2]"},
      {R"("repetition_penalty": 101)", "repetition_penalty", "'repetition_penalty' is 101, outside (0, 100]"},
      {R"("top_k": -2)", "top_k", "'top_k' is -2, outside [-1, 2147483647]"},
      {R"("max_completion_tokens": -1)", "max_completion_tokens",
       "'max_completion_tokens' is -1, outside [0, 2147483647]"},
      {R"("logprobs": true, "top_logprobs": 21)", "top_logprobs", "'top_logprobs' is 21, outside [0, 20]"},
      {R"("logit_bias": {"7": -101})", "logit_bias", "'logit_bias[7]' is -101, outside [-100, 100]"},
      {R"("stop": "")", "stop", "'stop' is empty"},
      {R"("stop": ["a", ""])", "stop", "'stop[1]' is empty"},
      {R"("max_reasoning_tokens": -1)", "max_reasoning_tokens", "'max_reasoning_tokens' is -1, outside [0, 2147483647]"},
  };
  for (const auto& c : cases) {
    const ApiError e = error_of([&] { chat("{" + kMsgs + ", " + c.extra + "}"); });
    EXPECT_EQ(e.status(), 400) << c.extra;
    EXPECT_EQ(e.param(), c.param) << c.extra;
    EXPECT_EQ(std::string(e.what()), c.message) << c.extra;
  }
}

TEST(ChatRequest, BadBodies) {
  static const std::string long_salt =
      R"({"messages": [{"role": "user", "content": "x"}], "cache_salt": ")" + std::string(1025, 's') + R"("})";
  const BadCase cases[] = {
      {R"({"messages": []})", "messages", "empty"},
      {R"({})", "messages", "required"},
      {R"({"messages": "hi"})", "messages", "must be an array"},
      {R"({"messages": [1]})", "messages[0]", "must be an object"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role", "required"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role", "'robot'"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content", "required"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content", "string or an array"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].image_url.url", "required"},
      {R"({"messages": [{"role": "user", "content": [{"type": "audio", "audio": {}}]}]})",
       "messages[0].content[0].type", "expected text, image_url or image"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}]})",
       "messages[0].content[0].image_url.url", "image URLs are not fetched; send a data: URL"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "data:image/png;base64,@@"}]}]})",
       "messages[0].content[0].image_url", "base64 data is not valid"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png,xy"}}]}]})",
       "messages[0].content[0].image_url.url", "not base64"},
      {R"({"messages": [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "data:a;base64,aGk="}}]}]})",
       "messages[0].content", "user messages only"},
      {R"({"model": 3, "messages": [{"role": "user", "content": "x"}]})", "model", "must be a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": "5"})", "max_tokens", "integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 5.0})", "max_tokens", "integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens", "at least 1 token"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})", "max_tokens", "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 99999999999999999999})", "max_tokens", ""},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": 3})", "temperature", "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature", "number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p", "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 1.5})", "top_p", "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_k": -2})", "top_k", "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "min_p": 2})", "min_p", "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "repetition_penalty": 0})", "repetition_penalty", ""},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": 1.5})", "seed", "integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "cache_salt": ""})", "cache_salt", "non-empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "cache_salt": 5})", "cache_salt", "must be a string"},
      {long_salt.c_str(), "cache_salt", "at most 1024"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2.5})", "n", "an integer"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 0})", "n", "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": 5})", "stop", "string or an array"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a", 1]})", "stop[1]", "string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": [""]})", "stop", "empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["1","2","3","4","5","6","7","8","9","10",
          "11","12","13","14","15","16","17"]})", "stop", "at most"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream", "boolean"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": true}})",
       "stream_options", "only allowed"},
      {R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": -2.5})", "presence_penalty",
       "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": "high"})", "presence_penalty",
       "number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "frequency_penalty": 3})", "frequency_penalty",
       "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs", "logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})", "top_logprobs",
       "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})", "tools", "an array"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "code_interpreter"}]})",
       "tools[0].type", "only function"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})", "tools[0].function",
       "required"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {}}]})",
       "tools[0].function.name", "required"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "a b"}}]})",
       "tools[0].function.name", "function name"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}},
          {"type": "function", "function": {"name": "f"}}]})", "tools[1].function.name", "twice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f",
          "parameters": "x"}}]})", "tools[0].function.parameters", "JSON schema"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice", "empty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"})", "tool_choice", "expected"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": 3})", "tool_choice", "string or an object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}],
          "tool_choice": {"type": "function", "function": {"name": "g"}}})", "tool_choice.function.name", "not in"},
      {R"({"messages": [{"role": "user", "content": "x"}], "functions": [{"name": "f"}]})", "functions", "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": [1]})", "chat_template_kwargs",
       "an object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "max"})", "reasoning_effort",
       "expected"},
      {R"({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function",
          "function": {"name": "f", "arguments": "{not json"}}]}]})", "messages[0].tool_calls[0].function.arguments",
       "not valid JSON"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]})",
       "messages[0].tool_calls[0].function.name", "required"},
      {R"({"messages": [{"role": "assistant", "tool_calls": {}}]})", "messages[0].tool_calls", "an array"},
      {R"({"messages": [{"role": "tool"}]})", "messages[0].content", "required"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"a": 5}})", "logit_bias", "not a token id"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"1": 101}})", "logit_bias", "outside"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"1": "x"}})", "logit_bias[1]", "a number"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": [1]})", "logit_bias", "an object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})",
       "response_format.type", "json_schema"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"schema": {"type": "object", "frobnicate": 1}}}})", "response_format.json_schema.schema",
       "frobnicate"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema"}})",
       "response_format.json_schema", "must be an object"},
      {R"({"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= [a-"})", "grammar", "grammar line"},
      {R"({"messages": [{"role": "user", "content": "x"}], "grammar": 5})", "grammar", "a string"},
      {R"({"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= \"a\"",
          "response_format": {"type": "json_object"}})", "grammar", "give one"},
  };
  for (const auto& c : cases) {
    const ApiError e = error_of([&] { chat(c.body); });
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.type(), "invalid_request_error") << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body << " -> " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << c.body << " -> " << e.what();
  }
}

TEST(JsonBody, MalformedAndInvalidUtf8) {
  const std::string cases[] = {
      "",
      "{",
      "not json",
      R"({"messages": [}])",
      "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}",      // invalid UTF-8 bytes
      "{\"messages\": [{\"role\": \"user\", \"content\": \"\xc3\"}]}",          // truncated sequence
      "{\"messages\": [{\"role\": \"user\", \"content\": \"\xed\xa0\x80\"}]}",  // encoded surrogate
      R"({"messages": [{"role": "user", "content": "\ud800"}]})",               // lone surrogate escape
      R"({"a": 1} trailing)",
      R"({"temperature": 2.00000003344381e95812434282})",  // past double's range (the fuzzer's: was a 500)
      R"({"max_tokens": -1e999})",
  };
  for (const auto& body : cases) {
    const ApiError e = error_of([&] { parse_json_object(body); });
    EXPECT_EQ(e.status(), 400) << body;
  }
  for (const std::string body : {"[]", "5", "\"x\"", "null"}) {
    const ApiError e = error_of([&] { parse_json_object(body); });
    EXPECT_EQ(e.status(), 400) << body;
    EXPECT_NE(std::string(e.what()).find("must be a JSON object"), std::string::npos) << e.what();
  }
}

// Messages that echo client text (field names, roles, part types, the model)
// stay one line of bounded length, whatever the text holds (the fuzzer's
// finding: a part type with a newline went into the message raw).
TEST(JsonBody, EchoedClientTextIsEscapedAndCut) {
  const std::string m = R"("messages": [{"role": "user", "content": "x"}])";
  const std::string long_key(5000, 'k');
  const struct {
    std::string body, want;
  } cases[] = {
      {R"({"messages": [{"role": "a\nb\u001b", "content": "x"}]})", R"(is 'a\nb\x1b')"},
      {R"({"messages": [{"role": ")" + long_key + R"(", "content": "x"}]})", "(cut; 5000 bytes)"},
      {R"({"messages": [{"role": "us'er\r", "content": "x"}]})", R"(is 'us\'er\r')"},
      {R"({"messages": [{"role": "user", "content": [{"type": "te\nxt", "text": "x"}]}]})", R"(is 'te\nxt')"},
      {"{\"a\": \"" + std::string(100000, 'x'), "not valid JSON"},
  };
  for (const auto& c : cases) {
    const ApiError e = error_of([&] { chat(c.body); });
    const std::string what = e.what();
    EXPECT_EQ(e.status(), 400) << c.body.substr(0, 80);
    EXPECT_NE(what.find(c.want), std::string::npos) << what.substr(0, 300);
    EXPECT_EQ(what.find('\n'), std::string::npos) << what.substr(0, 300);
    EXPECT_LT(what.size(), 400u) << what.substr(0, 300);
  }
  // A multi-byte character is never split.
  const std::string e_acute = "\xc3\xa9";
  std::string key;
  for (int i = 0; i < 40; ++i) key += e_acute;
  const std::string what = error_of([&] { chat(R"({"messages": [{"role": ")" + key + R"(", "content": "x"}]})"); }).what();
  const size_t q = what.find("is '") + 3;
  ASSERT_NE(q, std::string::npos);
  const std::string shown = what.substr(q + 1, what.find('\'', q + 1) - q - 1);
  EXPECT_EQ(shown.size() % 2, 0u) << what;
  EXPECT_EQ(shown.size(), 64u) << what;
}

TEST(JsonBody, DeepNestingIsRefused) {
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  const ApiError e = error_of([&] { parse_json_object(deep); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_NE(std::string(e.what()).find("nests deeper"), std::string::npos) << e.what();
  // The limit itself is fine.
  const std::string ok = "{\"a\":" + std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']') + "}";
  EXPECT_NO_THROW(parse_json_object(ok));
}

TEST(JsonBody, ValidUtf8IsKept) {
  const GenerationRequest r = chat(R"({"messages": [{"role": "user", "content": "caf\u00e9 \ud83d\ude00 ü"}]})");
  EXPECT_EQ(r.forms.messages[0].content, "caf\xc3\xa9 \xf0\x9f\x98\x80 \xc3\xbc");
}

TEST(CompletionRequest, PromptForms) {
  GenerationRequest r = completion(R"({"prompt": "Once upon"})");
  EXPECT_EQ(r.endpoint, Endpoint::kCompletion);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "Once upon");
  EXPECT_FALSE(r.prompts[0].is_ids);
  r = completion(R"({"prompt": ["Once"]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "Once");
  r = completion(R"({"prompt": [1, 2, 3]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_ids);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int64_t>{1, 2, 3}));
  r = completion(R"({"prompt": [[4, 5]]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int64_t>{4, 5}));
  r = completion(R"({"prompt": "x", "logprobs": 2, "echo": false, "best_of": 1, "max_tokens": 3})");
  EXPECT_TRUE(r.params.logprobs);
  EXPECT_EQ(r.params.top_logprobs, 2);
  EXPECT_EQ(*r.params.max_tokens, 3);
  EXPECT_FALSE(r.echo);
  EXPECT_FALSE(r.has_suffix);
}

TEST(CompletionRequest, PromptListsEchoAndSuffix) {
  GenerationRequest r = completion(R"({"prompt": ["a", [7, 8], "c"], "n": 2})");
  ASSERT_EQ(r.prompts.size(), 3u);
  EXPECT_EQ(r.prompts[0].text, "a");
  EXPECT_TRUE(r.prompts[1].is_ids);
  EXPECT_EQ(r.prompts[1].ids, (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(r.prompts[2].text, "c");
  EXPECT_EQ(r.params.n, 2);
  r = completion(R"({"prompt": [[1, 2], [3]]})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].ids, (std::vector<int64_t>{3}));
  r = completion(R"({"prompt": "x", "echo": true, "logprobs": 1, "max_tokens": 0})");
  EXPECT_TRUE(r.echo);
  EXPECT_TRUE(r.params.max_zero);
  EXPECT_EQ(*r.params.max_tokens, 0);
  r = completion(R"({"prompt": "def f(", "suffix": "\n    return x"})");
  EXPECT_TRUE(r.has_suffix);
  EXPECT_EQ(r.suffix, "\n    return x");
  r = completion(R"({"prompt": "x", "suffix": null})");
  EXPECT_FALSE(r.has_suffix);
}

TEST(CompletionRequest, BadBodies) {
  std::string many = R"({"prompt": [)";
  for (size_t i = 0; i <= kMaxPrompts; ++i) many += std::string(i ? "," : "") + "\"p\"";
  many += "]}";
  const BadCase cases[] = {
      {R"({})", "prompt", "required"},
      {R"({"prompt": 5})", "prompt", "string or an array"},
      {R"({"prompt": []})", "prompt", "empty"},
      {R"({"prompt": ["a", 5]})", "prompt[1]", "string or an array"},
      {R"({"prompt": ["a", []]})", "prompt[1]", "empty"},
      {many.c_str(), "prompt", "at most"},
      {R"({"prompt": [1, "a"]})", "prompt[1]", "integer"},
      {R"({"prompt": [1.5]})", "prompt[0]", "integer"},
      {R"({"prompt": "x", "max_tokens": 0})", "max_tokens", "echo"},
      {R"({"prompt": "x", "max_tokens": -1})", "max_tokens", "outside"},
      {R"({"prompt": "x", "echo": "yes"})", "echo", "boolean"},
      {R"({"prompt": "x", "best_of": 2})", "best_of", "does not generate extra completions"},
      {R"({"prompt": "x", "logprobs": 6})", "logprobs", "outside"},
      {R"({"prompt": "x", "logprobs": true})", "logprobs", "integer"},
      {R"({"prompt": "x", "suffix": 3})", "suffix", "string"},
      {R"({"prompt": "x", "suffix": "y", "echo": true})", "echo", "cannot be combined"},
  };
  for (const auto& c : cases) {
    const ApiError e = error_of([&] { completion(c.body); });
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body << " -> " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << c.body << " -> " << e.what();
  }
}

TEST(TokenizeRequest, Forms) {
  TokenizeRequest t = parse_tokenize_request(parse_json_object(R"({"prompt": "hi", "add_special_tokens": false})"));
  EXPECT_EQ(t.prompt, "hi");
  EXPECT_FALSE(t.add_special);
  EXPECT_FALSE(t.use_messages);
  t = parse_tokenize_request(parse_json_object("{" + kMsgs + R"(, "add_generation_prompt": false})"));
  EXPECT_TRUE(t.use_messages);
  EXPECT_FALSE(t.chat.add_generation_prompt);
  EXPECT_EQ(error_of([] { parse_tokenize_request(parse_json_object("{}")); }).status(), 400);
  EXPECT_EQ(error_of([] { parse_tokenize_request(parse_json_object(R"({"prompt": "a", "messages": []})")); }).status(),
            400);
  DetokenizeRequest d = parse_detokenize_request(parse_json_object(R"({"tokens": [1, 2]})"));
  EXPECT_EQ(d.tokens, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(error_of([] { parse_detokenize_request(parse_json_object(R"({"tokens": "1"})")); }).param(), "tokens");
  // An id's range is the vocabulary's, checked where the model is known
  // (runtime/token_ids.h, http_server_test): the parser takes any integer.
  EXPECT_EQ(parse_detokenize_request(parse_json_object(R"({"tokens": [-1]})")).tokens, (std::vector<int64_t>{-1}));
}

}  // namespace
}  // namespace og::server
