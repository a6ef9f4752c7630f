// The library's chat (og_session_chat, offgraph.h) gives the same reply as
// POST /v1/chat/completions of `offgraph serve` for the same request: the
// same content, reasoning_content, tool calls (names and arguments; ids are
// drawn), finish_reason and usage. On scripted models (og-synth --script)
// under real templates whose replies reason first (Qwen 3's think tags,
// Ministral 3 Reasoning's [THINK] with control-token markers, gpt-oss's
// harmony channels), for free text, tools under auto, required and named
// calls, json_schema and json_object, thinking off; and seeded sampling on a
// real model (stories260K, raw text) at temperature 0.9.
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "offgraph/offgraph.h"
#include "serve_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

using json = nlohmann::ordered_json;

// A JSON chat request (OpenAI's shape) as og_chat_request; owns the strings.
class CRequest {
 public:
  explicit CRequest(const json& body) {
    og_chat_request_init(&q_);
    for (const json& m : body["messages"]) {
      og_chat_msg c{};
      c.role = keep(m["role"]);
      c.content = m.contains("content") ? keep(m["content"]) : nullptr;
      c.reasoning_content = m.contains("reasoning_content") ? keep(m["reasoning_content"]) : nullptr;
      c.tool_call_id = m.contains("tool_call_id") ? keep(m["tool_call_id"]) : nullptr;
      if (m.contains("tool_calls")) {
        auto& calls = calls_.emplace_back();
        for (const json& t : m["tool_calls"])
          calls.push_back({keep(t["id"]), keep(t["function"]["name"]), keep(t["function"]["arguments"])});
        c.tool_calls = calls.data();
        c.n_tool_calls = calls.size();
      }
      msgs_.push_back(c);
    }
    if (body.contains("tools"))
      for (const json& t : body["tools"]) {
        const json& f = t["function"];
        tools_.push_back({keep(f["name"]), f.contains("description") ? keep(f["description"]) : nullptr,
                          f.contains("parameters") ? keep(f["parameters"].dump()) : nullptr, 0});
      }
    q_.messages = msgs_.data();
    q_.n_messages = msgs_.size();
    q_.tools = tools_.data();
    q_.n_tools = tools_.size();
    if (body.contains("tool_choice"))
      q_.tool_choice = body["tool_choice"].is_string() ? keep(body["tool_choice"])
                                                       : keep(body["tool_choice"]["function"]["name"]);
    if (body.contains("parallel_tool_calls")) q_.parallel_tool_calls = body["parallel_tool_calls"].get<bool>() ? 1 : 0;
    if (body.contains("response_format")) {
      const json& rf = body["response_format"];
      q_.response_format = keep(rf["type"]);
      if (rf.contains("json_schema")) q_.json_schema = keep(rf["json_schema"]["schema"].dump());
    }
    if (body.contains("chat_template_kwargs")) q_.chat_template_kwargs = keep(body["chat_template_kwargs"].dump());
    if (body.contains("max_reasoning_tokens")) q_.max_reasoning_tokens = body["max_reasoning_tokens"].get<int64_t>();
  }
  const og_chat_request* get() const { return &q_; }

 private:
  const char* keep(const json& v) { return strings_.emplace_back(v.is_string() ? v.get<std::string>() : v.dump()).c_str(); }
  const char* keep(const std::string& s) { return strings_.emplace_back(s).c_str(); }

  std::deque<std::string> strings_;
  std::deque<std::vector<og_chat_tool_call>> calls_;
  std::vector<og_chat_msg> msgs_;
  std::vector<og_chat_tool> tools_;
  og_chat_request q_{};
};

