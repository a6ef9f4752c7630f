// Structured output end to end: `serve` with response_format json_schema /
// json_object, llama-server's json_schema and grammar fields, and a required
// tool call on a model whose free text is noise (stories260K at temperature
// 1, and a random-weight Qwen-templated model); every reply not cut by
// max_tokens parses and validates (our validator); `run --json-schema` and
// `--grammar` the same; bad schemas and grammars are a 400 / exit 1 naming
// the field or flag.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "grammar/json_validate.h"
#include "serve_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

using json = nlohmann::ordered_json;

const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

json post(const ServeProc& s, const std::string& path, const json& body, int want = 200) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  auto r = c.Post(path, body.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, want) << r->body;
  return json::parse(r->body, nullptr, false);
}

const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {"name": {"type": "string", "maxLength": 12},
                 "age": {"type": "integer", "minimum": 0, "maximum": 150},
                 "pets": {"type": "array", "items": {"enum": ["cat", "dog"]}, "maxItems": 2}},
  "required": ["name", "age"], "additionalProperties": false})");

TEST(StructuredOutput, ServeJsonSchemaRepliesValidate) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc s({"--model", kStories, "--chat", "chatml", "--kv-max-capacity", "512"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  int validated = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    const json body = {{"messages", {{{"role", "user"}, {"content", "Tell me about Lily."}}}},
                       {"max_tokens", 300}, {"temperature", 1.0}, {"seed", seed},
                       {"response_format", {{"type", "json_schema"},
                                            {"json_schema", {{"name", "person"}, {"schema", kSchema}}}}}};
    const json r = post(s, "/v1/chat/completions", body);
    const std::string reason = r["choices"][0]["finish_reason"];
    if (reason == "length") continue;
    ASSERT_EQ(reason, "stop") << r.dump();
    const std::string text = r["choices"][0]["message"]["content"];
    const json doc = json::parse(text, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << text;
    const grammar::ValidationResult v = grammar::validate_json(doc, kSchema);
    EXPECT_TRUE(v.valid) << text << ": " << v.error;
    ++validated;
  }
  EXPECT_GE(validated, 3);
  // json_object and the grammar field, on completions too.
  json r = post(s, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 200}, {"temperature", 1.0}, {"seed", 3},
                                       {"response_format", {{"type", "json_object"}}}});
  if (r["choices"][0]["finish_reason"] == "stop") {
    const json doc = json::parse(r["choices"][0]["text"].get<std::string>(), nullptr, false);
    EXPECT_TRUE(doc.is_object()) << r.dump();
  }
  r = post(s, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "?"}}}}, {"max_tokens", 20},
                                       {"temperature", 1.0}, {"grammar", "root ::= \"yes\" | \"no\""}});
  const std::string yn = r["choices"][0]["message"]["content"];
  EXPECT_TRUE(yn == "yes" || yn == "no") << r.dump();
  // Refusals name the field.
  json bad = {{"messages", {{{"role", "user"}, {"content", "?"}}}}};
  bad["response_format"] = json::parse(
      R"({"type": "json_schema", "json_schema": {"schema": {"type": "object", "not": {"type": "string"}}}})");
  r = post(s, "/v1/chat/completions", bad, 400);
  EXPECT_NE(r.dump().find("'not'"), std::string::npos) << r.dump();
  r = post(s, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "?"}}}}, {"grammar", "root ::= ("}},
           400);
  EXPECT_EQ(r["error"]["param"], "grammar") << r.dump();
}

// The reply of a request with tool_choice `choice`: 0 when cut by max_tokens,
// else 1 after checking it is one call (of the named function, when named)
// whose arguments parse and, for get_weather, validate against params.
int expect_valid_call(const json& r, const json& choice, const json& params) {
  const std::string reason = r["choices"][0]["finish_reason"];
  if (reason == "length") return 0;
  EXPECT_EQ(reason, "tool_calls") << r.dump();
  const json& msg = r["choices"][0]["message"];
  if (!msg.contains("tool_calls") || msg["tool_calls"].size() != 1) {
    ADD_FAILURE() << "not one call: " << r.dump();
    return 0;
  }
  const json& call = msg["tool_calls"][0];
  const std::string name = call["function"]["name"];
  if (choice.is_object()) {
    EXPECT_EQ(name, "get_weather");
  }
  const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  EXPECT_TRUE(args.is_object()) << r.dump();
  if (name == "get_weather" && args.is_object()) {
    const grammar::ValidationResult v = grammar::validate_json(args, params);
    EXPECT_TRUE(v.valid) << args.dump() << ": " << v.error;
  }
  return 1;
}

