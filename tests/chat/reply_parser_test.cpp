// ReplyParser on replies written the way each model family writes them: one
// call, parallel calls, text before a call, nested and non-ASCII arguments,
// reasoning, and malformed calls that must come back as content byte for
// byte; every sample is also fed in random splits, which must not change the
// result.
#include "chat/reply_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace og {
namespace {

using TF = ToolCallFormat;
using RF = ReasoningFormat;

struct Call {
  std::string name, arguments;
};

struct Sample {
  const char* label;
  ReplyFormat format;
  std::string text;
  std::string reasoning, content;
  std::vector<Call> calls;
  bool starts_in_reasoning = false;
  bool parse_tools = true, parse_reasoning = true;
};

constexpr ReplyFormat kHermes{TF::kHermes, RF::kNone};
constexpr ReplyFormat kQwen3{TF::kHermes, RF::kThink};
constexpr ReplyFormat kLlama{TF::kLlama3Json, RF::kNone};
constexpr ReplyFormat kMistral{TF::kMistral, RF::kNone};
constexpr ReplyFormat kMagistral{TF::kMistral, RF::kMistralThink};
constexpr ReplyFormat kGemma{TF::kGemma4, RF::kGemma4Channel};
constexpr ReplyFormat kR1{TF::kNone, RF::kThink};

const std::string kWeatherCall =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris, France\", \"unit\": "
    "\"celsius\"}}\n</tool_call>";
const Call kWeather{"get_weather", R"({"location":"Paris, France","unit":"celsius"})"};

std::vector<Sample> samples() {
  std::vector<Sample> s;
  // --- Hermes / Qwen 2.5 / Qwen 3 ---
  s.push_back({"hermes_one", kHermes, kWeatherCall, "", "", {kWeather}});
  s.push_back({"hermes_two_parallel", kHermes,
               kWeatherCall + "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": "
                              "\"Europe/Paris\"}}\n</tool_call>",
               "",
               "",
               {kWeather, {"get_time", R"({"timezone":"Europe/Paris"})"}}});
  s.push_back({"hermes_text_before", kHermes, "I'll check the current weather in Paris for you.\n" + kWeatherCall, "",
               "I'll check the current weather in Paris for you.", {kWeather}});
  s.push_back({"hermes_nested", kHermes,
               R"(<tool_call>
{"name": "create_event", "arguments": {"title": "Team sync", "attendees": [{"email": "ana@example.com", "optional": false}, {"email": "bo@example.com", "optional": true}], "duration_min": 30, "recurrence": null, "meta": {"priority": 2.5, "tags": ["weekly", "eng"]}}}
</tool_call>)",
               "",
               "",
               {{"create_event",
                 R"({"title":"Team sync","attendees":[{"email":"ana@example.com","optional":false},{"email":"bo@example.com","optional":true}],"duration_min":30,"recurrence":null,"meta":{"priority":2.5,"tags":["weekly","eng"]}})"}}});
  s.push_back({"hermes_non_ascii", kHermes,
               "Je traduis : « Grüße ».\n<tool_call>\n{\"name\": \"translate\", \"arguments\": {\"text\": \"Grüße aus "
               "Köln — 東京へようこそ 🎌\", \"target\": \"ja\"}}\n</tool_call>",
               "",
               "Je traduis : « Grüße ».",
               {{"translate", "{\"text\":\"Grüße aus Köln — 東京へようこそ 🎌\",\"target\":\"ja\"}"}}});
  s.push_back({"hermes2pro_arguments_first", kHermes,
               "<tool_call>\n{\"arguments\": {\"symbol\": \"TSLA\"}, \"name\": \"get_stock_fundamentals\"}\n</tool_call>",
               "",
               "",
               {{"get_stock_fundamentals", R"({"symbol":"TSLA"})"}}});
  s.push_back({"hermes_no_arguments", kHermes, "<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>", "", "",
               {{"get_time", "{}"}}});
  s.push_back({"qwen3_reasoning_call", kQwen3,
               "<think>\nThe user wants the weather in Paris. I should call get_weather with celsius.\n</think>\n\n" +
                   kWeatherCall,
               "The user wants the weather in Paris. I should call get_weather with celsius.",
               "",
               {kWeather}});
  s.push_back({"qwen3_reasoning_only", kQwen3,
               "<think>\nLet me add 2 and 2.\n\nThat is 4.\n</think>\n\n2 + 2 = **4**.", "Let me add 2 and 2.\n\nThat is 4.",
               "2 + 2 = **4**.", {}});
  s.push_back({"qwen3_empty_think", kQwen3, "<think>\n\n</think>\n\nHello! How can I help?", "",
               "Hello! How can I help?", {}});
  s.push_back({"qwq_starts_in_reasoning", kQwen3,
               "Okay, so the user is asking for the meaning of life. Classic.\n</think>\n\nThe answer is 42.",
               "Okay, so the user is asking for the meaning of life. Classic.", "The answer is 42.", {}, true});
  s.push_back({"think_tool_call_inside_reasoning_stays_reasoning", kQwen3,
               "<think>\nMaybe <tool_call> get_weather?\n</think>\n\nIt is sunny.",
               "Maybe <tool_call> get_weather?", "It is sunny.", {}});
  s.push_back({"r1_unclosed_reasoning", kR1, "Hmm, let me consider this carefully.\nFirst, the", 
               "Hmm, let me consider this carefully.\nFirst, the", "", {}, true});
  s.push_back({"r1_closed", kR1, "We need x.\n</think>\n\nx = 3", "We need x.", "x = 3", {}, true});
  s.push_back({"hermes_broken_json", kHermes,
               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}\n</tool_call>", "",
               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}\n</tool_call>", {}});
  s.push_back({"hermes_unterminated", kHermes,
               "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Par", "",
               "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Par", {}});
  s.push_back({"hermes_missing_name", kHermes, "<tool_call>\n{\"arguments\": {\"q\": 1}}\n</tool_call>", "",
               "<tool_call>\n{\"arguments\": {\"q\": 1}}\n</tool_call>", {}});
  s.push_back({"hermes_arguments_not_object", kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": [1, 2]}\n</tool_call>",
               "", "<tool_call>\n{\"name\": \"f\", \"arguments\": [1, 2]}\n</tool_call>", {}});
  s.push_back({"hermes_garbage_after", kHermes, kWeatherCall + "\nI have called the tool. <|im_end|>", "",
               "\nI have called the tool. <|im_end|>", {kWeather}});
  s.push_back({"hermes_text_between", kHermes,
               kWeatherCall + "\nand also\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n", "",
               "\nand also", {kWeather, {"get_time", "{}"}}});
  s.push_back({"hermes_broken_then_good", kHermes,
               "<tool_call>\n{\"name\": \"a\", \n</tool_call>\n" + kWeatherCall, "",
               "<tool_call>\n{\"name\": \"a\", \n</tool_call>", {kWeather}});
  s.push_back({"hermes_stray_close", kHermes, "a </tool_call> b <tool_call", "", "a </tool_call> b <tool_call", {}});
  s.push_back({"qwen3_coder_xml", kHermes,
               "I'll list it.\n<tool_call>\n<function=run_shell>\n<parameter=command>\nls -la /tmp\n</parameter>\n"
               "<parameter=timeout>\n30\n</parameter>\n<parameter=env>\n{\"LANG\": \"C\"}\n</parameter>\n"
               "</function>\n</tool_call>",
               "",
               "I'll list it.",
               {{"run_shell", R"({"command":"ls -la /tmp","timeout":30,"env":{"LANG":"C"}})"}}});
  s.push_back({"think_not_at_start_is_content", kQwen3, "Sure. <think>x</think> done", "",
               "Sure. <think>x</think> done", {}});
  s.push_back({"hermes_empty", kHermes, "", "", "", {}});
  s.push_back({"hermes_html_content", kHermes, "Use <b>bold</b>, and a < b <tool.\n\n", "",
               "Use <b>bold</b>, and a < b <tool.\n\n", {}});
  s.push_back({"hermes_tools_off", kHermes, "Hi\n" + kWeatherCall, "", "Hi\n" + kWeatherCall, {}, false, false});
  s.push_back({"think_reasoning_off", kQwen3, "<think>\nhmm\n</think>\n\nHi", "", "<think>\nhmm\n</think>\n\nHi", {},
               false, true, false});
  s.push_back({"think_starts_in_reasoning_but_off", kQwen3, "hmm\n</think>\n\nHi", "", "hmm\n</think>\n\nHi", {}, true,
               true, false});
  // --- Llama 3.1-3.3 JSON ---
  s.push_back({"llama_one", kLlama, R"({"name": "get_weather", "parameters": {"city": "San Francisco", "days": 3}})", "",
               "", {{"get_weather", R"({"city":"San Francisco","days":3})"}}});
  s.push_back({"llama_python_tag", kLlama,
               R"(<|python_tag|>{"name": "web_search", "parameters": {"query": "Llama 3.1 release date"}})", "", "",
               {{"web_search", R"({"query":"Llama 3.1 release date"})"}}});
  s.push_back({"llama_two_semicolon", kLlama,
               R"({"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_weather", "parameters": {"city": "Tōkyō"}})",
               "",
               "",
               {{"get_weather", R"({"city":"Paris"})"}, {"get_weather", R"({"city":"Tōkyō"})"}}});
  s.push_back({"llama_arguments_key_and_type", kLlama,
               R"({"type": "function", "name": "lookup", "arguments": {"id": 7}})", "", "", {{"lookup", R"({"id":7})"}}});
  s.push_back({"llama_string_parameters", kLlama, R"({"name": "f", "parameters": "{\"a\": 1}"})", "", "",
               {{"f", R"({"a":1})"}}});
  s.push_back({"llama_leading_newlines", kLlama, "\n\n{\"name\": \"ping\", \"parameters\": {}}\n", "", "",
               {{"ping", "{}"}}});
  s.push_back({"llama_json_content", kLlama, R"({"answer": 42, "unit": "km"})", "", R"({"answer": 42, "unit": "km"})", {}});
  s.push_back({"llama_name_only_is_content", kLlama, R"({"name": "John", "age": 30})", "",
               R"({"name": "John", "age": 30})", {}});
  s.push_back({"llama_text", kLlama, "The capital of France is Paris.", "", "The capital of France is Paris.", {}});
  s.push_back({"llama_text_then_json", kLlama, R"(Here: {"name": "f", "parameters": {}})", "",
               R"(Here: {"name": "f", "parameters": {}})", {}});
  s.push_back({"llama_garbage_after", kLlama, R"({"name": "a", "parameters": {}} and more)", "", " and more",
               {{"a", "{}"}}});
  s.push_back({"llama_trailing_semicolon", kLlama, R"({"name": "a", "parameters": {}};)", "", ";", {{"a", "{}"}}});
  s.push_back({"llama_unterminated", kLlama, R"({"name": "a", "parameters": {"x": )", "",
               R"({"name": "a", "parameters": {"x": )", {}});
  s.push_back({"llama_broken_second", kLlama, R"({"name": "a", "parameters": {}}; {"name": 1})", "",
               R"(; {"name": 1})", {{"a", "{}"}}});
  s.push_back({"llama_python_tag_code", kLlama, "<|python_tag|>print(1 + 1)", "", "<|python_tag|>print(1 + 1)", {}});
  // --- Mistral ---
  s.push_back({"mistral_nemo_list", kMistral,
               R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Paris"}, "id": "a1b2c3d4e"}])", "", "",
               {{"get_weather", R"({"location":"Paris"})"}}});
  s.push_back({"mistral_nemo_two", kMistral,
               R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"location": "Paris"}}, {"name": "get_weather", "arguments": {"location": "Lyon"}}])",
               "",
               "",
               {{"get_weather", R"({"location":"Paris"})"}, {"get_weather", R"({"location":"Lyon"})"}}});
  s.push_back({"mistral_small32", kMistral, R"([TOOL_CALLS]get_weather[ARGS]{"location": "Paris", "unit": "celsius"})",
               "", "", {{"get_weather", R"({"location":"Paris","unit":"celsius"})"}}});
  s.push_back({"mistral_devstral_two", kMistral,
               R"([TOOL_CALLS]read_file[ARGS]{"path": "src/main.py"}[TOOL_CALLS]list_dir[ARGS]{"path": "src", "depth": 2})",
               "",
               "",
               {{"read_file", R"({"path":"src/main.py"})"}, {"list_dir", R"({"path":"src","depth":2})"}}});
  s.push_back({"mistral_call_id", kMistral, R"([TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"location": "Paris"})", "",
               "", {{"get_weather", R"({"location":"Paris"})"}}});
  s.push_back({"mistral_text_before", kMistral, "Let me look that up. [TOOL_CALLS]search[ARGS]{\"q\": \"café crème\"}", "",
               "Let me look that up.", {{"search", "{\"q\":\"café crème\"}"}}});
  s.push_back({"mistral_broken", kMistral, R"([TOOL_CALLS]get_weather[ARGS]{"location": "Paris")", "",
               R"([TOOL_CALLS]get_weather[ARGS]{"location": "Paris")", {}});
  s.push_back({"mistral_no_args", kMistral, "[TOOL_CALLS]get_weather", "", "[TOOL_CALLS]get_weather", {}});
  s.push_back({"mistral_bad_list", kMistral, R"([TOOL_CALLS][{"arguments": {}}])", "", R"([TOOL_CALLS][{"arguments": {}}])",
               {}});
  s.push_back({"mistral_args_not_object", kMistral, R"([TOOL_CALLS]f[ARGS][1])", "", R"([TOOL_CALLS]f[ARGS][1])", {}});
  s.push_back({"magistral_think", kMagistral,
               "[THINK]The user wants 2+2. Easy.[/THINK]2 + 2 = 4.", "The user wants 2+2. Easy.", "2 + 2 = 4.", {}});
  s.push_back({"magistral_think_call", kMagistral,
               R"([THINK]Need the weather.[/THINK][TOOL_CALLS]get_weather[ARGS]{"location": "Nice"})", "Need the weather.",
               "", {{"get_weather", R"({"location":"Nice"})"}}});
  // --- Gemma 4 ---
  s.push_back({"gemma_one", kGemma,
               R"(<|tool_call>call:get_weather{location:<|"|>Paris, France<|"|>,unit:<|"|>celsius<|"|>}<tool_call|>)", "",
               "", {kWeather}});
  s.push_back({"gemma_nested", kGemma,
               R"(<|tool_call>call:create_event{attendees:[{email:<|"|>ana@example.com<|"|>,optional:false},{email:<|"|>bo@example.com<|"|>,optional:true}],duration_min:30,meta:{priority:2.5,tags:[<|"|>weekly<|"|>,<|"|>eng<|"|>]},recurrence:None,title:<|"|>Team sync<|"|>}<tool_call|>)",
               "",
               "",
               {{"create_event",
                 R"({"attendees":[{"email":"ana@example.com","optional":false},{"email":"bo@example.com","optional":true}],"duration_min":30,"meta":{"priority":2.5,"tags":["weekly","eng"]},"recurrence":null,"title":"Team sync"})"}}});
  s.push_back({"gemma_two", kGemma,
               R"(<|tool_call>call:get_weather{location:<|"|>Paris<|"|>}<tool_call|><|tool_call>call:get_weather{location:<|"|>Lyon<|"|>}<tool_call|>)",
               "",
               "",
               {{"get_weather", R"({"location":"Paris"})"}, {"get_weather", R"({"location":"Lyon"})"}}});
  s.push_back({"gemma_reasoning_call", kGemma,
               "<|channel>thought\nThe user asks for the weather; call the tool.<channel|><|tool_call>call:get_weather{"
               "location:<|\"|>Paris<|\"|>}<tool_call|>",
               "The user asks for the weather; call the tool.",
               "",
               {{"get_weather", R"({"location":"Paris"})"}}});
  s.push_back({"gemma_reasoning_content", kGemma,
               "<|channel>thought\nA simple greeting.\n<channel|>Hello! How can I help you today?", "A simple greeting.",
               "Hello! How can I help you today?", {}});
  s.push_back({"gemma_text_before", kGemma,
               "Checking now.\n<|tool_call>call:get_time{}<tool_call|>", "", "Checking now.", {{"get_time", "{}"}}});
  s.push_back({"gemma_string_with_syntax", kGemma,
               R"(<|tool_call>call:write_note{text:<|"|>a, b} <tool_call|> c: [d]<|"|>}<tool_call|>)", "", "",
               {{"write_note", R"({"text":"a, b} <tool_call|> c: [d]"})"}}});
  s.push_back({"gemma_numbers_non_ascii", kGemma,
               "<|tool_call>call:locate{lat:-33.86,lon:151.2,name:<|\"|>Zürich 🇨🇭<|\"|>,scale:1e-05}<tool_call|>", "", "",
               {{"locate", "{\"lat\":-33.86,\"lon\":151.2,\"name\":\"Zürich 🇨🇭\",\"scale\":1e-05}"}}});
  s.push_back({"gemma_unterminated", kGemma, R"(<|tool_call>call:get_weather{location:<|"|>Par)", "",
               R"(<|tool_call>call:get_weather{location:<|"|>Par)", {}});
  s.push_back({"gemma_bad_value", kGemma, R"(<|tool_call>call:f{x:maybe}<tool_call|>)", "",
               R"(<|tool_call>call:f{x:maybe}<tool_call|>)", {}});
  s.push_back({"gemma_no_call_prefix", kGemma, R"(<|tool_call>f{}<tool_call|>)", "", R"(<|tool_call>f{}<tool_call|>)",
               {}});
  s.push_back({"gemma_invalid_utf8_string", kGemma, "<|tool_call>call:f{a:<|\"|>\xff\xfe<|\"|>}<tool_call|>", "",
               "<|tool_call>call:f{a:<|\"|>\xff\xfe<|\"|>}<tool_call|>", {}});
  s.push_back({"gemma_quoted_keys_and_spaces", kGemma,
               "<|tool_call>call:f{ <|\"|>my key<|\"|> : [ 1 , true ] , n : null }<tool_call|>", "", "",
               {{"f", R"({"my key":[1,true],"n":null})"}}});
  s.push_back({"gemma_unclosed_thought", kGemma, "<|channel>thought\nStill thinking about", "Still thinking about", "", {}});
  // --- gpt-oss (harmony): the analysis channel is the reasoning, the final channel the content ---
  const ReplyFormat kHarmonyFmt{TF::kNone, RF::kHarmony};
  s.push_back({"harmony_reasoning_content", kHarmonyFmt,
               "<|channel|>analysis<|message|>User greets; reply briefly.<|end|><|start|>assistant<|channel|>final"
               "<|message|>Hello! How can I help?",
               "User greets; reply briefly.", "Hello! How can I help?", {}});
  s.push_back({"harmony_unclosed_analysis", kHarmonyFmt, "<|channel|>analysis<|message|>Still thinking<|end|>",
               "Still thinking<|end|>", "", {}});
  s.push_back({"harmony_no_analysis", kHarmonyFmt, "Plain answer.", "", "Plain answer.", {}});
  // The final channel without analysis before it: its header is not content.
  s.push_back({"harmony_final_first", kHarmonyFmt, "<|channel|>final<|message|>Straight answer.", "",
               "Straight answer.", {}});
  s.push_back({"harmony_final_header_only_at_start", kHarmonyFmt, "Text <|channel|>final<|message|>x", "",
               "Text <|channel|>final<|message|>x", {}});
  // --- gpt-oss tool calls: a message to functions.NAME on the commentary channel, ended by <|call|> ---
  const ReplyFormat kHarmonyTools{TF::kHarmony, RF::kHarmony};
  const Call kOssWeather{"get_weather", R"({"location":"San Francisco"})"};
  s.push_back({"harmony_analysis_then_call", kHarmonyTools,
               "<|channel|>analysis<|message|>Need to use function get_weather.<|end|><|start|>assistant<|channel|>"
               "commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"San Francisco\"}"
               "<|call|>",
               "Need to use function get_weather.", "", {kOssWeather}});
  s.push_back({"harmony_call_without_call_token", kHarmonyTools,  // <|call|> is the stop token: not in the text
               "<|channel|>analysis<|message|>Weather?<|end|><|start|>assistant<|channel|>commentary "
               "to=functions.get_weather <|constrain|>json<|message|>{\"location\": \"San Francisco\"}",
               "Weather?", "", {kOssWeather}});
  s.push_back({"harmony_call_first", kHarmonyTools,
               "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
               "{\"location\":\"San Francisco\"}<|call|>",
               "", "", {kOssWeather}});
  s.push_back({"harmony_recipient_before_channel", kHarmonyTools,
               "<|channel|>analysis<|message|>Call it.<|end|><|start|>assistant to=functions.get_weather<|channel|>"
               "commentary json<|message|>{\"location\":\"San Francisco\"}<|call|>",
               "Call it.", "", {kOssWeather}});
  s.push_back({"harmony_tools_final_answer", kHarmonyTools,
               "<|channel|>analysis<|message|>No tool needed.<|end|><|start|>assistant<|channel|>final<|message|>"
               "Hi there.",
               "No tool needed.", "Hi there.", {}});
  s.push_back({"harmony_tools_final_first", kHarmonyTools, "<|channel|>final<|message|>No tool needed: hi.", "",
               "No tool needed: hi.", {}});
  s.push_back({"harmony_call_bad_json", kHarmonyTools,  // not an object: the message comes back as content
               "<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1, 2]<|call|>", "",
               "<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1, 2]<|call|>", {}});
  s.push_back({"harmony_call_not_parsed", kHarmonyTools,  // no tools asked: the message stays as written
               "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>", "",
               "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>", {}, false, false});
  return s;
}

