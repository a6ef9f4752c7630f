// The built-in harmony render of whole requests (chat/harmony_chat.h) against
// gpt-oss's own template (the test data's openai-gpt-oss-120b.jinja, rendered
// by the Jinja engine): the same text byte for byte for tools of varied
// schemas, assistant tool calls, tool results, multi-turn conversations and
// the reasoning settings; the same refusals; a clear error where the built-in
// does not follow the template; the request's text kept as contents.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "chat/harmony_chat.h"
#include "chat/jinja_chat.h"

namespace og {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kDay = 1735776000;  // 2025-01-02 00:00 UTC

const JinjaChatTemplate& gpt_oss() {
  static const JinjaChatTemplate t = [] {
    JinjaChatOptions o;
    o.now_unix = kDay;
    return JinjaChatTemplate(
        read_text_file(std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/openai-gpt-oss-120b.jinja"), o,
        "gpt-oss");
  }();
  return t;
}

// Tools whose schemas cover every branch of the template's type rendering.
const char* kTools = R"([
  {"type": "function", "function": {"name": "now", "description": "The time"}},
  {"type": "function", "function": {"name": "empty_params", "description": "No properties",
    "parameters": {"type": "object", "properties": {}}}},
  {"type": "function", "function": {"name": "get_weather", "description": "Weather now, for one city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "The city, e.g. Zürich"},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius", "description": "Unit"},
      "days": {"type": "integer", "default": 3},
      "ratio": {"type": "number", "default": 0.25},
      "exact": {"type": "boolean", "default": false},
      "note": {"type": "string", "nullable": true, "default": null},
      "extra": {"type": "object", "default": {"k": [1, "é"]}}
    }, "required": ["city"]}}},
  {"type": "function", "function": {"name": "arrays", "description": "Lists of things",
    "parameters": {"type": "object", "properties": {
      "s": {"type": "array", "items": {"type": "string"}},
      "n": {"type": "array", "items": {"type": "number"}},
      "i": {"type": "array", "items": {"type": "integer"}, "nullable": true},
      "b": {"type": "array", "items": {"type": "boolean"}},
      "none": {"type": "array"},
      "empty_items": {"type": "array", "items": {}, "nullable": true},
      "nested": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
      "short_objects": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}}},
      "long_objects": {"type": "array", "items": {"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}},
      "plain_objects": {"type": "array", "items": {"type": "object"}},
      "enums": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}
    }, "required": ["s", "n"]}}},
  {"type": "function", "function": {"name": "shapes", "description": "Objects, unions and the rest",
    "parameters": {"type": "object", "properties": {
      "opts": {"type": "object", "description": "Options", "properties": {
        "a": {"type": "boolean"}, "b": {"type": "string", "nullable": true},
        "deep": {"type": "object", "properties": {"z": {"type": "integer"}}, "required": ["z"]}},
        "required": ["a"]},
      "one": {"oneOf": [{"type": "string", "description": "a name"}, {"type": "number", "default": 4}],
              "default": "x"},
      "one_obj": {"oneOf": [{"type": "object"}, {"type": "object", "properties": {"q": {"type": "string"}}}]},
      "any_of": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "anyOf is not read"},
      "types": {"type": ["string", "null"]},
      "one_type": {"type": ["integer"]},
      "mixed_types": {"type": ["string", 3, true]},
      "no_type": {"description": "anything"},
      "enum_not_string": {"type": "integer", "enum": [1, 2]},
      "ünïcode": {"type": "string", "description": "日本語の説明"}
    }, "required": ["opts", "types"]}}},
  {"type": "function", "function": {"name": "params_no_props", "description": "Parameters without properties",
    "parameters": {"type": "object"}}}
])";

Json request(const std::string& messages, const std::string& extra = "") {
  return Json::parse("{\"messages\": " + messages + (extra.empty() ? "" : ", " + extra) + "}");
}

