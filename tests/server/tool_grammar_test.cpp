// The grammars of required tool calls and of strict tools under "auto"
// (server/tool_grammar.h), per format: the texts they accept are calls in the
// template's own syntax with valid arguments, the reply parser reads each one
// back as that call, and what they refuse is refused. Mistral's two syntaxes
// (name[CALL_ID]id[ARGS]{...} and the [TOOL_CALLS][...] list) and its
// [THINK] block; Gemma 4's own argument syntax; gpt-oss's harmony message to
// the function after an optional analysis message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "server/reply_parser.h"
#include "server/tool_grammar.h"

namespace og::server {
namespace {

using json = nlohmann::ordered_json;

GenerationRequest request(const std::string& choice, bool parallel = false, bool strict = false) {
  GenerationRequest r;
  r.endpoint = Endpoint::kChat;
  const json weather = json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]})");
  r.template_request["tools"] = {
      {{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", weather}, {"strict", strict}}}},
      {{"type", "function"}, {"function", {{"name", "get_time"}}}}};
  r.n_tools = 2;
  if (choice == "required") {
    r.tool_choice.kind = ToolChoice::Kind::kRequired;
  } else if (choice == "auto") {
    r.tool_choice.kind = ToolChoice::Kind::kAuto;
  } else {
    r.tool_choice.kind = ToolChoice::Kind::kFunction;
    r.tool_choice.function = choice;
  }
  r.parallel_tool_calls = parallel;
  return r;
}

ReplyParserOptions mistral(bool args, bool call_id, bool think = false) {
  ReplyParserOptions o;
  o.format.tools = ToolCallFormat::kMistral;
  o.format.mistral_args = args;
  o.format.mistral_call_id = call_id;
  if (think) o.format.reasoning = ReasoningFormat::kMistralThink;
  o.parse_reasoning = think;
  o.id_seed = 7;
  return o;
}

bool accepts(const std::string& grammar, const std::string& text) {
  grammar::Matcher m(grammar::Grammar::parse(grammar));
  return m.accept_bytes(text) && m.is_complete();
}

TEST(ToolGrammar, MistralArgsWithCallId) {
  const ReplyParserOptions o = mistral(true, true);
  const std::string g = tool_call_grammar(request("required"), o);
  const std::string call = R"([TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris", "days": 3})";
  EXPECT_TRUE(accepts(g, call)) << g;
  EXPECT_TRUE(accepts(g, "[TOOL_CALLS]get_time[CALL_ID]000000000[ARGS]{}"));
  // The parser reads what the grammar writes.
  const ParsedReply p = parse_reply(call, o);
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(p.tool_calls[0].arguments), json::parse(R"({"city": "Paris", "days": 3})"));
  EXPECT_EQ(p.content, "");
  // Refused: no call id, a short id, arguments the schema forbids, an unknown tool, text first, two calls.
  EXPECT_FALSE(accepts(g, R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3})"));
  EXPECT_FALSE(accepts(g, R"([TOOL_CALLS]get_weather[CALL_ID]abc[ARGS]{"city": "Paris", "days": 3})"));
  EXPECT_FALSE(accepts(g, R"([TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris", "days": 9})"));
  EXPECT_FALSE(accepts(g, R"([TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"})"));
  EXPECT_FALSE(accepts(g, "[TOOL_CALLS]rm_rf[CALL_ID]a1B2c3D4e[ARGS]{}"));
  EXPECT_FALSE(accepts(g, "Sure. [TOOL_CALLS]get_time[CALL_ID]000000000[ARGS]{}"));
  EXPECT_FALSE(accepts(g, "[TOOL_CALLS]get_time[CALL_ID]000000000[ARGS]{}[TOOL_CALLS]get_time[CALL_ID]000000000[ARGS]{}"));
}

TEST(ToolGrammar, MistralArgsNamedAndParallel) {
  const ReplyParserOptions o = mistral(true, false);
  const std::string named = tool_call_grammar(request("get_time"), o);
  EXPECT_TRUE(accepts(named, "[TOOL_CALLS]get_time[ARGS]{}"));
  EXPECT_FALSE(accepts(named, R"([TOOL_CALLS]get_weather[ARGS]{"city": "Oslo", "days": 1})"));
  const std::string par = tool_call_grammar(request("required", /*parallel=*/true), o);
  const std::string two = R"([TOOL_CALLS]get_weather[ARGS]{"city": "Oslo", "days": 1}[TOOL_CALLS]get_time[ARGS]{})";
  EXPECT_TRUE(accepts(par, two));
  const ParsedReply p = parse_reply(two, o);
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.tool_calls[1].name, "get_time");
}

TEST(ToolGrammar, MistralList) {
  const ReplyParserOptions o = mistral(false, false);
  const std::string g = tool_call_grammar(request("required", /*parallel=*/true), o);
  const std::string list =
      R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}, {"name": "get_time", "arguments": {}}])";
  EXPECT_TRUE(accepts(g, list)) << g;
  const ParsedReply p = parse_reply(list, o);
  ASSERT_EQ(p.tool_calls.size(), 2u);
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_FALSE(accepts(g, R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": 5, "days": 2}}])"));
  EXPECT_FALSE(accepts(g, "[TOOL_CALLS][]"));
}