struct Collected {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
};

// Feeds text cut at the given offsets, checks the shape of every call delta,
// and returns what the deltas add up to.
Collected stream(std::string_view text, const ReplyParserOptions& o, std::vector<size_t> cuts) {
  ReplyParser p(o);
  Collected c;
  auto take = [&](const ReplyDelta& d) {
    c.reasoning += d.reasoning;
    c.content += d.content;
    for (const ToolCallDelta& t : d.tool_calls) {
      if (!t.id.empty()) {
        EXPECT_EQ(t.index, static_cast<int>(c.calls.size()));
        EXPECT_FALSE(t.name.empty());
        EXPECT_EQ(t.arguments, "");
        c.calls.push_back({t.id, t.name, ""});
      } else {
        EXPECT_EQ(t.index + 1, static_cast<int>(c.calls.size()));
        EXPECT_TRUE(t.name.empty());
        if (!c.calls.empty()) c.calls.back().arguments += t.arguments;
      }
    }
  };
  size_t at = 0;
  cuts.push_back(text.size());
  for (size_t cut : cuts) {
    take(p.feed(text.substr(at, cut - at)));
    at = cut;
  }
  take(p.finish());
  EXPECT_EQ(c.reasoning, p.reasoning());
  EXPECT_EQ(c.content, p.content());
  EXPECT_EQ(c.calls, p.tool_calls());
  return c;
}