// tool_choice required on a Qwen-templated random model: the reply is a call
// whose arguments validate against the tool's parameters.
TEST(StructuredOutput, RequiredToolCallIsAValidCall) {
  synth::SynthSpec spec = synth::tiny_spec(synth::Family::kQwen3);
  spec.tokenizer = "llama3";
  const std::string model = scratch_dir() + "/structured-qwen.gguf";
  synth::write_gguf(spec, model);
  const std::string tmpl = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/Qwen-Qwen2.5-7B-Instruct.jinja";
  ServeProc s({"--model", model, "--chat-template-file", tmpl, "--kv-max-capacity", "1024"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  const json params = json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]})");
  const json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", params}}}},
                      {{"type", "function"}, {"function", {{"name", "get_time"}}}}};
  int calls = 0;
  for (const json& choice : {json("required"), json({{"type", "function"}, {"function", {{"name", "get_weather"}}}})}) {
    for (int seed = 1; seed <= 3; ++seed) {
      const json r = post(s, "/v1/chat/completions",
                          {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"tools", tools},
                           {"tool_choice", choice}, {"parallel_tool_calls", false}, {"max_tokens", 400},
                           {"temperature", 1.0}, {"seed", seed}});
      calls += expect_valid_call(r, choice, params);
    }
  }
  EXPECT_GE(calls, 3);
}

// Mistral's markers are control tokens ([TOOL_CALLS], [ARGS], [CALL_ID] made
// special tokens of a random-weight model): a required or named call is still
// written, in each template's own syntax (Small 3.2: name[CALL_ID]id[ARGS]{...};
// Nemo: a [TOOL_CALLS][...] list), and parses and validates; strict tools under
// auto give calls that validate, or text.
TEST(StructuredOutput, RequiredToolCallMistralControlMarkers) {
  synth::SynthSpec spec = synth::tiny_spec(synth::Family::kQwen3);
  spec.tokenizer = "llama3";
  for (const char* t : {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]",
                        "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"})
    spec.script.tokens.push_back({t, true});
  spec.script.chains = {{"[TOOL_RESULTS]", "[/TOOL_RESULTS]"}};  // a script needs one; the rest of the reply is noise
  spec.tied = false;  // a model with script tokens has its own output matrix
  const std::string model = scratch_dir() + "/structured-mistral.gguf";
  synth::write_gguf(spec, model);
  const json params = json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"]})");
  json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", params}}}},
                {{"type", "function"}, {"function", {{"name", "get_time"}}}}};
  for (const char* name : {"Mistral-Small-3.2-24B-Instruct-2506", "mistralai-Mistral-Nemo-Instruct-2407"}) {
    SCOPED_TRACE(name);
    const std::string tmpl = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/" + name + ".jinja";
    ServeProc s({"--model", model, "--chat-template-file", tmpl, "--kv-max-capacity", "2048"});
    ASSERT_TRUE(s.ready()) << s.stderr_text();
    int calls = 0;
    for (const json& choice : {json("required"), json({{"type", "function"}, {"function", {{"name", "get_weather"}}}}),
                               json("auto")}) {
      json req_tools = tools;
      if (choice == "auto") req_tools[0]["function"]["strict"] = true;
      for (int seed = 1; seed <= 1; ++seed) {  // noise replies under a grammar are slow: one each
        const json r = post(s, "/v1/chat/completions",
                            {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"tools", req_tools},
                             {"tool_choice", choice}, {"parallel_tool_calls", false},
                             {"max_tokens", choice == "auto" ? 60 : 150},  // free noise runs to the limit
                             {"temperature", 1.0}, {"seed", seed}});
        const json& msg = r["choices"][0]["message"];
        if (choice == "auto" && !msg.contains("tool_calls")) {
          // Free text never holds the marker.
          EXPECT_EQ(msg["content"].get<std::string>().find("[TOOL_CALLS]"), std::string::npos) << r.dump();
          continue;
        }
        calls += expect_valid_call(r, choice, params);
      }
    }
    EXPECT_GE(calls, 2);
  }
}

