// The grammars of required tool calls and of strict tools under "auto"
// (chat/tool_grammar.h), per format: the texts they accept are calls in the
// template's own syntax with valid arguments, the reply parser reads each one
// back as that call, and what they refuse is refused. Mistral's two syntaxes
// (name[CALL_ID]id[ARGS]{...} and the [TOOL_CALLS][...] list) and its
// [THINK] block; Gemma 4's own argument syntax; gpt-oss's harmony message to
// the function after an optional analysis message. Under "auto", random
// replies the grammar accepts are read by the parser as valid calls or as text
// with none (harmony, Llama 3's bare JSON).
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "chat/reply_parser.h"
#include "chat/request_error.h"
#include "chat/tool_grammar.h"
#include "grammar/grammar.h"

namespace og {
namespace {

using json = nlohmann::ordered_json;

ToolRequest request(const std::string& choice, bool parallel = false, bool strict = false) {
  ToolRequest r;
  const json weather = json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]})");
  r.tools = {
      {{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", weather}, {"strict", strict}}}},
      {{"type", "function"}, {"function", {{"name", "get_time"}}}}};
  if (choice == "required") {
    r.choice.kind = ToolChoice::Kind::kRequired;
  } else if (choice == "auto") {
    r.choice.kind = ToolChoice::Kind::kAuto;
  } else {
    r.choice.kind = ToolChoice::Kind::kFunction;
    r.choice.function = choice;
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
  ToolRequest r = request("auto", false, /*strict=*/true);
  r.tools[1]["function"]["parameters"] = json::parse(R"({"type": "object",
      "properties": {"Zone": {"enum": ["UTC", "CET"]}, "opts": {"type": "object", "properties": {"b": {"type": "boolean"},
      "n": {"type": ["null", "integer"]}}, "required": ["b", "n"]}, "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["Zone"]})");
  r.tools[1]["function"]["strict"] = true;
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
  ToolRequest r = request("required");
  r.tools[0]["function"]["parameters"] =
      json::parse(R"({"type": "object", "properties": {"a<|\"|>b": {"type": "string"}}})");
  try {
    tool_call_grammar(r, gemma4());
    FAIL() << "no error";
  } catch (const ChatRequestError& e) {
    EXPECT_EQ(e.field(), "tools[0].function.parameters");
    EXPECT_EQ(e.code(), "unsupported_schema");
    EXPECT_NE(std::string(e.what()).find("tools[0].function.parameters"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("quote marker"), std::string::npos) << e.what();
  }
}

// Whether every call the parser reads in a reply is to a listed tool, with
// arguments valid for get_weather's schema when it is that one.
bool calls_valid(const ParsedReply& p) {
  for (const ToolCall& c : p.tool_calls) {
    const json a = json::parse(c.arguments);
    if (c.name == "get_time") continue;
    if (c.name != "get_weather" || a.size() != 2 || !a.contains("city") || !a.contains("days")) return false;
    if (!a["city"].is_string() || a["city"].get<std::string>().size() > 10) return false;
    if (!a["days"].is_number_integer() || a["days"].get<int>() < 1 || a["days"].get<int>() > 7) return false;
  }
  return true;
}

// Random replies from pieces of calls and markers: whenever the grammar
// accepts one, the parser reads only valid calls in it.
void expect_accepted_calls_valid(const std::string& g, const ReplyParserOptions& o,
                                 const std::vector<std::string>& pieces, int* accepted) {
  std::mt19937 rng(11);
  const auto gr = grammar::Grammar::parse(g);
  for (int i = 0; i < 4000; ++i) {
    std::string text;
    for (int k = 0, n = static_cast<int>(rng() % 6); k < n; ++k) text += pieces[rng() % pieces.size()];
    grammar::Matcher m(gr);
    if (!(m.accept_bytes(text) && m.is_complete())) continue;
    ++*accepted;
    EXPECT_TRUE(calls_valid(parse_reply(text, o))) << text;
  }
}

ReplyParserOptions llama3() {
  ReplyParserOptions o;
  o.format.tools = ToolCallFormat::kLlama3Json;
  o.id_seed = 7;
  return o;
}

// Llama 3 under "auto": calls ({"name": ..., "parameters": ...}) or text the
// parser does not read as a call (after whitespace, neither '{' nor
// <|python_tag|> first), nothing else.
TEST(ToolGrammar, Llama3StrictAuto) {
  const ReplyParserOptions o = llama3();
  const std::string g = strict_auto_grammar(request("auto", false, /*strict=*/true), o);
  ASSERT_FALSE(g.empty());
  for (const std::string text : {"", " \n", "It is sunny {in} Paris.", "\n\t <b>x</b>", "<|python_ta", "<|python_tag|",
                                 "<|pythonic {\"name\": \"get_time\", \"parameters\": {}}", "<", "Sure; {}"}) {
    EXPECT_TRUE(accepts(g, text)) << text;
    const ParsedReply p = parse_reply(text, o);
    EXPECT_TRUE(p.tool_calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
  const std::string call = R"({"name": "get_weather", "parameters": {"city": "Paris", "days": 2}})";
  EXPECT_TRUE(accepts(g, call)) << g;
  EXPECT_TRUE(accepts(g, "\n " + call));
  const ParsedReply p = parse_reply("\n " + call, o);
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(p.tool_calls[0].arguments), json::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(p.content, "");
  EXPECT_TRUE(accepts(g, R"({"name": "get_time", "parameters": {"tz": "UTC"}})"));  // not strict: any object
  // Refused: a bound broken, an unknown tool, JSON that is no call, '{' after
  // whitespace, <|python_tag|>, text after a call, two calls unless parallel.
  EXPECT_FALSE(accepts(g, R"({"name": "get_weather", "parameters": {"city": "Paris", "days": 12}})"));
  EXPECT_FALSE(accepts(g, R"({"name": "get_weather", "parameters": {"town": "Paris", "days": 2}})"));
  EXPECT_FALSE(accepts(g, R"({"name": "rm_rf", "parameters": {}})"));
  EXPECT_FALSE(accepts(g, R"({"answer": 42})"));
  EXPECT_FALSE(accepts(g, " \n{x"));
  EXPECT_FALSE(accepts(g, R"(<|python_tag|>{"name": "get_time", "parameters": {}})"));
  EXPECT_FALSE(accepts(g, "<|python_tag|>"));
  EXPECT_FALSE(accepts(g, call + " Done."));
  EXPECT_FALSE(accepts(g, call + "; " + call));
  const std::string par = strict_auto_grammar(request("auto", /*parallel=*/true, /*strict=*/true), o);
  EXPECT_TRUE(accepts(par, call + "; " + R"({"name": "get_time", "parameters": {}})"));
  EXPECT_EQ(parse_reply(call + "; " + R"({"name": "get_time", "parameters": {}})", o).tool_calls.size(), 2u);
  // The split is the parser's: a random reply the grammar accepts is either
  // calls it reads as valid, or content with no call in it.
  int accepted = 0;
  expect_accepted_calls_valid(par, o,
                              {" ", "\n", "x", "{", "}", "<", "<|python_tag|>", "<|python", "; ", call,
                               R"({"name": "rm_rf", "parameters": {}})",
                               R"({"name": "get_weather", "arguments": {"city": "Rome", "days": 0}})"},
                              &accepted);
  EXPECT_GT(accepted, 200);
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

// gpt-oss (harmony) under "auto": after an optional analysis message, the
// final message (no way into a call in its text) or one valid call.
TEST(ToolGrammar, HarmonyStrictAuto) {
  ReplyParserOptions o;
  o.format = {ToolCallFormat::kHarmony, ReasoningFormat::kHarmony};
  o.parse_tools = o.parse_reasoning = true;
  o.id_seed = 7;
  const std::string g = strict_auto_grammar(request("auto", false, /*strict=*/true), o);
  ASSERT_FALSE(g.empty());
  const std::string analysis = "<|channel|>analysis<|message|>Weather <|channel|> or not?<|end|><|start|>assistant";
  const std::string final_text = "<|channel|>final<|message|>It is <b>sunny</b> <|end|> in Paris.";
  const std::string call =
      R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 3})";
  EXPECT_TRUE(accepts(g, final_text)) << g;
  EXPECT_TRUE(accepts(g, "<|channel|>final<|message|>"));
  EXPECT_TRUE(accepts(g, analysis + final_text));
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, analysis + call));
  EXPECT_TRUE(accepts(g, R"(<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"tz": [1]})"));
  ParsedReply p = parse_reply(analysis + final_text, o);
  EXPECT_EQ(p.reasoning, "Weather <|channel|> or not?");
  EXPECT_EQ(p.content, "It is <b>sunny</b> <|end|> in Paris.");
  EXPECT_TRUE(p.tool_calls.empty());
  p = parse_reply(analysis + call, o);
  ASSERT_EQ(p.tool_calls.size(), 1u) << p.content;
  EXPECT_EQ(p.tool_calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(p.tool_calls[0].arguments), json::parse(R"({"city": "Paris", "days": 3})"));
  // Refused: a bound broken, an unknown function, a call inside the final
  // message, a way into a message there, no message at all, two calls,
  // text after the call, an analysis that never ends.
  EXPECT_FALSE(accepts(g, analysis + R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 9})"));
  EXPECT_FALSE(accepts(g, "<|channel|>commentary to=functions.rm_rf <|constrain|>json<|message|>{}"));
  EXPECT_FALSE(accepts(g, "<|channel|>final<|message|>Sure.<|channel|>commentary to=functions.rm_rf <|constrain|>json<|message|>{}"));
  EXPECT_FALSE(accepts(g, "<|channel|>final<|message|>Sure.<|start|>assistant to=functions.rm_rf<|channel|>commentary json<|message|>{}"));
  EXPECT_FALSE(accepts(g, "Hello."));
  EXPECT_FALSE(accepts(g, call + call));
  EXPECT_FALSE(accepts(g, call + " and more"));
  EXPECT_FALSE(accepts(g, "<|channel|>analysis<|message|>Hmm"));
  // A reply that starts inside the analysis (the prompt opened it).
  ReplyParserOptions in = o;
  in.starts_in_reasoning = true;
  const std::string gi = strict_auto_grammar(request("auto", false, true), in);
  EXPECT_TRUE(accepts(gi, "Thinking.<|end|><|start|>assistant" + call));
  EXPECT_TRUE(accepts(gi, "Thinking.<|end|><|start|>assistant<|channel|>final<|message|>Hi"));
  EXPECT_FALSE(accepts(gi, call));
  // Whenever the grammar accepts a random reply, the parser reads only valid calls.
  const std::vector<std::string> pieces = {"<|channel|>", "<|start|>assistant", "<|end|>", "analysis<|message|>",
                                           "final<|message|>", "x ", "<|", "commentary to=functions.rm_rf <|constrain|>json<|message|>{}",
                                           "<|channel|>analysis<|message|>", "<|end|><|start|>assistant",
                                           "<|channel|>final<|message|>", call,
                                           R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 0})"};
  int accepted = 0;
  expect_accepted_calls_valid(g, o, pieces, &accepted);
  EXPECT_GT(accepted, 50);
  // Analysis not parsed as reasoning: the parser reads it as content, so it
  // holds no way into a call either.
  ReplyParserOptions plain = o;
  plain.parse_reasoning = false;
  const std::string gp = strict_auto_grammar(request("auto", false, true), plain);
  EXPECT_TRUE(accepts(gp, "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant" + call));
  EXPECT_FALSE(accepts(gp, analysis + call));
  p = parse_reply("<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant" + call, plain);
  ASSERT_EQ(p.tool_calls.size(), 1u) << p.content;
  accepted = 0;
  expect_accepted_calls_valid(gp, plain, pieces, &accepted);
  EXPECT_GT(accepted, 50);
}

}  // namespace
}  // namespace og
