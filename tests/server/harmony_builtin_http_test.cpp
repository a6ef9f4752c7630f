// The built-in harmony template (--chat harmony, or a gpt-oss model whose
// template is served by the built-in) through the HTTP layer: requests with
// tools, assistant tool calls, tool results and reasoning_effort /
// model_identity render the same prompt as gpt-oss's own Jinja template
// (tests/template/data/templates/openai-gpt-oss-120b.jinja) served the same
// way, on every route that renders (chat completions, /tokenize,
// /apply-template); tool_choice required becomes the harmony call grammar and
// the reply's call is parsed; what the built-in render cannot reproduce
// (builtin_tools, a later system message, ...) is a 400 naming the field.
// Over the echo scheduler (the reply is the prompt's own text, cut by a stop
// string) with the stories vocabulary, in which the harmony markers are text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "chat/jinja_chat.h"
#include "grammar/grammar.h"
#include "server_fixture.h"

namespace og::server::test {
namespace {

using nlohmann::json;

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather now, for one city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "The city, e.g. Zürich"},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
      "days": {"type": "array", "items": {"type": "integer"}, "nullable": true}
    }, "required": ["city"]}}},
  {"type": "function", "function": {"name": "now", "description": "The time"}}
])";

// A conversation with a system message, a call, its result, a final answer
// and a new question.
const char* kMessages = R"([
  {"role": "system", "content": "Answer briefly."},
  {"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": [1, 2]}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21, \"sky\": \"clear\"}"},
  {"role": "assistant", "content": "21 °C and clear."},
  {"role": "user", "content": "And the time?"}
])";