// Gemma 4's calls are not JSON: call:name{key:<|"|>text<|"|>,...} between
// <|tool_call> markers. A random-weight Gemma 4 model under its own template:
// required and named calls parse (our reader of its syntax) and validate.
TEST(StructuredOutput, RequiredToolCallGemma4Syntax) {
  const std::string model = scratch_dir() + "/structured-gemma4.gguf";
  synth::write_gguf(synth::tiny_spec(synth::Family::kGemma4), model);
  const std::string tmpl = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/google-gemma-4-31B-it.jinja";
  // Reasoning off: a noise model may otherwise ramble in the optional thought
  // block until max_tokens (the grammar with the block is covered by unit tests).
  ServeProc s({"--model", model, "--chat-template-file", tmpl, "--kv-max-capacity", "2048", "--reasoning-format",
               "none"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  const json params = json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}, "units": {"enum": ["C", "F"]}},
      "required": ["city", "days"]})");
  const json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", params}}}},
                      {{"type", "function"}, {"function", {{"name", "get_time"}}}}};
  int calls = 0;
  for (const json& choice : {json("required"), json({{"type", "function"}, {"function", {{"name", "get_weather"}}}})}) {
    for (int seed = 1; seed <= 2; ++seed) {
      const json r = post(s, "/v1/chat/completions",
                          {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}, {"tools", tools},
                           {"tool_choice", choice}, {"parallel_tool_calls", false}, {"max_tokens", 200},
                           {"temperature", 1.0}, {"seed", seed}});
      calls += expect_valid_call(r, choice, params);
    }
  }
  EXPECT_GE(calls, 2);
}

TEST(StructuredOutput, RunFlags) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  const std::string schema_file = scratch_dir() + "/person.schema.json";
  std::ofstream(schema_file) << kSchema.dump();
  int validated = 0;
  for (const char* seed : {"1", "2", "3", "4"}) {
    const Proc p = offgraph({"run", "-m", kStories, "-p", "Lily", "--json-schema", schema_file, "-n", "300",
                             "--temp", "1", "-s", seed, "-q"});
    ASSERT_EQ(p.code, 0) << p.err;
    const json doc = json::parse(p.out, nullptr, false);
    if (doc.is_discarded()) continue;  // cut by -n
    EXPECT_TRUE(grammar::validate_json(doc, kSchema).valid) << p.out;
    ++validated;
  }
  EXPECT_GE(validated, 2);
  const std::string g = scratch_dir() + "/yn.gbnf";
  std::ofstream(g) << "root ::= \"yes\" | \"no\"\n";
  Proc p = offgraph({"run", "-m", kStories, "-p", "?", "--grammar", g, "--temp", "1", "-s", "9", "-q"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(p.out == "yes" || p.out == "no") << p.out;
  // Bad inputs: one line, exit 1 (2 for bad usage).
  p = offgraph({"run", "-m", kStories, "-p", "?", "--json-schema", R"({"type": "object", "foo": 1})", "-q"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("'foo'"), std::string::npos) << p.err;
  p = offgraph({"run", "-m", kStories, "-p", "?", "--json-schema", "{not json", "-q"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("not valid JSON"), std::string::npos) << p.err;
  p = offgraph({"run", "-m", kStories, "-p", "?", "--grammar", scratch_dir() + "/missing.gbnf", "-q"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("no such file"), std::string::npos) << p.err;
  p = offgraph({"run", "-m", kStories, "-p", "?", "--grammar", g, "--json-schema", "{}", "-q"});
  EXPECT_EQ(p.code, 2);
}

}  // namespace
}  // namespace og::e2e