ReplyParserOptions options_of(const Sample& s) {
  ReplyParserOptions o;
  o.format = s.format;
  o.parse_tools = s.parse_tools;
  o.parse_reasoning = s.parse_reasoning;
  o.starts_in_reasoning = s.starts_in_reasoning;
  o.id_seed = 12345;
  return o;
}

TEST(ReplyParser, RecordedSamples) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.label);
    ParsedReply r = parse_reply(s.text, options_of(s));
    EXPECT_EQ(r.reasoning, s.reasoning);
    EXPECT_EQ(r.content, s.content);
    ASSERT_EQ(r.tool_calls.size(), s.calls.size());
    for (size_t i = 0; i < s.calls.size(); ++i) {
      EXPECT_EQ(r.tool_calls[i].name, s.calls[i].name);
      EXPECT_EQ(r.tool_calls[i].arguments, s.calls[i].arguments);
    }
  }
}

std::vector<size_t> random_cuts(size_t n, std::mt19937& rng) {
  std::vector<size_t> cuts;
  size_t at = 0;
  while (at < n) {
    at += 1 + rng() % 12;
    if (at < n) cuts.push_back(at);
  }
  return cuts;
}

TEST(ReplyParser, AnySplitGivesTheWholeResult) {
  std::mt19937 rng(7);
  for (const Sample& s : samples()) {
    SCOPED_TRACE(s.label);
    ReplyParserOptions o = options_of(s);
    ParsedReply whole = parse_reply(s.text, o);
    std::vector<std::vector<size_t>> splits;
    std::vector<size_t> bytes;
    for (size_t i = 1; i < s.text.size(); ++i) bytes.push_back(i);
    splits.push_back(bytes);
    splits.push_back({});
    for (int k = 0; k < 20; ++k) splits.push_back(random_cuts(s.text.size(), rng));
    for (const auto& cuts : splits) {
      Collected c = stream(s.text, o, cuts);
      EXPECT_EQ(c.reasoning, whole.reasoning);
      EXPECT_EQ(c.content, whole.content);
      EXPECT_EQ(c.calls, whole.tool_calls);
    }
  }
}

