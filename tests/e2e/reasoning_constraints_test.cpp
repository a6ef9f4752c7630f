// Reasoning survives constraints (issue 49 item 3), through `offgraph serve`
// on scripted models (og-synth --script, docs/tools.md) under real chat
// templates, each of which reasons first: Qwen 3 (the model opens <think>),
// QwQ and DeepSeek-R1 (the prompt ends in "<think>\n"), Ministral 3 Reasoning
// ([THINK]), Gemma 4 (its thought channel) and gpt-oss (harmony's analysis
// message). For every format: json_object, json_schema, tool_choice required
// and a named tool let the model reason, then constrain the answer: content
// (or the call's arguments) parses and validates, the reasoning is in
// reasoning_content. max_reasoning_tokens cuts the reasoning and forces its
// close marker; max_tokens inside the reasoning is finish_reason length; with
// thinking off (or a prompt that closed the reasoning) the constrained part
// starts at once; streamed, the reasoning and the answer arrive as their own deltas.
//
// A scripted model follows its chain while the grammar allows it; where the
// grammar refuses its next token it writes the allowed token of lowest id (all
// other logits are equal), which spells the constrained part byte by byte:
// so the schemas here pin every value (enums), and parallel_tool_calls is
// false, for the spelled replies to end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "grammar/json_validate.h"
#include "serve_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

using json = nlohmann::ordered_json;

const std::string kAnswer = "{\"answer\": \"yes\"}";
const std::string kReasoning = "Let me think hard.";

const json kSchema = json::parse(R"({"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}},
  "required": ["answer"], "additionalProperties": false})");
const json kParams = json::parse(R"({"type": "object", "properties": {"city": {"enum": ["Paris"]}},
  "required": ["city"], "additionalProperties": false})");

struct Format {
  std::string name;
  std::string tmpl;                   // tests/template/data/templates/NAME.jinja
  std::vector<std::string> specials;  // script tokens that are control tokens
  std::vector<std::string> plain;     // script tokens printed as text
  std::vector<std::string> chain;     // the trigger, then the reasoning-first reply
  bool tools = true;                  // the template has a tool-call format
  bool json_object = true;            // the scripted answer follows the close marker
  int budget = 1;                     // max_reasoning_tokens that leaves ...
  std::string budget_reasoning;       // ... this reasoning
  json thinking_off;                  // request fields that turn thinking off (null: none)
  json thinking_on = json::object();  // request fields every other request needs to think
};

const std::vector<std::string> kThoughts = {"Let me", " think", " hard."};

std::vector<std::string> cat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<Format> formats() {
  const std::vector<std::string> think_plain = cat({{"<think>", "</think>", "<tool_call>", "</tool_call>", kAnswer},
                                                   kThoughts});
  std::vector<Format> f;
  f.push_back({"qwen3", "Qwen-Qwen3-0.6B", {"<|im_start|>", "<|im_end|>"}, think_plain,
               cat({{"\n", "<think>"}, kThoughts, {"</think>", "\n\n", kAnswer, "<|im_end|>"}}), true, true, 1,
               "Let me", json{{"chat_template_kwargs", {{"enable_thinking", false}}}}});
  f.push_back({"qwq", "Qwen-QwQ-32B", {"<|im_start|>", "<|im_end|>"}, think_plain,
               cat({{"\n"}, kThoughts, {"</think>", "\n\n", kAnswer, "<|im_end|>"}}), true, true, 1, "Let me",
               json{{"chat_template_kwargs", {{"enable_thinking", false}}}}});
  f.push_back({"r1", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", {}, think_plain,
               cat({{"\n"}, kThoughts, {"</think>", "\n\n", kAnswer, "<|eot_id|>"}}), false, true, 2, "Let me think",
               json()});
  f.push_back({"mistral", "mistralai-Ministral-3-14B-Reasoning-2512",
               {"[THINK]", "[/THINK]", "[INST]", "[/INST]", "[TOOL_CALLS]", "[ARGS]", "[SYSTEM_PROMPT]",
                "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"},
               cat({{kAnswer}, kThoughts}), cat({{"[/INST]", "[THINK]"}, kThoughts, {"[/THINK]", kAnswer, "<|eot_id|>"}}),
               true, true, 1, "Let me", json()});
  // Gemma 4's template closes the thought channel in the prompt unless
  // enable_thinking is true.
  f.push_back({"gemma4", "google-gemma-4-31B-it",
               {"<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|think|>", "<|tool_call>", "<tool_call|>",
                "<|\"|>"},
               cat({{kAnswer, "thought"}, kThoughts}),
               cat({{"\n", "<|channel>", "thought"}, kThoughts, {"<channel|>", kAnswer, "<turn|>"}}), true, true, 2,
               "Let me", json{{"chat_template_kwargs", {{"enable_thinking", false}}}},
               json{{"chat_template_kwargs", {{"enable_thinking", true}}}}});
  // gpt-oss: after its analysis message the script would open another (a
  // bigram model cannot tell the second "<|channel|>" from the first), so the
  // final channel's header and the answer are spelled under the grammar.
  f.push_back({"harmony", "openai-gpt-oss-120b",
               {"<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>", "<|constrain|>"},
               cat({{"analysis"}, kThoughts}),
               cat({{"assistant", "<|channel|>", "analysis", "<|message|>"}, kThoughts,
                    {"<|end|>", "<|start|>", "assistant"}}),
               true, false, 1, "Let me", json()});
  return f;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The format's scripted model (written once per test process).
std::string scripted_model(const Format& f) {
  const std::string path = scratch_dir() + "/reasoning-" + f.name + ".gguf";
  if (std::filesystem::exists(path)) return path;
  synth::SynthSpec spec = synth::tiny_spec(synth::Family::kQwen3);
  spec.tokenizer = "llama3";
  spec.tied = false;
  spec.d_model = 32;
  spec.weight_dtype = DType::F16;
  for (const auto& t : f.specials) spec.script.tokens.push_back({t, true});
  for (const auto& t : f.plain) spec.script.tokens.push_back({t, false});
  spec.script.chains = {f.chain};
  spec.chat_template = read_file(std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/" + f.tmpl + ".jinja");
  synth::write_gguf(spec, path);
  return path;
}

json post(const ServeProc& s, const json& body) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body, nullptr, false);
}