TEST(ToolGrammar, MistralThinkThenCall) {
  ReplyParserOptions o = mistral(true, false, /*think=*/true);
  const std::string g = tool_call_grammar(request("required"), o);
  const std::string reply = "[THINK]The user wants the time.[/THINK][TOOL_CALLS]get_time[ARGS]{}";
  EXPECT_TRUE(accepts(g, reply)) << g;
  EXPECT_TRUE(accepts(g, "[TOOL_CALLS]get_time[ARGS]{}"));
  EXPECT_FALSE(accepts(g, "[THINK]a [/THINK] b[/THINK][TOOL_CALLS]get_time[ARGS]{}"));
  const ParsedReply p = parse_reply(reply, o);
  EXPECT_EQ(p.reasoning, "The user wants the time.");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  o.starts_in_reasoning = true;
  EXPECT_TRUE(accepts(tool_call_grammar(request("required"), o), "thinking[/THINK][TOOL_CALLS]get_time[ARGS]{}"));
}

TEST(ToolGrammar, MistralStrictAuto) {
  const ReplyParserOptions o = mistral(true, false);
  const std::string g = strict_auto_grammar(request("auto", false, /*strict=*/true), o);
  ASSERT_FALSE(g.empty());
  EXPECT_TRUE(accepts(g, "It is sunny [in] Paris."));
  EXPECT_TRUE(accepts(g, R"(Checking.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 2})"));
  EXPECT_FALSE(accepts(g, R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 12})"));
  EXPECT_FALSE(accepts(g, R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 2}trailing)"));
  // get_time is not strict: any object.
  EXPECT_TRUE(accepts(g, R"([TOOL_CALLS]get_time[ARGS]{"tz": "UTC"})"));
}

TEST(ToolGrammar, MarkersToAdmit) {
  EXPECT_EQ(tool_grammar_markers(mistral(true, true).format),
            (std::vector<std::string>{"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"}));
  ReplyFormat hermes;
  hermes.tools = ToolCallFormat::kHermes;
  EXPECT_TRUE(tool_grammar_markers(hermes).empty());
}

ReplyParserOptions gemma4(bool channel = false) {
  ReplyParserOptions o;
  o.format.tools = ToolCallFormat::kGemma4;
  if (channel) o.format.reasoning = ReasoningFormat::kGemma4Channel;
  o.parse_reasoning = channel;
  o.id_seed = 7;
  return o;
}

// Gemma 4's calls: call:name{key:value} with bare keys in sorted order and
// <|"|>-quoted raw strings, as its template's format_argument writes them.
TEST(ToolGrammar, Gemma4Required) {
  const ReplyParserOptions o = gemma4();
  const std::string g = tool_call_grammar(request("required"), o);
  const std::string call = R"(<|tool_call>call:get_weather{city:<|"|>Paris
<|"|>,days:3}<tool_call|>)";
  EXPECT_TRUE(accepts(g, call)) << g;
  EXPECT_TRUE(accepts(g, "<|tool_call>call:get_time{}<tool_call|>"));
  const ParsedReply p = parse_reply(call, o);
  ASSERT_EQ(p.tool_calls.size(), 1u) << p.content;
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(p.tool_calls[0].arguments), json::parse(R"({"city": "Paris\n", "days": 3})"));
  // Refused: JSON syntax, keys out of the template's order, a bound broken, a string over maxLength,
  // a '"' inside a string, spaces, an unknown tool.
  EXPECT_FALSE(accepts(g, R"(<|tool_call>call:get_weather{"city":"Paris","days":3}<tool_call|>)"));
  EXPECT_FALSE(accepts(g, R"(<|tool_call>call:get_weather{days:3,city:<|"|>Paris<|"|>}<tool_call|>)"));
  EXPECT_FALSE(accepts(g, R"(<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:8}<tool_call|>)"));
  EXPECT_FALSE(accepts(g, R"(<|tool_call>call:get_weather{city:<|"|>Parisssssss<|"|>,days:3}<tool_call|>)"));
  EXPECT_FALSE(accepts(g, R"(<|tool_call>call:get_weather{city:<|"|>Pa"ris<|"|>,days:3}<tool_call|>)"));
  EXPECT_FALSE(accepts(g, R"(<|tool_call>call:get_weather{city: <|"|>Paris<|"|>,days:3}<tool_call|>)"));
  EXPECT_FALSE(accepts(g, "<|tool_call>call:rm_rf{}<tool_call|>"));
  // Named, parallel, after a thought.
  EXPECT_FALSE(accepts(tool_call_grammar(request("get_weather"), o), "<|tool_call>call:get_time{}<tool_call|>"));
  const std::string par = tool_call_grammar(request("required", /*parallel=*/true), o);
  EXPECT_TRUE(accepts(par, "<|tool_call>call:get_time{}<tool_call|><|tool_call>call:get_time{}<tool_call|>"));
  const ReplyParserOptions c = gemma4(/*channel=*/true);
  const std::string thought = "<|channel>thought\nThe time.<channel|><|tool_call>call:get_time{}<tool_call|>";
  EXPECT_TRUE(accepts(tool_call_grammar(request("required"), c), thought));
  const ParsedReply pc = parse_reply(thought, c);
  ASSERT_EQ(pc.tool_calls.size(), 1u);
}