TEST(ReplyParser, ReleasesTextAsSoonAsItCannotBeAMarker) {
  ReplyParserOptions o;
  o.format = kQwen3;
  ReplyParser p(o);
  ReplyDelta d = p.feed("<thi");
  EXPECT_TRUE(d.empty());
  d = p.feed("nk>\nStep one");
  EXPECT_EQ(d.reasoning, "Step one");
  d = p.feed(".\n</th");  // the newline may end the block: held
  EXPECT_EQ(d.reasoning, ".");
  d = p.feed("ink>\n\nThe answer <tool");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "The answer");
  d = p.feed("box> is 4");
  EXPECT_EQ(d.content, " <toolbox> is 4");
  d = p.feed("\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call");
  EXPECT_TRUE(d.empty());
  d = p.feed(">");  // the call is released when it is complete, not at finish
  ASSERT_EQ(d.tool_calls.size(), 2u);
  EXPECT_EQ(d.tool_calls[0].name, "f");
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"a":1})");
  EXPECT_TRUE(p.finish().empty());
  EXPECT_EQ(p.content(), "The answer <toolbox> is 4");
}

TEST(ReplyParser, GemmaAndMistralCallsAreReleasedWhenComplete) {
  ReplyParserOptions o;
  o.format = kGemma;
  ReplyParser g(o);
  EXPECT_TRUE(g.feed("<|tool_call>call:f{a:<|\"|>x<tool_call|>").empty());  // inside a string
  EXPECT_EQ(g.feed("<|\"|>}<tool_call|>").tool_calls.size(), 2u);
  o.format = kMistral;
  ReplyParser m(o);
  EXPECT_TRUE(m.feed("[TOOL_CALLS]f[ARGS]{\"a\": {\"b\": 1}").empty());
  ReplyDelta d = m.feed("}");
  ASSERT_EQ(d.tool_calls.size(), 2u);
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"a":{"b":1}})");
}