// The library's reply in the server's shape (ids left out on both sides).
json library_reply(og_model* model, const json& body) {
  og_session_options so;
  og_session_options_init(&so);
  so.kv_max_capacity = 1024;
  og_session* s = nullptr;
  EXPECT_EQ(og_session_new(model, &so, &s), OG_OK) << og_last_error();
  og_generate_options g;
  og_generate_options_init(&g);
  g.max_new_tokens = body["max_tokens"].get<int64_t>();
  g.sampler.temperature = body["temperature"].get<double>();
  if (body.contains("seed")) g.sampler.seed = body["seed"].get<int64_t>();
  const CRequest req(body);
  og_chat_result r{};
  const og_status st = og_session_chat(s, req.get(), &g, &r);
  EXPECT_EQ(st, OG_OK) << og_last_error();
  json msg = {{"content", std::string(r.content.data ? r.content.data : "", r.content.len)}};
  if (r.reasoning_content.len > 0) msg["reasoning_content"] = std::string(r.reasoning_content.data, r.reasoning_content.len);
  for (size_t i = 0; i < r.n_tool_calls; ++i)
    msg["tool_calls"].push_back({{"name", std::string(r.tool_calls[i].name.data, r.tool_calls[i].name.len)},
                                 {"arguments", std::string(r.tool_calls[i].arguments.data, r.tool_calls[i].arguments.len)}});
  json out = {{"message", msg},
              {"finish_reason", r.finish_reason ? r.finish_reason : ""},
              {"usage", {{"prompt_tokens", r.prompt_tokens}, {"completion_tokens", r.completion_tokens}}}};
  og_chat_result_free(&r);
  og_session_free(s);
  return out;
}

json server_reply(const ServeProc& p, const json& body) {
  httplib::Client c("127.0.0.1", p.port());
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  if (!r || r->status != 200) return json();
  const json j = json::parse(r->body);
  const json& m = j["choices"][0]["message"];
  json msg = {{"content", m["content"].is_string() ? m["content"].get<std::string>() : ""}};
  if (m.contains("reasoning_content") && m["reasoning_content"].is_string() && !m["reasoning_content"].get<std::string>().empty())
    msg["reasoning_content"] = m["reasoning_content"];
  if (m.contains("tool_calls"))
    for (const json& t : m["tool_calls"])
      msg["tool_calls"].push_back({{"name", t["function"]["name"]}, {"arguments", t["function"]["arguments"]}});
  return {{"message", msg},
          {"finish_reason", j["choices"][0]["finish_reason"]},
          {"usage", {{"prompt_tokens", j["usage"]["prompt_tokens"]}, {"completion_tokens", j["usage"]["completion_tokens"]}}}};
}

struct Format {
  std::string name, tmpl;
  std::vector<std::string> specials, plain, chain;
  bool tools = true;
  json thinking_off;  // null: none
};

std::vector<std::string> join(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::string kAnswer = "{\"answer\": \"yes\"}";
const std::vector<std::string> kThoughts = {"Let me", " think", " hard."};

std::vector<Format> formats() {
  std::vector<Format> f;
  f.push_back({"qwen3", "Qwen-Qwen3-0.6B", {"<|im_start|>", "<|im_end|>"},
               join({{"<think>", "</think>", "<tool_call>", "</tool_call>", kAnswer}, kThoughts}),
               join({{"\n", "<think>"}, kThoughts, {"</think>", "\n\n", kAnswer, "<|im_end|>"}}), true,
               json{{"enable_thinking", false}}});
  f.push_back({"mistral", "mistralai-Ministral-3-14B-Reasoning-2512",
               {"[THINK]", "[/THINK]", "[INST]", "[/INST]", "[TOOL_CALLS]", "[ARGS]", "[SYSTEM_PROMPT]",
                "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"},
               join({{kAnswer}, kThoughts}), join({{"[/INST]", "[THINK]"}, kThoughts, {"[/THINK]", kAnswer, "<|eot_id|>"}}),
               true, json()});
  f.push_back({"harmony", "openai-gpt-oss-120b",
               {"<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>", "<|constrain|>"},
               join({{"analysis"}, kThoughts}),
               join({{"assistant", "<|channel|>", "analysis", "<|message|>"}, kThoughts, {"<|end|>", "<|start|>", "assistant"}}),
               true, json()});
  return f;
}

std::string scripted_model(const Format& f) {
  const std::string path = scratch_dir() + "/libchat-" + f.name + ".gguf";
  if (std::filesystem::exists(path)) return path;
  synth::SynthSpec spec = synth::tiny_spec(synth::Family::kQwen3);
  spec.tokenizer = "llama3";
  spec.tied = false;
  spec.d_model = 32;
  spec.weight_dtype = DType::F16;
  for (const auto& t : f.specials) spec.script.tokens.push_back({t, true});
  for (const auto& t : f.plain) spec.script.tokens.push_back({t, false});
  spec.script.chains = {f.chain};
  spec.chat_template = slurp(std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/" + f.tmpl + ".jinja");
  synth::write_gguf(spec, path);
  return path;
}

const json kSchema = json::parse(R"({"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}},
  "required": ["answer"], "additionalProperties": false})");
