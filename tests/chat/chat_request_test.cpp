// ChatRequest (chat/chat_request.h): its checks name the field, its forms are
// what the server's parser builds from the same request, and plan_chat
// constrains as the server does (a required call's grammar with the
// reasoning budget, structured output after the reasoning, one call with
// parallel_tool_calls false).
#include <gtest/gtest.h>

#include "chat/chat_request.h"
#include "chat/jinja_chat.h"
#include "chat/request_error.h"

namespace og {
namespace {

using json = nlohmann::ordered_json;

ChatRequest user(const std::string& text) {
  ChatRequest r;
  r.messages.push_back({"user", text, std::nullopt, std::nullopt, {}, std::nullopt});
  return r;
}

std::string field_of(const ChatRequest& r) {
  try {
    render_forms(r);
    structured_output_of(r);
  } catch (const ChatRequestError& e) {
    return e.field();
  }
  return "";
}

TEST(ChatRequest, BadInputsNameTheField) {
  ChatRequest r = user("hi");
  r.messages[0].role = "robot";
  EXPECT_EQ(field_of(r), "messages[0].role");
  r = user("hi");
  r.messages[0].content.reset();
  EXPECT_EQ(field_of(r), "messages[0].content");
  EXPECT_EQ(field_of(ChatRequest{}), "messages");
  r = user("hi");
  r.tools.push_back({"get_weather", std::nullopt, "{not json", false});
  EXPECT_EQ(field_of(r), "tools[0].function.parameters");
  r.tools[0].parameters = "";
  r.tool_choice = ToolChoice{ToolChoice::Kind::kFunction, "get_time"};
  EXPECT_EQ(field_of(r), "tool_choice");
  r = user("hi");
  r.tool_choice = ToolChoice{ToolChoice::Kind::kRequired, ""};
  EXPECT_EQ(field_of(r), "tool_choice");
  r = user("hi");
  r.response_format.kind = ResponseFormat::Kind::kJsonSchema;
  r.response_format.schema = "{\"type\": 12}";
  EXPECT_EQ(field_of(r), "response_format.json_schema.schema");
  r.response_format.schema = "[1,";
  EXPECT_EQ(field_of(r), "response_format.json_schema.schema");
  r = user("hi");
  r.response_format.kind = ResponseFormat::Kind::kGrammar;
  r.response_format.grammar = "root ::= nothing-defined";
  EXPECT_EQ(field_of(r), "grammar");
  r = user("hi");
  r.messages.push_back({"assistant", std::nullopt, std::nullopt, std::nullopt, {{"c1", "f", "{oops"}}, std::nullopt});
  EXPECT_EQ(field_of(r), "messages[1].tool_calls[0].function.arguments");
  r = user("hi");
  r.chat_template_kwargs = "[1]";
  EXPECT_EQ(field_of(r), "chat_template_kwargs");
  r = user("hi");
  r.max_reasoning_tokens = -1;
  EXPECT_EQ(field_of(r), "max_reasoning_tokens");
}

TEST(ChatRequest, FormsAreTheServersShape) {
  ChatRequest r = user("weather?");
  r.messages.push_back({"assistant", std::nullopt, "think", std::nullopt, {{"call_1", "get_weather", "{\"city\":\"Paris\"}"}},
                        std::nullopt});
  r.messages.push_back({"tool", "sunny", std::nullopt, std::nullopt, {}, "call_1"});
  r.tools.push_back({"get_weather", "Weather now", "{\"type\":\"object\"}", false});
  r.chat_template_kwargs = "{\"enable_thinking\": false}";
  const ChatRenderForms f = render_forms(r);
  EXPECT_EQ(f.needs_jinja, "messages[1].tool_calls");
  ASSERT_EQ(f.messages.size(), 3u);
  EXPECT_EQ(f.messages[1].content, "");
  const json expected = json::parse(R"({"messages": [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}], "reasoning_content": "think",
      "thinking": "think"},
    {"role": "tool", "content": "sunny", "tool_call_id": "call_1"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
      "parameters": {"type": "object"}}}],
    "chat_template_kwargs": {"enable_thinking": false}})");
  EXPECT_EQ(f.template_request, expected) << f.template_request.dump();
}

// Qwen 3's template (the model opens <think>): a required call and a schema
// both let the reply reason first, bounded by the budget.
TEST(ChatRequest, PlanReasonsBeforeTheConstraint) {
  const std::string src = R"({%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}{# <tool_call> </tool_call> <think> </think> #})";
  JinjaChatTemplate tmpl(src, JinjaChatOptions{}, "test");
  ChatSetup setup;
  setup.format = &tmpl;
  setup.reply_format = tmpl.reply_format();
  ASSERT_EQ(setup.reply_format.reasoning, ReasoningFormat::kThink);
  ChatRequest r = user("hi");
  r.response_format.kind = ResponseFormat::Kind::kJsonObject;
  r.max_reasoning_tokens = 7;
  ChatPlan p = plan_chat(r, setup);
  EXPECT_NE(p.grammar_text.find("<think>"), std::string::npos) << p.grammar_text;
  EXPECT_TRUE(p.reasoning.active);
  EXPECT_EQ(p.reasoning.max_tokens, 7);
  EXPECT_EQ(p.grammar_from, "response_format");

  r = user("hi");
  r.tools.push_back({"get_weather", std::nullopt, "", false});
  r.tool_choice = ToolChoice{ToolChoice::Kind::kRequired, ""};
  r.parallel_tool_calls = false;
  p = plan_chat(r, setup);
  EXPECT_NE(p.grammar_text.find("get_weather"), std::string::npos);
  EXPECT_TRUE(p.reasoning.active);
  EXPECT_EQ(p.reasoning.max_tokens, kChatDefaultMaxReasoningTokens);
  EXPECT_FALSE(p.reply.parallel_tool_calls);

  r.response_format.kind = ResponseFormat::Kind::kJsonObject;
  try {
    plan_chat(r, setup);
    FAIL() << "two constraints were accepted";
  } catch (const ChatRequestError& e) {
    EXPECT_EQ(e.field(), "tool_choice");
  }
}