TEST(ToolGrammar, Gemma4NestedValuesAndStrictAuto) {
  GenerationRequest r = request("auto", false, /*strict=*/true);
  r.template_request["tools"][1]["function"]["parameters"] = json::parse(R"({"type": "object",
      "properties": {"Zone": {"enum": ["UTC", "CET"]}, "opts": {"type": "object", "properties": {"b": {"type": "boolean"},
      "n": {"type": ["null", "integer"]}}, "required": ["b", "n"]}, "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["Zone"]})");
  r.template_request["tools"][1]["function"]["strict"] = true;
  const ReplyParserOptions o = gemma4();
  const std::string g = strict_auto_grammar(r, o);
  ASSERT_FALSE(g.empty());
  EXPECT_TRUE(accepts(g, "Let me see."));
  // Sorted keys (case-insensitive, as dictsort): opts, tags, Zone; None for null.
  const std::string call =
      R"(Checking.<|tool_call>call:get_time{opts:{b:true,n:None},tags:[<|"|>a<|"|>,<|"|>b c<|"|>],Zone:<|"|>CET<|"|>}<tool_call|>)";
  EXPECT_TRUE(accepts(g, call)) << g;
  const ParsedReply p = parse_reply(call, o);
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(p.tool_calls[0].arguments),  // unordered: compare as values
            nlohmann::json::parse(R"({"Zone": "CET", "opts": {"b": true, "n": null}, "tags": ["a", "b c"]})"));
  EXPECT_FALSE(accepts(g, R"(<|tool_call>call:get_time{Zone:<|"|>PST<|"|>}<tool_call|>)"));
  EXPECT_FALSE(accepts(g, R"(<|tool_call>call:get_time{opts:{b:1,n:None},Zone:<|"|>CET<|"|>}<tool_call|>)"));
}

// A property name Gemma's syntax cannot write (it holds the quote marker) is a
// 400 naming the tool's parameters, not a grammar that could never finish.
TEST(ToolGrammar, Gemma4UnwritableKeyIsA400) {
  GenerationRequest r = request("required");
  r.template_request["tools"][0]["function"]["parameters"] =
      json::parse(R"({"type": "object", "properties": {"a<|\"|>b": {"type": "string"}}})");
  try {
    tool_call_grammar(r, gemma4());
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("tools[0].function.parameters"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("quote marker"), std::string::npos) << e.what();
  }
}

TEST(ToolGrammar, Llama3StrictAutoIsNotEnforced) {
  ReplyParserOptions o;
  o.format.tools = ToolCallFormat::kLlama3Json;
  EXPECT_EQ(strict_auto_grammar(request("auto", false, true), o), "");
}

// gpt-oss (harmony): one call, a commentary message to functions.NAME whose
// body is the arguments (<|call|>, the stop token, ends the turn), after an
// optional analysis message.
TEST(ToolGrammar, HarmonyRequired) {
  ReplyParserOptions o;
  o.format = {ToolCallFormat::kHarmony, ReasoningFormat::kHarmony};
  o.id_seed = 7;
  const std::string g = tool_call_grammar(request("required"), o);
  const std::string call =
      R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 3})";
  EXPECT_TRUE(accepts(g, call)) << g;
  const std::string thought = "<|channel|>analysis<|message|>Weather, so call it.<|end|><|start|>assistant" + call;
  EXPECT_TRUE(accepts(g, thought)) << g;
  const ParsedReply p = parse_reply(thought, o);
  EXPECT_EQ(p.reasoning, "Weather, so call it.");
  ASSERT_EQ(p.tool_calls.size(), 1u) << p.content;
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(p.tool_calls[0].arguments), json::parse(R"({"city": "Paris", "days": 3})"));
  EXPECT_FALSE(accepts(g, R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 9})"));
  EXPECT_FALSE(accepts(g, "<|channel|>commentary to=functions.rm_rf <|constrain|>json<|message|>{}"));
  EXPECT_FALSE(accepts(g, "<|channel|>final<|message|>No call."));
  EXPECT_FALSE(accepts(g, call + call));  // parallel_tool_calls or not: one call per turn
  EXPECT_FALSE(accepts(tool_call_grammar(request("get_weather"), o),
                       "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}"));
  EXPECT_EQ(tool_grammar_markers(o.format),
            (std::vector<std::string>{"<|channel|>", "<|message|>", "<|constrain|>", "<|start|>", "<|end|>"}));
}

}  // namespace
}  // namespace og::server