json request(const Format& f, const json& extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Is it?"}}}}, {"temperature", 0}, {"max_tokens", 200}};
  for (const auto& [k, v] : f.thinking_on.items()) body[k] = v;
  for (const auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

const json kTools = {{{"type", "function"},
                      {"function", {{"name", "get_weather"}, {"description", "Weather now"}, {"parameters", kParams}}}},
                     {{"type", "function"}, {"function", {{"name", "get_time"}, {"description", "The time"}}}}};

std::string text_of(const json& msg, const char* key) {
  return msg.contains(key) && msg[key].is_string() ? msg[key].get<std::string>() : "";
}

// content parses and validates against schema (null: any object).
void expect_valid_content(const json& r, const json& schema) {
  const json& msg = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
  const json doc = json::parse(text_of(msg, "content"), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.dump();
  if (!schema.is_null()) {
    const grammar::ValidationResult v = grammar::validate_json(doc, schema);
    EXPECT_TRUE(v.valid) << doc.dump() << ": " << v.error;
  }
}

void expect_valid_call(const json& r, const std::string& name) {
  const json& msg = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls") << r.dump();
  ASSERT_TRUE(msg.contains("tool_calls") && msg["tool_calls"].is_array()) << r.dump();
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << r.dump();  // parallel_tool_calls: false
  const json& fn = msg["tool_calls"][0]["function"];
  if (!name.empty()) {
    EXPECT_EQ(fn["name"], name) << r.dump();
  }
  const json args = json::parse(fn["arguments"].get<std::string>(), nullptr, false);
  ASSERT_TRUE(args.is_object()) << r.dump();
  if (fn["name"] == "get_weather") {
    const grammar::ValidationResult v = grammar::validate_json(args, kParams);
    EXPECT_TRUE(v.valid) << args.dump() << ": " << v.error;
  }
}

// Every constraint, reasoning first.
void check_reasons_then_answers(const Format& f, const ServeProc& s) {
  std::vector<std::pair<std::string, json>> cases;
  if (f.json_object) cases.push_back({"json_object", {{"response_format", {{"type", "json_object"}}}}});
  cases.push_back({"json_schema", {{"response_format", {{"type", "json_schema"},
                                                        {"json_schema", {{"name", "a"}, {"schema", kSchema}}}}}}});
  cases.push_back({"llama json_schema", {{"json_schema", kSchema}}});
  if (f.tools) {
    cases.push_back({"required", {{"tools", kTools}, {"tool_choice", "required"}, {"parallel_tool_calls", false}}});
    cases.push_back({"named", {{"tools", kTools},
                               {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                               {"parallel_tool_calls", false}}});
  }
  for (const auto& [what, extra] : cases) {
    SCOPED_TRACE(f.name + " " + what);
    const json r = post(s, request(f, extra));
    const json& msg = r["choices"][0]["message"];
    EXPECT_EQ(text_of(msg, "reasoning_content"), kReasoning) << r.dump();
    if (what == "required" || what == "named") {
      expect_valid_call(r, what == "named" ? "get_weather" : "");
    } else {
      expect_valid_content(r, what == "json_object" ? json() : kSchema);
      if (what == "json_object") {
        EXPECT_EQ(text_of(msg, "content"), kAnswer);
      }
    }
  }
}

// max_reasoning_tokens: the reasoning is cut and closed, the answer follows.
void check_budget(const Format& f, const ServeProc& s) {
  SCOPED_TRACE(f.name + " max_reasoning_tokens");
  json extra = {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", kSchema}}}}},
                {"max_reasoning_tokens", f.budget}};
  json r = post(s, request(f, extra));
  EXPECT_EQ(text_of(r["choices"][0]["message"], "reasoning_content"), f.budget_reasoning) << r.dump();
  expect_valid_content(r, kSchema);
  if (!f.tools) return;
  extra = {{"tools", kTools}, {"tool_choice", "required"}, {"parallel_tool_calls", false},
           {"max_reasoning_tokens", f.budget}};
  r = post(s, request(f, extra));
  EXPECT_EQ(text_of(r["choices"][0]["message"], "reasoning_content"), f.budget_reasoning) << r.dump();
  expect_valid_call(r, "");
}

// max_tokens runs out inside the reasoning: finish_reason length, no answer.
void check_length(const Format& f, const ServeProc& s) {
  SCOPED_TRACE(f.name + " max_tokens in reasoning");
  const json extra = {{"response_format", {{"type", "json_object"}}}, {"max_tokens", 3}};
  const json r = post(s, request(f, extra));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length") << r.dump();
  EXPECT_EQ(text_of(r["choices"][0]["message"], "content"), "") << r.dump();
}

// Thinking off: no reasoning, the constrained part at once.
void check_thinking_off(const Format& f, const ServeProc& s) {
  if (f.thinking_off.is_null()) return;
  for (const bool call : {false, true}) {
    if (call && !f.tools) continue;
    SCOPED_TRACE(f.name + (call ? " thinking off, required call" : " thinking off, json_schema"));
    json extra = f.thinking_off;
    if (call) {
      extra["tools"] = kTools;
      extra["tool_choice"] = "required";
      extra["parallel_tool_calls"] = false;
    } else {
      extra["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", kSchema}}}};
    }
    const json r = post(s, request(f, extra));
    EXPECT_EQ(text_of(r["choices"][0]["message"], "reasoning_content"), "") << r.dump();
    if (call) {
      expect_valid_call(r, "");
    } else {
      expect_valid_content(r, kSchema);
    }
  }
}

// The same streamed: the reasoning arrives as reasoning_content deltas, the
// constrained answer as content deltas.
void check_stream(const Format& f, const ServeProc& s) {
  SCOPED_TRACE(f.name + " streamed json_schema");
  json body = request(f, {{"response_format", {{"type", "json_schema"},
                                               {"json_schema", {{"name", "a"}, {"schema", kSchema}}}}},
                          {"stream", true}});
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  std::string reasoning, content;
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("data: {")) continue;
    const json ev = json::parse(line.substr(6), nullptr, false);
    if (!ev.is_object() || ev["choices"].empty()) continue;
    const json& d = ev["choices"][0]["delta"];
    reasoning += text_of(d, "reasoning_content");
    content += text_of(d, "content");
  }
  EXPECT_EQ(reasoning, kReasoning);
  const json doc = json::parse(content, nullptr, false);
  EXPECT_TRUE(doc.is_object() && grammar::validate_json(doc, kSchema).valid) << content;
}

class ReasoningConstraints : public ::testing::TestWithParam<std::string> {};

TEST_P(ReasoningConstraints, ReasonsThenAnswersUnderEveryConstraint) {
  Format f;
  for (const Format& x : formats())
    if (x.name == GetParam()) f = x;
  ASSERT_FALSE(f.name.empty());
  const std::string model = scripted_model(f);
  ServeProc s({"--model", model, "--chat", "auto", "--kv-max-capacity", "1024"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  check_reasons_then_answers(f, s);
  check_budget(f, s);
  check_length(f, s);
  check_thinking_off(f, s);
  check_stream(f, s);
}

INSTANTIATE_TEST_SUITE_P(Formats, ReasoningConstraints,
                         ::testing::Values("qwen3", "qwq", "r1", "mistral", "gemma4", "harmony"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace og::e2e