TEST(ReplyParser, IdsAreUniqueAndShapedForTheFormat) {
  std::string many;
  for (int i = 0; i < 200; ++i) many += "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n";
  ReplyParserOptions o;
  o.format = kHermes;
  ParsedReply r = parse_reply(many, o);
  ASSERT_EQ(r.tool_calls.size(), 200u);
  std::set<std::string> ids;
  for (const ToolCall& c : r.tool_calls) {
    EXPECT_TRUE(std::regex_match(c.id, std::regex("call_[A-Za-z0-9]{24}"))) << c.id;
    ids.insert(c.id);
  }
  EXPECT_EQ(ids.size(), 200u);

  std::string mistral;
  for (int i = 0; i < 200; ++i) mistral += "[TOOL_CALLS]f[ARGS]{}";
  o.format = kMistral;
  r = parse_reply(mistral, o);
  ASSERT_EQ(r.tool_calls.size(), 200u);
  ids.clear();
  for (const ToolCall& c : r.tool_calls) {
    EXPECT_TRUE(std::regex_match(c.id, std::regex("[A-Za-z0-9]{9}"))) << c.id;
    ids.insert(c.id);
  }
  EXPECT_EQ(ids.size(), 200u);

  // The same seed gives the same ids; different seeds differ.
  o.format = kHermes;
  o.id_seed = 99;
  std::string id1 = parse_reply(kWeatherCall, o).tool_calls.at(0).id;
  EXPECT_EQ(parse_reply(kWeatherCall, o).tool_calls.at(0).id, id1);
  o.id_seed = 100;
  EXPECT_NE(parse_reply(kWeatherCall, o).tool_calls.at(0).id, id1);
}