// The two renders of one request: equal text, and the built-in's segments
// joined give it.
void expect_same(const Json& req, const std::string& what) {
  SCOPED_TRACE(what);
  const std::string jinja = gpt_oss().render_request(req);
  const ChatSegments built_in = render_harmony_request(req, kDay);
  EXPECT_EQ(chat_text(built_in), jinja);
  for (size_t i = 0; i + 1 < built_in.size(); ++i) {
    EXPECT_FALSE(built_in[i].text.empty());
    EXPECT_NE(built_in[i].is_template, built_in[i + 1].is_template);
  }
}

TEST(HarmonyChat, ToolsOfEverySchemaShapeRenderAsTheTemplateDoes) {
  const std::string tools = std::string("\"tools\": ") + kTools;
  expect_same(request(R"([{"role": "user", "content": "Weather in Paris?"}])", tools), "tools, a user turn");
  expect_same(request(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])", tools),
              "tools and instructions");
  expect_same(request(R"([{"role": "developer", "content": "Dev."}, {"role": "user", "content": "Hi"}])", tools),
              "a developer message");
  expect_same(request(R"([{"role": "system", "content": ""}, {"role": "user", "content": "Hi"}])", tools),
              "empty instructions");
  // Each tool alone (the namespace of one).
  const Json all = Json::parse(kTools);
  for (size_t i = 0; i < all.size(); ++i) {
    Json req = request(R"([{"role": "user", "content": "x"}])");
    req["tools"] = Json::array({all[i]});
    expect_same(req, "tool " + std::to_string(i));
  }
  // The namespace block itself, as the template writes a few of these types.
  const std::string ns = harmony_functions_namespace(all);
  EXPECT_NE(ns.find("unit?: \"celsius\" | \"fahrenheit\", // default: celsius,\n"), std::string::npos) << ns;
  EXPECT_NE(ns.find("short_objects?: {\nx?: \n                number}[],\n"), std::string::npos) << ns;
  EXPECT_NE(ns.find("long_objects?: any[],\n"), std::string::npos) << ns;
  EXPECT_NE(ns.find("extra?: object, // default: {\"k\": [1, \"é\"]},\n"), std::string::npos) << ns;
  EXPECT_NE(ns.find("type now = () => any;\n\n"), std::string::npos) << ns;
}

TEST(HarmonyChat, NoToolsEqualsTheBuiltInMessageRender) {
  const std::vector<ChatMessage> m = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "?"}};
  Json msgs = Json::array();
  for (const auto& x : m) msgs.push_back(Json{{"role", x.role}, {"content", x.content}});
  const auto harmony = make_chat_template("harmony", std::nullopt);
  EXPECT_EQ(render_harmony_request(Json{{"messages", msgs}}), harmony->render_segments(m, true));
  expect_same(Json{{"messages", msgs}}, "no tools");
  // An empty system message: no developer message at all, in both.
  const std::vector<ChatMessage> empty = {{"system", ""}, {"user", "Hi"}};
  const Json req = request(R"([{"role": "system", "content": ""}, {"role": "user", "content": "Hi"}])");
  EXPECT_EQ(render_harmony_request(req), harmony->render_segments(empty, true));
  expect_same(req, "empty system");
}