class BuiltInHarmony : public ServerFixture {
 protected:
  void SetUp() override {
    start();
    harmony_ = make_chat_template("harmony", std::nullopt);
    jinja_ = std::make_unique<JinjaChatTemplate>(
        read_text_file(std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/openai-gpt-oss-120b.jinja"),
        jinja_options_of(*tok_), "gpt-oss");
    model_.max_session_tokens = 8192;
    serve_builtin();
  }
  // The server reads model_ on each request: these switch what it serves.
  void serve_builtin() {
    model_.tmpl = harmony_.get();
    model_.reply_format = harmony_->reply_format();
  }
  void serve_jinja() {
    model_.tmpl = jinja_.get();
    model_.reply_format = detect_reply_format(jinja_->source());
  }
  // A chat request with the tools and the conversation above.
  static json request() {
    return {{"messages", json::parse(kMessages)}, {"tools", json::parse(kTools)}, {"max_tokens", 1}};
  }
  httplib::Result post(const std::string& path, const json& body) {
    httplib::Client c = client();
    return c.Post(path, body.dump(), "application/json");
  }
  // The prompt ids the scheduler got for a chat request (empty on an error).
  std::vector<int32_t> chat_prompt(const json& body) {
    auto r = post("/v1/chat/completions", body);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    if (!r || r->status != 200) return {};
    return sched_->last_options().prompt;
  }
  std::string applied(const json& body) {
    auto r = post("/apply-template", body);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    return r && r->status == 200 ? json::parse(r->body)["prompt"].get<std::string>() : "";
  }
  json tokens(const json& body) {
    auto r = post("/tokenize", body);
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    return r && r->status == 200 ? json::parse(r->body)["tokens"] : json();
  }

  std::unique_ptr<ChatFormat> harmony_;
  std::unique_ptr<JinjaChatTemplate> jinja_;
};

TEST_F(BuiltInHarmony, RendersToolRequestsAsGptOssTemplate) {
  ASSERT_EQ(model_.reply_format.tools, ToolCallFormat::kHarmony);
  std::vector<json> bodies;
  bodies.push_back(request());
  json effort = request();
  effort["reasoning_effort"] = "high";
  effort["chat_template_kwargs"] = {{"model_identity", "You are a test model."}};
  bodies.push_back(effort);
  json last_call = request();  // ends on the tool result: the model answers it
  last_call["messages"].erase(4);
  last_call["messages"].erase(4);
  bodies.push_back(last_call);
  json plain = {{"messages", {{{"role", "user"}, {"content", "Hello"}}}}, {"max_tokens", 1}};
  bodies.push_back(plain);
  for (const json& body : bodies) {
    SCOPED_TRACE(body.dump());
    serve_jinja();
    const std::vector<int32_t> want_ids = chat_prompt(body);
    const std::string want_text = applied(body);
    const json want_tokens = tokens(body);
    serve_builtin();
    EXPECT_EQ(applied(body), want_text);
    EXPECT_EQ(chat_prompt(body), want_ids);
    EXPECT_EQ(tokens(body), want_tokens);
    ASSERT_FALSE(want_ids.empty());
  }
  // Without the generation prompt the last reply ends with <|return|>, as the template ends it.
  json done = request();
  done["messages"].erase(5);
  done["add_generation_prompt"] = false;
  serve_jinja();
  const std::string want = applied(done);
  serve_builtin();
  EXPECT_EQ(applied(done), want);
  EXPECT_NE(want.find("21 °C and clear.<|return|>"), std::string::npos) << want;
  // What the render holds: the settings, the functions namespace, the call and its result.
  const std::string text = applied(effort);
  EXPECT_NE(text.find("You are a test model."), std::string::npos) << text;
  EXPECT_NE(text.find("Reasoning: high"), std::string::npos) << text;
  EXPECT_NE(text.find("# Instructions\n\nAnswer briefly."), std::string::npos) << text;
  EXPECT_NE(text.find("namespace functions {"), std::string::npos) << text;
  EXPECT_NE(text.find("<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"),
            std::string::npos)
      << text;
}

// The analysis that led to a call, echoed back as reasoning_content (or sent
// as gpt-oss's own `thinking`), is rendered before the call on the next turn,
// by the built-in as by gpt-oss's template.
TEST_F(BuiltInHarmony, RendersTheAnalysisBeforeACall) {
  for (const char* key : {"reasoning_content", "thinking"}) {
    SCOPED_TRACE(key);
    json body = request();
    body["messages"].erase(4);  // ends on the tool result
    body["messages"].erase(4);
    body["messages"][2][key] = "Paris needs get_weather.";
    serve_jinja();
    const std::string want = applied(body);
    const std::vector<int32_t> want_ids = chat_prompt(body);
    serve_builtin();
    EXPECT_EQ(applied(body), want);
    EXPECT_EQ(chat_prompt(body), want_ids);
    EXPECT_NE(want.find("<|start|>assistant<|channel|>analysis<|message|>Paris needs get_weather.<|end|>"
                        "<|start|>assistant to=functions.get_weather"),
              std::string::npos)
        << want;
  }
}

// tool_choice required / a named function: the harmony call grammar; the
// scripted reply (the last user message, echoed up to END) is parsed into the call.
TEST_F(BuiltInHarmony, RequiredToolChoiceGivesAParsedCall) {
  const std::string call = "<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
                           "<|constrain|>json<|message|>{\"city\":\"Paris\"}";
  // (A schema the call grammar enforces: it does not take `nullable`.)
  json tools = json::parse(kTools);
  tools[0]["function"]["parameters"]["properties"].erase("days");
  json body = {{"messages", {{{"role", "user"}, {"content", call + "END"}}}},
               {"tools", tools},
               {"tool_choice", "required"},
               {"stop", {"END"}},
               {"max_tokens", 2000}};
  for (const json& choice : {json("required"), json({{"type", "function"}, {"function", {{"name", "get_weather"}}}})}) {
    SCOPED_TRACE(choice.dump());
    body["tool_choice"] = choice;
    auto r = post("/v1/chat/completions", body);
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    const auto g = sched_->last_options().grammar.grammar;
    ASSERT_TRUE(g);
    auto accepts = [&](const std::string& text) {
      grammar::Matcher m(g);
      return m.accept_bytes(text) && m.is_complete();
    };
    EXPECT_TRUE(accepts("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
                        "{\"city\": \"Paris\"}"));
    EXPECT_FALSE(accepts("<|channel|>final<|message|>Sunny."));
    EXPECT_FALSE(accepts("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
                         "{\"town\": \"Paris\"}"));
    const json j = json::parse(r->body);
    const json& msg = j["choices"][0]["message"];
    EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls") << r->body;
    ASSERT_EQ(msg["tool_calls"].size(), 1u) << r->body;
    EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()),
              json({{"city", "Paris"}}));
  }
  // Under auto the same reply is parsed as a call too, streamed.
  body["tool_choice"] = "auto";
  body["stream"] = true;
  httplib::Client c = client();
  const SseEvents e = sse_events(post_sse(c, "/v1/chat/completions", body.dump()));
  std::string name, args, finish;
  for (const json& ch : e.chunks) {
    const json& c = ch["choices"][0];
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    if (c["delta"].contains("tool_calls"))
      for (const json& t : c["delta"]["tool_calls"]) {
        if (t["function"].contains("name")) name += t["function"]["name"].get<std::string>();
        args += t["function"]["arguments"].get<std::string>();
      }
  }
  EXPECT_TRUE(e.done);
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(json::parse(args), json({{"city", "Paris"}}));
}