TEST(ReplyParser, DeepNestingIsContentNotACrash) {
  std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  std::string deep_gemma = std::string(100000, '[') + "1" + std::string(100000, ']');
  const std::pair<ReplyFormat, std::string> replies[] = {
      {kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + deep_json + "}}</tool_call>"},
      {kLlama, "{\"name\": \"f\", \"parameters\": {\"a\": " + deep_json + "}}"},
      {kMistral, "[TOOL_CALLS]f[ARGS]{\"a\": " + deep_json + "}"},
      {kGemma, "<|tool_call>call:f{a:" + deep_gemma + "}<tool_call|>"},
  };
  for (const auto& [format, text] : replies) {
    ReplyParserOptions o;
    o.format = format;
    ParsedReply r = parse_reply(text, o);
    EXPECT_TRUE(r.tool_calls.empty());
    EXPECT_EQ(r.content, text);
  }
}

// A call's text is held until it is complete; reading it must not rescan it
// from its start on every token.
TEST(ReplyParser, LongCallsStreamInLinearTime) {
  std::string big(300000, 'x');
  const std::pair<ReplyFormat, std::string> replies[] = {
      {kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"" + big + "\"}}</tool_call>"},
      {kLlama, "{\"name\": \"f\", \"parameters\": {\"a\": \"" + big + "\"}}"},
      {kMistral, "[TOOL_CALLS]f[ARGS]{\"a\": \"" + big + "\"}"},
      {kGemma, "<|tool_call>call:f{a:<|\"|>" + big + "<|\"|>}<tool_call|>"},
      {kQwen3, "<think>" + big + "</think>" + big},
  };
  for (const auto& [format, text] : replies) {
    ReplyParserOptions o;
    o.format = format;
    ReplyParser p(o);
    for (size_t at = 0; at < text.size(); at += 3) p.feed(std::string_view(text).substr(at, 3));
    p.finish();
    EXPECT_EQ(p.tool_calls().size() + p.reasoning().size() / big.size(), 1u);
  }
}