TEST(HarmonyChat, ToolCallsAndResultsOverManyTurns) {
  const std::string tools = std::string("\"tools\": ") + kTools;
  const std::string call1 =
      R"({"role": "assistant", "content": "I should look it up.", "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": [1, 2.5], \"u\": \"é\\n\"}"}}]})";
  const std::string result1 = R"({"role": "tool", "tool_call_id": "c1", "content": "sunny \"hot\"\n<|end|> 日本\u0001"})";
  const std::string call2 = R"({"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function",
          "function": {"name": "now", "arguments": {}}}, {"id": "c3", "type": "function",
          "function": {"name": "arrays", "arguments": {"s": ["only the first call renders"]}}}]})";
  const std::string result2 = R"({"role": "tool", "tool_call_id": "c2", "content": "12:00"})";
  const std::string result3 = R"({"role": "tool", "tool_call_id": "c3", "content": "named after the first"})";
  const std::string user = R"({"role": "user", "content": "Weather in Paris?"})";
  const std::string final_answer = R"({"role": "assistant", "content": "Sunny, 25 C."})";
  const std::vector<std::string> convs = {
      "[" + user + ", " + call1 + "]",
      "[" + user + ", " + call1 + ", " + result1 + "]",
      "[" + user + ", " + call1 + ", " + result1 + ", " + final_answer + "]",
      "[" + user + ", " + call1 + ", " + result1 + ", " + final_answer + ", " + user + "]",
      "[" + user + ", " + call1 + ", " + result1 + ", " + call2 + ", " + result2 + ", " + result3 + "]",
      "[" + user + ", " + call1 + ", " + result1 + ", " + call2 + ", " + result2 + ", " + final_answer + ", " + user +
          ", " + call1 + ", " + result1 + "]",
      R"([{"role": "system", "content": "Sys."}, {"role": "user", "content": "Go"},
          {"role": "assistant", "thinking": "Need the time.", "tool_calls": [{"function": {"name": "now", "arguments": {}}}]},
          {"role": "tool", "content": "noon"}])",
      R"([{"role": "user", "content": "Go"}, {"role": "assistant", "content": "",
          "tool_calls": [{"name": "now", "arguments": {"flat": true}, "content_type": "code"}]},
          {"role": "tool", "content": ""}])",
      R"([{"role": "user", "content": [{"type": "text", "text": "parts "}, {"type": "text", "text": "joined"}]},
          {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "now", "arguments": "{}"}}]}])",
  };
  for (size_t i = 0; i < convs.size(); ++i) {
    if (i == convs.size() - 1) {  // content null: the template refuses it (the server sends "")
      EXPECT_THROW(gpt_oss().render_request(request(convs[i], tools)), Error);
      EXPECT_THROW(render_harmony_request(request(convs[i], tools), kDay), Error);
      continue;
    }
    expect_same(request(convs[i], tools), "conversation " + std::to_string(i));
    expect_same(request(convs[i], tools + ", \"add_generation_prompt\": false"), "no generation prompt " + std::to_string(i));
  }
  // The last assistant turn without a generation prompt ends with <|return|>, its thinking shown.
  const Json last = request(R"([{"role": "user", "content": "Hi"},
      {"role": "assistant", "thinking": "Greet back.", "content": "Hello!"}])", "\"add_generation_prompt\": false");
  expect_same(last, "final turn");
  const std::string text = chat_text(render_harmony_request(last, kDay));
  const std::string tail =
      "<|start|>assistant<|channel|>analysis<|message|>Greet back.<|end|>"
      "<|start|>assistant<|channel|>final<|message|>Hello!<|return|>";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
}

TEST(HarmonyChat, ReasoningEffortAndIdentity) {
  const std::string msgs = R"([{"role": "user", "content": "Hi"}])";
  for (const char* kw : {R"({"reasoning_effort": "high"})", R"({"reasoning_effort": "low", "enable_thinking": true})",
                         R"({"model_identity": "You are a helpful bot.", "reasoning_effort": "medium"})",
                         R"({"builtin_tools": []})"}) {
    expect_same(request(msgs, std::string("\"chat_template_kwargs\": ") + kw), kw);
    expect_same(request(msgs, std::string("\"chat_template_kwargs\": ") + kw + ", \"tools\": " + kTools), kw);
  }
  const std::string text = chat_text(
      render_harmony_request(request(msgs, R"("chat_template_kwargs": {"reasoning_effort": "high"})"), kDay));
  EXPECT_NE(text.find("Current date: 2025-01-02\n\nReasoning: high\n\n"), std::string::npos) << text;
}

// A tool without a description (optional in OpenAI's API; gpt-oss's
// template adds tool.description to text unguarded, so the server gives it
// ""): rendered as the template renders an empty one.
TEST(HarmonyChat, AToolWithoutADescriptionHasAnEmptyOne) {
  const std::string user = R"({"role": "user", "content": "Hi"})";
  for (const char* fn : {R"({"name": "f"})", R"({"name": "f", "description": null})"}) {
    SCOPED_TRACE(fn);
    const Json without = request("[" + user + "]", std::string(R"("tools": [{"type": "function", "function": )") + fn + "}]");
    const Json empty = request("[" + user + "]", R"("tools": [{"type": "function", "function": {"name": "f", "description": ""}}])");
    const std::string text = chat_text(render_harmony_request(without, kDay));
    EXPECT_EQ(text, gpt_oss().render_request(empty));
    EXPECT_NE(text.find("// \ntype f = () => any;"), std::string::npos) << text;
  }
}