const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters":
    {"type": "object", "properties": {"city": {"enum": ["Paris"]}}, "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "description": "The time"}}])");

std::vector<std::pair<std::string, json>> cases(const Format& f) {
  std::vector<std::pair<std::string, json>> c;
  c.push_back({"text", json::object()});
  c.push_back({"json_schema", {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", kSchema}}}}}}});
  c.push_back({"json_object budget 1", {{"response_format", {{"type", "json_object"}}}, {"max_reasoning_tokens", 1}}});
  if (f.tools) {
    c.push_back({"auto", {{"tools", kTools}}});
    c.push_back({"required", {{"tools", kTools}, {"tool_choice", "required"}, {"parallel_tool_calls", false}}});
    c.push_back({"named", {{"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
                           {"parallel_tool_calls", false}}});
  }
  if (!f.thinking_off.is_null())
    c.push_back({"thinking off", {{"chat_template_kwargs", f.thinking_off},
                                  {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", kSchema}}}}}}});
  return c;
}

class LibraryChat : public ::testing::TestWithParam<std::string> {};

TEST_P(LibraryChat, SameReplyAsTheServer) {
  Format f;
  for (const Format& x : formats())
    if (x.name == GetParam()) f = x;
  ASSERT_FALSE(f.name.empty());
  const std::string path = scripted_model(f);
  ServeProc server({"--model", path, "--chat", "auto", "--kv-max-capacity", "1024"});
  ASSERT_TRUE(server.ready()) << server.stderr_text();
  og_model* model = nullptr;
  ASSERT_EQ(og_model_open(path.c_str(), nullptr, &model), OG_OK) << og_last_error();
  for (const auto& [what, extra] : cases(f)) {
    SCOPED_TRACE(f.name + " " + what);
    json body = {{"messages", {{{"role", "user"}, {"content", "Is it?"}}}}, {"temperature", 0}, {"max_tokens", 120}};
    for (const auto& [k, v] : extra.items()) body[k] = v;
    const json lib = library_reply(model, body);
    EXPECT_EQ(lib, server_reply(server, body)) << body.dump();
  }
  og_model_close(model);
}

INSTANTIATE_TEST_SUITE_P(Formats, LibraryChat, ::testing::Values("qwen3", "mistral", "harmony"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// Seeded sampling: the same tokens as the server's for the same seed.
TEST(LibraryChatSampled, SameSeedSameReplyAsTheServer) {
  const std::string path = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
  ASSERT_TRUE(std::filesystem::exists(path)) << "the test model is missing: " << path;
  ServeProc server({"--model", path, "--kv-max-capacity", "512"});
  ASSERT_TRUE(server.ready()) << server.stderr_text();
  og_model* model = nullptr;
  ASSERT_EQ(og_model_open(path.c_str(), nullptr, &model), OG_OK) << og_last_error();
  std::vector<std::string> texts;
  for (const int seed : {1, 7}) {
    const json body = {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"temperature", 0.9},
                       {"top_p", 1}, {"top_k", 0}, {"min_p", 0}, {"repetition_penalty", 1}, {"seed", seed},
                       {"max_tokens", 40}};
    const json lib = library_reply(model, body);
    EXPECT_EQ(lib, server_reply(server, body)) << seed;
    texts.push_back(lib["message"]["content"].get<std::string>());
  }
  EXPECT_NE(texts[0], texts[1]);  // sampled, not greedy
  og_model_close(model);
}

}  // namespace
}  // namespace og::e2e