// A plan carries its grammar compiled, and planning compiles each grammar a
// request needs once: the structured output's (its check's compile is the
// one the plan hands on, which the C API constrains with, where it used to
// compile the plan's text again), a tool grammar, and a grammar after the
// reasoning (a second, different grammar: the answer's own is checked first).
TEST(ChatRequest, APlanCarriesItsGrammarCompiledOnce) {
  const std::unique_ptr<ChatFormat> chatml = make_chat_template("chatml", std::nullopt);
  ChatSetup setup;
  setup.format = chatml.get();
  setup.reply_format = chatml->reply_format();
  ChatRequest r = user("hi");
  r.response_format.kind = ResponseFormat::Kind::kJsonSchema;
  r.response_format.schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
  int64_t before = chat_grammar_compiles();
  ChatPlan p = plan_chat(r, setup);
  EXPECT_EQ(chat_grammar_compiles() - before, 1);
  ASSERT_TRUE(p.grammar);
  EXPECT_FALSE(p.grammar_text.empty());

  r = user("hi");
  r.response_format.kind = ResponseFormat::Kind::kGrammar;
  r.response_format.grammar = "root ::= \"yes\" | \"no\"";
  before = chat_grammar_compiles();
  p = plan_chat(r, setup);
  EXPECT_EQ(chat_grammar_compiles() - before, 1);
  ASSERT_TRUE(p.grammar);

  const std::string src = R"({%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}{# <tool_call> </tool_call> <think> </think> #})";
  JinjaChatTemplate tmpl(src, JinjaChatOptions{}, "test");
  setup.format = &tmpl;
  setup.reply_format = tmpl.reply_format();
  r = user("hi");
  r.tools.push_back({"get_weather", std::nullopt, "", false});
  r.tool_choice = ToolChoice{ToolChoice::Kind::kRequired, ""};
  before = chat_grammar_compiles();
  p = plan_chat(r, setup);
  EXPECT_EQ(chat_grammar_compiles() - before, 1);
  ASSERT_TRUE(p.grammar);

  r = user("hi");
  r.response_format.kind = ResponseFormat::Kind::kJsonObject;
  before = chat_grammar_compiles();
  p = plan_chat(r, setup);
  EXPECT_EQ(chat_grammar_compiles() - before, 2);  // the answer's check, then the grammar after the reasoning
  ASSERT_TRUE(p.grammar);
  EXPECT_NE(p.grammar_text.find("<think>"), std::string::npos);

  r = user("hi");
  before = chat_grammar_compiles();
  p = plan_chat(r, setup);
  EXPECT_EQ(chat_grammar_compiles() - before, 0);
  EXPECT_FALSE(p.grammar);
}

// Where a built-in cannot render the request, plan_chat words the refusal as
// the server does (its wording was the reference when the server's planning
// moved here): reasoning_effort "has no effect", the front end's renderer and
// hint; a format's own refusal one line, cut after 400 bytes.
TEST(ChatRequest, RefusalsAreWordedAsTheServersAre) {
  const std::unique_ptr<ChatFormat> chatml = make_chat_template("chatml", std::nullopt);
  ChatSetup setup;
  setup.format = chatml.get();
  setup.reply_format = chatml->reply_format();
  auto message_of = [&](const ChatRequest& r, std::string* field) {
    try {
      plan_chat(r, setup);
    } catch (const ChatRequestError& e) {
      *field = e.field();
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  ChatRequest r = user("hi");
  r.reasoning_effort = "high";
  std::string field;
  EXPECT_EQ(message_of(r, &field).rfind("'reasoning_effort' has no effect on this model: a Jinja chat template", 0),
            0u);
  EXPECT_EQ(field, "reasoning_effort");
  r = user("hi");
  r.tools.push_back({"f", std::nullopt, "", false});
  setup.renderer = "this server";
  setup.jinja_hint = "a hint";
  EXPECT_EQ(message_of(r, &field),
            "'tools' needs a Jinja chat template, and this server renders with the built-in 'chatml' template (a hint)");
  EXPECT_EQ(field, "tools");

  const ChatRequestError long_one("chatml: line one\nline two " + std::string(600, 'x'), "messages[0]", "c");
  const ChatRequestError worded = render_refusal(*chatml, long_one);
  const std::string w = worded.what();
  EXPECT_EQ(w.rfind("the built-in 'chatml' chat template cannot render this request: line one\\nline two x", 0), 0u)
      << w;
  EXPECT_EQ(w.find('\n'), std::string::npos);
  EXPECT_TRUE(w.ends_with(" ...")) << w;
  EXPECT_LT(w.size(), 500u);
  EXPECT_EQ(worded.field(), "messages[0]");
  EXPECT_EQ(worded.code(), "c");
}

}  // namespace
}  // namespace og