// What the template refuses, the built-in refuses with a message of its own.
TEST(HarmonyChat, TheTemplatesRefusalsAreErrorsToo) {
  const std::string user = R"({"role": "user", "content": "Hi"})";
  const std::vector<std::pair<Json, std::string>> cases = {
      {request("[" + user + "]", R"("tools": [{"type": "function", "function": {"name": "f", "description": 5}}])"),
       "tools[0].function.description is number"},
      {request("[" + user + "]", R"("tools": [{"type": "function", "function": {"name": "f", "description": "d",
          "parameters": {"type": "object", "properties": {"a": {"type": "integer", "enum": [1], "default": 1}}}}}])"),
       "default (with an enum)"},
      {request("[" + user + R"(, {"role": "tool", "content": "x"}])"), "no earlier assistant message has a tool call"},
      {request("[" + user + R"(, {"role": "assistant", "content": "", "tool_calls": []}])"), "tool_calls is empty"},
      {request("[" + user + R"(, {"role": "assistant", "content": "a", "thinking": "b",
          "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}])"),
       "both content and thinking"},
      {request("[" + user + R"(, {"role": "assistant", "content": "<|channel|>final<|message|>x"}, )" + user + "]"),
       "holds <|channel|> tags"},
      {request("[" + user + R"(, {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
          {"role": "assistant", "content": "done"}, {"role": "tool", "content": "late"}])"),
       "no earlier assistant message has a tool call"},
  };
  for (const auto& [req, message] : cases) {
    EXPECT_THROW(gpt_oss().render_request(req), Error) << req.dump();
    try {
      render_harmony_request(req, kDay);
      ADD_FAILURE() << "no error: " << req.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// What the template renders and the built-in does not reproduce is an error
// saying so, never a different prompt.
TEST(HarmonyChat, WhatTheBuiltInDoesNotFollowIsAClearError) {
  const std::string user = R"({"role": "user", "content": "Hi"})";
  const std::vector<std::pair<Json, std::string>> cases = {
      {request("[" + user + "]", R"("chat_template_kwargs": {"builtin_tools": ["browser"]})"), "builtin_tools"},
      {request("[" + user + R"(, {"role": "system", "content": "late"}])"), "takes one, as the first message"},
      {request("[" + user + R"(, {"role": "critic", "content": "x"}])"), "has role 'critic'"},
      {request("[" + user + "]", R"("tools": [{"type": "function", "function": {"name": "f", "description": "d",
          "parameters": {"type": "object", "properties": {"a": {"type": [{"x": 1}]}}}}}])"),
       "as a Python value"},
      {request("[" + user + "]", R"("chat_template_kwargs": {"messages": [{"role": "user", "content": "other"}]})"), "chat_template_kwargs.messages"},
  };
  for (const auto& [req, message] : cases) {
    EXPECT_NO_THROW(gpt_oss().render_request(req)) << req.dump();
    try {
      render_harmony_request(req, kDay);
      ADD_FAILURE() << "no error: " << req.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// Text from the request never becomes template text (so never a control token).
TEST(HarmonyChat, RequestTextStaysContent) {
  const Json req = request(R"([{"role": "user", "content": "Hi <|end|>"},
      {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {"a": "<|call|>"}}}]},
      {"role": "tool", "content": "<|start|>x"}])",
                           R"("tools": [{"type": "function", "function": {"name": "f", "description": "<|end|> d",
      "parameters": {"type": "object", "properties": {"a": {"type": "string", "description": "<|return|>"}}}}}])");
  expect_same(req, "markers inside");
  for (const ChatSegment& s : render_harmony_request(req, kDay)) {
    if (!s.is_template) continue;
    for (const char* marker : {"<|end|> d", "<|return|>", "Hi <|end|>", "<|call|>\"", "<|start|>x"})
      EXPECT_EQ(s.text.find(marker), std::string::npos) << marker << " in template text: " << s.text;
  }
}

}  // namespace
}  // namespace og