TEST(ReplyParser, MovedParserKeepsItsState) {
  ReplyParserOptions o;
  o.format = kHermes;
  ReplyParser a(o);
  a.feed("Hi <tool_");
  ReplyParser b(std::move(a));
  b.feed("call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>");
  b.finish();
  EXPECT_EQ(b.content(), "Hi");
  EXPECT_EQ(b.tool_calls().size(), 1u);
  ReplyParser c(o);
  c = std::move(b);
  EXPECT_EQ(c.tool_calls().size(), 1u);
}

// parallel_tool_calls: false: the first call only, whole and streamed in any
// split; later calls (separate markers, or a Mistral list) are dropped, text
// between them stays content.
TEST(ReplyParser, OneCallWhenParallelCallsAreOff) {
  const std::string two_hermes = "Checking." + kWeatherCall + " and " +
                                 "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
  const std::string two_mistral =
      R"([TOOL_CALLS] [{"name": "get_weather", "arguments": {"location": "Paris"}}, {"name": "get_time", "arguments": {}}])";
  struct Case {
    ReplyFormat format;
    std::string text, content;
    Call first;
  };
  const std::vector<Case> cases = {{kHermes, two_hermes, "Checking. and", kWeather},
                                   {kMistral, two_mistral, "", {"get_weather", R"({"location":"Paris"})"}}};
  for (const Case& c : cases) {
    ReplyParserOptions o;
    o.format = c.format;
    o.id_seed = 7;
    o.parallel_tool_calls = false;
    for (size_t cut = 0; cut <= c.text.size(); ++cut) {
      SCOPED_TRACE(c.text + " cut at " + std::to_string(cut));
      const Collected got = stream(c.text, o, {cut});
      ASSERT_EQ(got.calls.size(), 1u);
      EXPECT_EQ(got.calls[0].name, c.first.name);
      EXPECT_EQ(got.calls[0].arguments, c.first.arguments);
      EXPECT_EQ(got.content, c.content);
    }
    o.parallel_tool_calls = true;  // the default: both
    EXPECT_EQ(stream(c.text, o, {}).calls.size(), 2u);
  }
}

TEST(ReplyParser, PromptOpensReasoning) {
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", RF::kThink));
  EXPECT_TRUE(prompt_opens_reasoning("<｜Assistant｜><think>\n", RF::kThink));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", RF::kThink));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n", RF::kThink));
  EXPECT_FALSE(prompt_opens_reasoning("Wrap thoughts in <think> tags.<|im_start|>assistant\n", RF::kThink));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", RF::kNone));
  EXPECT_TRUE(prompt_opens_reasoning("<|turn>model\n<|channel>thought\n", RF::kGemma4Channel));
  EXPECT_FALSE(prompt_opens_reasoning("<|turn>model\n<|channel>thought\n<channel|>", RF::kGemma4Channel));
  EXPECT_TRUE(prompt_opens_reasoning("[INST]hi[/INST][THINK]", RF::kMistralThink));
}

}  // namespace
}  // namespace og
