// Tool calls and reasoning through the HTTP layer: a Jinja template that
// names Hermes' <tool_call> and <think> markers, over the echo scheduler
// (which replies with the prompt's own text, so a user message scripts the
// reply): non-streamed messages carry tool_calls / reasoning_content and
// finish_reason "tool_calls"; streams carry tool_calls deltas; tool_choice
// none leaves the markers in the content; gpt-oss's harmony messages to a
// function are calls too; a built-in template refuses tools;
// POST /apply-template renders a request.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/jinja_chat.h"
#include "grammar/grammar.h"
#include "server_fixture.h"

namespace og::server::test {
namespace {

using nlohmann::json;

// Renders only the contents, so the echoed reply is the last user message's text.
const char* kTemplate =
    "{%- for m in messages %}{%- if m.role == 'user' %}{{ m.content }}{%- endif %}{%- endfor %}"
    "{#- the markers of replies: <tool_call> </tool_call> <think> </think> #}";

class ToolCalls : public ServerFixture {
 protected:
  void start_jinja(const char* tmpl = kTemplate) {
    ASSERT_TRUE(std::filesystem::exists(kStoriesGguf)) << "missing test data " << kStoriesGguf;
    tok_jinja_ = Tokenizer::from_path(kStoriesGguf);
    jinja_ = std::make_unique<JinjaChatTemplate>(tmpl, jinja_options_of(*tok_jinja_), "test");
    start();
    model_.tmpl = jinja_.get();
    model_.reply_format = detect_reply_format(jinja_->source());
    model_.max_session_tokens = 1024;
  }
  // A chat request whose reply is `reply` (echoed; "END" stops it).
  json request(const std::string& reply, bool tools = true) {
    json j = {{"messages", {{{"role", "user"}, {"content", reply + "END"}}}}, {"stop", {"END"}}, {"max_tokens", 200}};
    if (tools)
      j["tools"] = {{{"type", "function"},
                     {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}};
    return j;
  }
  std::unique_ptr<Tokenizer> tok_jinja_;
  std::unique_ptr<JinjaChatTemplate> jinja_;
};

std::vector<json> events_of(const std::string& body) {
  std::vector<json> out;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    const std::string payload = body.substr(at + 6, end - at - 6);
    at = end;
    if (payload == "[DONE]") break;
    out.push_back(json::parse(payload));
  }
  return out;
}

const std::string kCall = R"(<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>)";

TEST_F(ToolCalls, WholeReplyCarriesTheCall) {
  start_jinja();
  ASSERT_EQ(model_.reply_format.tools, ToolCallFormat::kHermes);
  auto c = client();
  auto r = c.Post("/v1/chat/completions", request("Let me check." + kCall).dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  const json& msg = j["choices"][0]["message"];
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls") << r->body;
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << r->body;
  EXPECT_EQ(msg["tool_calls"][0]["type"], "function");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(msg["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_NE(msg["content"].get<std::string>().find("check."), std::string::npos) << r->body;
}

TEST_F(ToolCalls, ReasoningAndNoneChoice) {
  start_jinja();
  auto c = client();
  // Reasoning comes back apart from the content.
  auto r = c.Post("/v1/chat/completions", request("<think>hmm</think>done", false).dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  json msg = json::parse(r->body)["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "hmm") << r->body;
  EXPECT_EQ(msg["content"], "done") << r->body;
  EXPECT_FALSE(msg.contains("tool_calls"));
  // tool_choice none: the markup is the model's words, left in the content.
  json body = request(kCall);
  body["tool_choice"] = "none";
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  const json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
  EXPECT_NE(j["choices"][0]["message"]["content"].get<std::string>().find("get_weather"), std::string::npos);
}

TEST_F(ToolCalls, StreamedCallDeltas) {
  start_jinja();
  auto c = client();
  json body = request("<think>why</think>" + kCall + kCall);
  body["stream"] = true;
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  std::string reasoning, content, finish;
  std::map<int, std::string> names, args, ids;
  for (const json& e : events_of(r->body)) {
    const json& ch = e["choices"][0];
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    const json& d = ch["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      for (const json& t : d["tool_calls"]) {
        const int i = t["index"];
        if (t.contains("id")) ids[i] += t["id"].get<std::string>();
        if (t["function"].contains("name")) names[i] += t["function"]["name"].get<std::string>();
        args[i] += t["function"]["arguments"].get<std::string>();
      }
  }
  EXPECT_EQ(finish, "tool_calls") << r->body;
  EXPECT_EQ(reasoning, "why") << r->body;
  ASSERT_EQ(names.size(), 2u) << r->body;
  EXPECT_EQ(names[0], "get_weather");
  EXPECT_EQ(names[1], "get_weather");
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_EQ(json::parse(args[1]), json({{"city", "Paris"}}));
  EXPECT_EQ(content.find("tool_call"), std::string::npos) << content;
}

// parallel_tool_calls: false without a grammar (tool_choice auto): a reply
// with two calls comes back with the first only, whole and streamed.
TEST_F(ToolCalls, ParallelCallsOffGivesOneCall) {
  start_jinja();
  auto c = client();
  const std::string second = R"(<tool_call>{"name":"get_weather","arguments":{"city":"Lyon"}}</tool_call>)";
  json body = request(kCall + second);
  body["parallel_tool_calls"] = false;
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  const json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls") << r->body;
  const json& calls = j["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << r->body;
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_EQ(r->body.find("Lyon"), std::string::npos) << r->body;
  body["stream"] = true;
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  std::set<int> indexes;
  std::string finish;
  for (const json& e : events_of(r->body)) {
    const json& ch = e["choices"][0];
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    if (ch["delta"].contains("tool_calls"))
      for (const json& t : ch["delta"]["tool_calls"]) indexes.insert(t["index"].get<int>());
  }
  EXPECT_EQ(indexes, std::set<int>({0})) << r->body;
  EXPECT_EQ(finish, "tool_calls") << r->body;
  EXPECT_EQ(r->body.find("Lyon"), std::string::npos) << r->body;
}

// gpt-oss's harmony: the analysis channel is the reasoning, a commentary
// message to functions.NAME the call (whole and streamed; <|call|> ends it).
const char* kHarmonyTemplate =
    "{%- for m in messages %}{%- if m.role == 'user' %}{{ m.content }}{%- endif %}{%- endfor %}"
    "{#- the markers of replies: <|start|> <|channel|> <|message|> <|call|> #}";
const std::string kHarmonyReply =
    "<|channel|>analysis<|message|>Weather?<|end|><|start|>assistant<|channel|>commentary "
    "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>";

TEST_F(ToolCalls, HarmonyCallWholeAndStreamed) {
  start_jinja(kHarmonyTemplate);
  ASSERT_EQ(model_.reply_format.tools, ToolCallFormat::kHarmony);
  auto c = client();
  auto r = c.Post("/v1/chat/completions", request(kHarmonyReply).dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  const json j = json::parse(r->body);
  const json& msg = j["choices"][0]["message"];
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls") << r->body;
  EXPECT_EQ(msg["reasoning_content"], "Weather?") << r->body;
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << r->body;
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
  EXPECT_TRUE(msg["content"].is_null() || msg["content"] == "") << r->body;

  json body = request(kHarmonyReply);
  body["stream"] = true;
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  std::string reasoning, content, finish, name, args;
  for (const json& e : events_of(r->body)) {
    const json& ch = e["choices"][0];
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
    const json& d = ch["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content") && d["content"].is_string()) content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      for (const json& t : d["tool_calls"]) {
        if (t["function"].contains("name")) name += t["function"]["name"].get<std::string>();
        args += t["function"]["arguments"].get<std::string>();
      }
  }
  EXPECT_EQ(finish, "tool_calls") << r->body;
  EXPECT_EQ(reasoning, "Weather?") << r->body;
  EXPECT_EQ(name, "get_weather") << r->body;
  EXPECT_EQ(json::parse(args), json({{"city", "Paris"}}));
  EXPECT_EQ(content, "") << r->body;
}

TEST_F(ToolCalls, MalformedCallStaysContent) {
  start_jinja();
  auto c = client();
  const std::string broken = R"(<tool_call>{"name":"get_weather","arguments":{"city":</tool_call>)";
  auto r = c.Post("/v1/chat/completions", request(broken).dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  const json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
  EXPECT_NE(j["choices"][0]["message"]["content"].get<std::string>().find("get_weather"), std::string::npos);
}

// tool_choice required / a named function becomes a grammar in the model's
// format (Hermes, Mistral, Gemma 4); a template with no tool-call format
// cannot be enforced: a 400 naming tool_choice.
TEST_F(ToolCalls, RequiredCallIsAGrammarOrARefusal) {
  start_jinja();
  auto c = client();
  json body = request(kCall);
  body["tool_choice"] = "required";
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  EXPECT_TRUE(sched_->last_options().grammar.grammar);  // the scheduler got the call's grammar
  body["response_format"] = {{"type", "json_object"}};
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("give one"), std::string::npos) << r->body;
  model_.reply_format.tools = ToolCallFormat::kMistral;
  body.erase("response_format");
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  EXPECT_TRUE(sched_->last_options().grammar.grammar);
  model_.reply_format.tools = ToolCallFormat::kGemma4;
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  EXPECT_TRUE(sched_->last_options().grammar.grammar);
  model_.reply_format.tools = ToolCallFormat::kNone;
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("cannot be enforced for this model's tool-call format (none"), std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("\"param\":\"tool_choice\""), std::string::npos) << r->body;
}

// Strict tools under tool_choice auto: the reply is held to "text without the
// marker, then valid calls or nothing" (Hermes, Mistral and Gemma 4 formats),
// to a final message or a valid call (gpt-oss's harmony), to text that does
// not open with '{' or valid calls (Llama 3's bare JSON); without a strict
// tool nothing is constrained.
TEST_F(ToolCalls, StrictToolsUnderAutoAreAGrammar) {
  start_jinja();
  auto c = client();
  json body = request("Hello");
  body["tools"] = {{{"type", "function"},
                    {"function", {{"name", "get_weather"}, {"strict", true},
                                  {"parameters", {{"type", "object"},
                                                  {"properties", {{"city", {{"type", "string"}}}}},
                                                  {"required", {"city"}}}}}}},
                   {{"type", "function"}, {"function", {{"name", "free_form"}}}}};
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  const auto g = sched_->last_options().grammar.grammar;
  ASSERT_TRUE(g);
  auto accepts = [&](const std::string& text) {
    grammar::Matcher m(g);
    return m.accept_bytes(text) && m.is_complete();
  };
  EXPECT_TRUE(accepts(""));
  EXPECT_TRUE(accepts("It is sunny in <b>Paris</b>."));
  EXPECT_TRUE(accepts("<think>I should call it</think>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                      "{\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(accepts("<tool_call>\n{\"name\": \"free_form\", \"arguments\": {\"anything\": [1, 2]}}\n</tool_call>"));
  EXPECT_FALSE(accepts("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(accepts("<tool_call>\n{\"name\": \"no_such_tool\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts("Sure: <tool_call> is how I call"));
  // Not strict: nothing constrained.
  body["tools"][0]["function"]["strict"] = false;
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_FALSE(sched_->last_options().grammar.grammar);
  // Mistral's and Gemma 4's calls are enforced too.
  body["tools"][0]["function"]["strict"] = true;
  model_.reply_format.tools = ToolCallFormat::kMistral;
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_TRUE(sched_->last_options().grammar.grammar);
  model_.reply_format.tools = ToolCallFormat::kGemma4;
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_TRUE(sched_->last_options().grammar.grammar);
  // gpt-oss's harmony messages: a final message or a valid call.
  model_.reply_format = {ToolCallFormat::kHarmony, ReasoningFormat::kHarmony};
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  auto accepted = [&](const std::string& text) {
    const auto h = sched_->last_options().grammar.grammar;
    if (!h) return false;
    grammar::Matcher m(h);
    return m.accept_bytes(text) && m.is_complete();
  };
  const std::string analysis = "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant";
  EXPECT_TRUE(accepted(analysis + "<|channel|>final<|message|>Sunny."));
  EXPECT_TRUE(accepted(analysis + R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>)"
                                  R"({"city": "Paris"})"));
  EXPECT_FALSE(accepted(analysis + R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>)"
                                   R"({"town": "Paris"})"));
  EXPECT_FALSE(accepted("<|channel|>commentary to=functions.no_such_tool <|constrain|>json<|message|>{}"));
  // Llama 3's bare JSON: text that does not open with '{', or a valid call.
  model_.reply_format = {ToolCallFormat::kLlama3Json, ReasoningFormat::kNone};
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  EXPECT_TRUE(accepted("It is sunny in Paris."));
  EXPECT_TRUE(accepted(R"({"name": "get_weather", "parameters": {"city": "Paris"}})"));
  EXPECT_FALSE(accepted(R"({"name": "get_weather", "parameters": {"town": "Paris"}})"));
  EXPECT_FALSE(accepted(R"({"name": "no_such_tool", "parameters": {}})"));
  EXPECT_FALSE(accepted(R"({"answer": 42})"));
}

TEST_F(ToolCalls, ApplyTemplateRoute) {
  start_jinja();
  auto c = client();
  auto r = c.Post("/apply-template", R"({"messages": [{"role": "user", "content": "hello"}]})", "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  EXPECT_EQ(json::parse(r->body)["prompt"], "hello");
  r = c.Post("/apply-template", R"({"messages": "x"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = c.Get("/apply-template");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
}

TEST_F(ToolCalls, BuiltInTemplateRefusesTools) {
  start();  // chatml, a built-in
  auto c = client();
  auto r = c.Post("/v1/chat/completions", request(kCall).dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("needs a Jinja chat template"), std::string::npos) << r->body;
  r = c.Post("/v1/chat/completions",
             R"({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("messages[1].role"), std::string::npos) << r->body;
  // A built-in renders the apply-template route too.
  r = c.Post("/apply-template", R"({"messages": [{"role": "user", "content": "hi"}]})", "application/json");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(json::parse(r->body)["prompt"], "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

// reasoning_effort on a built-in template without it: the 400 names
// reasoning_effort, not chat_template_kwargs (which it would be as a kwarg);
// given kwargs are named when both come.
TEST_F(ToolCalls, ReasoningEffortOnABuiltInTemplateNamesItself) {
  start();  // chatml, a built-in
  auto c = client();
  for (const char* path : {"/v1/chat/completions", "/apply-template", "/tokenize"}) {
    SCOPED_TRACE(path);
    auto r = c.Post(path, R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "low"})",
                    "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    json e = json::parse(r->body)["error"];
    EXPECT_EQ(e["param"], "reasoning_effort") << r->body;
    EXPECT_EQ(e["message"].get<std::string>().rfind("'reasoning_effort' has no effect on this model", 0), 0u) << r->body;
    EXPECT_EQ(e["message"].get<std::string>().find("chat_template_kwargs"), std::string::npos) << r->body;
    r = c.Post(path,
               R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "low",
                   "chat_template_kwargs": {"enable_thinking": false}})",
               "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "chat_template_kwargs") << r->body;
  }
}

// Unknown fields do not fail the request; each name is logged once.
TEST_F(ToolCalls, UnknownFieldsAreLoggedOnce) {
  std::vector<std::string> lines;
  std::mutex mu;
  HttpOptions o;
  o.access_log = false;
  o.log = [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(l);
  };
  start(o);
  auto c = client();
  for (int i = 0; i < 2; ++i) {
    auto r = c.Post("/v1/chat/completions",
                    R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1, "cache_prompt": true})",
                    "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("'cache_prompt'"), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace og::server::test