// A tool without a description (optional in OpenAI's API) is no 400 under
// gpt-oss's template or the built-in render: both render an empty one, the
// same prompt on every route that renders.
TEST_F(BuiltInHarmony, AToolWithoutADescriptionRendersAnEmptyOne) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
               {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
               {"max_tokens", 1}};
  serve_jinja();
  const std::vector<int32_t> want_ids = chat_prompt(body);
  const std::string want_text = applied(body);
  const json want_tokens = tokens(body);
  EXPECT_NE(want_text.find("// \ntype f = () => any;"), std::string::npos) << want_text;
  serve_builtin();
  EXPECT_EQ(applied(body), want_text);
  EXPECT_EQ(chat_prompt(body), want_ids);
  EXPECT_EQ(tokens(body), want_tokens);
  ASSERT_FALSE(want_ids.empty());
  // As an empty description renders.
  body["tools"][0]["function"]["description"] = "";
  EXPECT_EQ(applied(body), want_text);
}

// What the built-in render cannot reproduce, and what gpt-oss's template
// itself refuses: a 400 naming the field, on every route that renders.
TEST_F(BuiltInHarmony, WhatItCannotRenderIsA400NamingTheField) {
  struct Case {
    json body;
    std::string param, words;
  };
  const json user = {{"role", "user"}, {"content", "Hi"}};
  json builtin_tools = request();
  builtin_tools["chat_template_kwargs"] = {{"builtin_tools", {"browser"}}};
  json later_system = {{"messages", {user, {{"role", "system"}, {"content", "Be terse."}}}}};
  json orphan_result = {{"messages", {user, {{"role", "tool"}, {"tool_call_id", "x"}, {"content", "42"}}}}};
  const std::vector<Case> cases = {
      {builtin_tools, "chat_template_kwargs.builtin_tools", "builtin_tools (gpt-oss's browser and python tools)"},
      {later_system, "messages[1]", "messages[1] is a system message"},
      {orphan_result, "messages[1]", "no earlier assistant message has a tool call"},
  };
  for (const Case& c : cases) {
    for (const char* path : {"/v1/chat/completions", "/apply-template", "/tokenize"}) {
      SCOPED_TRACE(std::string(path) + " " + c.body.dump());
      auto r = post(path, c.body);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 400) << r->body;
      const json err = json::parse(r->body)["error"];
      EXPECT_EQ(err["param"], c.param) << r->body;
      const std::string msg = err["message"];
      EXPECT_EQ(msg.rfind("the built-in 'harmony' chat template cannot render this request: ", 0), 0u) << msg;
      EXPECT_NE(msg.find(c.words), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  // A line break in a client's name stays out of the one-line message.
  const json odd = json::parse(R"({"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function",
    "function": {"name": "f", "description": "d", "parameters": {"type": "object",
      "properties": {"a\nb": {"type": "string", "enum": "x"}}}}}]})");
  auto r = post("/v1/chat/completions", odd);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const json err = json::parse(r->body)["error"];
  EXPECT_EQ(err["message"].get<std::string>().find('\n'), std::string::npos) << r->body;
  EXPECT_NE(err["message"].get<std::string>().find("a\\nb"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace og::server::test
