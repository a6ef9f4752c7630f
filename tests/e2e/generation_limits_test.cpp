// One bound and one message per mistake at every edge (runtime/generation_limits.h):
// the same out-of-range sampler setting sent to the server (400), given to a
// command (exit 2) and to the C API (OG_ERR_INVALID_ARGUMENT, so Python too)
// is refused with the same words after each edge's name for the field. The
// limits on untrusted input (runtime/input_limits.h: chat-template render and
// JSON schema limits) likewise: the commands' --template-max-* and
// --schema-max-* flags (exit 2) and og_set_limits (so Python's set_limits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "offgraph/offgraph.h"
#include "serve_util.h"

namespace og::e2e {
namespace {

using nlohmann::json;

const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

struct Case {
  std::string json_field, flag, c_field;
  double value;
  std::string words;  // what follows the field's name
  void (*set)(og_generate_options& o, double v);
};

const Case kCases[] = {
    {"temperature", "--temperature", "sampler.temperature", 3, "is 3, outside [0, 2]",
     [](og_generate_options& o, double v) { o.sampler.temperature = v; }},
    {"top_p", "--top-p", "sampler.top_p", 0, "is 0, outside (0, 1]",
     [](og_generate_options& o, double v) { o.sampler.top_p = v; }},
    {"min_p", "--min-p", "sampler.min_p", 1.5, "is 1.5, outside [0, 1]",
     [](og_generate_options& o, double v) { o.sampler.min_p = v; }},
    {"presence_penalty", "--presence-penalty", "sampler.presence_penalty", -2.5, "is -2.5, outside [-2, 2]",
     [](og_generate_options& o, double v) { o.sampler.presence_penalty = v; }},
    {"repetition_penalty", "--repeat-penalty", "sampler.repeat_penalty", 101, "is 101, outside (0, 100]",
     [](og_generate_options& o, double v) { o.sampler.repeat_penalty = v; }},
    {"max_tokens", "--max-new-tokens", "max_new_tokens", -1, "is -1, outside [0, 2147483647]",
     [](og_generate_options& o, double v) { o.max_new_tokens = static_cast<int64_t>(v); }},
};

std::string number(double v) {
  json j = v;
  std::string s = j.dump();
  if (s.size() > 2 && s.substr(s.size() - 2) == ".0") s.resize(s.size() - 2);
  return s;
}

TEST(GenerationLimits, SameBadValueSameBoundAndWordsAtEveryEdge) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc server({"--model", kStories});
  ASSERT_TRUE(server.ready()) << server.stderr_text();
  httplib::Client http("127.0.0.1", server.port());
  og_model* model = nullptr;
  ASSERT_EQ(og_model_open(kStories.c_str(), nullptr, &model), OG_OK) << og_last_error();
  og_session* session = nullptr;
  ASSERT_EQ(og_session_new(model, nullptr, &session), OG_OK) << og_last_error();
  const int32_t prompt[] = {1, 403};

  for (const Case& c : kCases) {
    SCOPED_TRACE(c.json_field);
    // The server: 400 naming the JSON field.
    json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
    body[c.json_field] = c.json_field == "max_tokens" ? json(static_cast<int64_t>(c.value)) : json(c.value);
    const auto r = http.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400);
    const json err = json::parse(r->body)["error"];
    EXPECT_EQ(err["param"], c.json_field);
    EXPECT_EQ(err["message"], "'" + c.json_field + "' " + c.words);
    // A command: exit 2 naming the flag.
    const Proc p = offgraph({"run", "--model", kStories, "--prompt", "a", c.flag + "=" + number(c.value)});
    EXPECT_EQ(p.code, 2) << p.err;
    EXPECT_NE(p.err.find(c.flag + " " + c.words), std::string::npos) << p.err;
    // The C API: OG_ERR_INVALID_ARGUMENT naming the option field.
    og_generate_options o;
    og_generate_options_init(&o);
    c.set(o, c.value);
    og_generation g{};
    EXPECT_EQ(og_session_generate(session, prompt, 2, &o, &g), OG_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(og_last_error()), c.c_field + " " + c.words);
  }
  og_session_free(session);
  og_model_close(model);
}

// A token id past the vocabulary (stories260K has 512) or below 0 is one
// message at every edge that takes ids (runtime/token_ids.h), after the
// edge's name for the field: a completion prompt of ids, /detokenize, Ollama's
// context, logit_bias, the C API (so Python) and `offgraph detokenize`.
TEST(GenerationLimits, ABadTokenIdIsOneMessageAtEveryEdge) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc server({"--model", kStories});
  ASSERT_TRUE(server.ready()) << server.stderr_text();
  httplib::Client http("127.0.0.1", server.port());
  og_model* model = nullptr;
  ASSERT_EQ(og_model_open(kStories.c_str(), nullptr, &model), OG_OK) << og_last_error();
  og_session* session = nullptr;
  ASSERT_EQ(og_session_new(model, nullptr, &session), OG_OK) << og_last_error();
  for (const int32_t bad : {600, -1}) {
    const std::string words = "token id " + std::to_string(bad) + " is out of range [0, 512)";
    SCOPED_TRACE(words);
    auto refused = [&](const char* path, const json& body, const std::string& param, const std::string& field) {
      const auto r = http.Post(path, body.dump(), "application/json");
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 400) << r->body;
      const json j = json::parse(r->body);
      const json err = j.contains("error") && j["error"].is_object() ? j["error"] : j;
      const std::string message = err.value("message", err.value("error", ""));
      EXPECT_EQ(message, "'" + field + "': " + words) << r->body;
      if (err.contains("param")) {
        EXPECT_EQ(err["param"], param);
      }
    };
    refused("/v1/completions", {{"prompt", {1, bad}}, {"max_tokens", 1}}, "prompt", "prompt[1]");
    refused("/detokenize", {{"tokens", {1, bad}}}, "tokens", "tokens[1]");
    refused("/v1/chat/completions",
            {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"logit_bias", {{std::to_string(bad), 1}}}},
            "logit_bias", "logit_bias");
    refused("/api/generate", {{"model", "stories260K"}, {"prompt", "a"}, {"context", {1, bad}}, {"stream", false}},
            "context", "context[1]");
    const int32_t prompt[] = {1, bad};
    og_generation g{};
    EXPECT_EQ(og_session_generate(session, prompt, 2, nullptr, &g), OG_ERR_OUT_OF_RANGE);
    EXPECT_EQ(std::string(og_last_error()), "prompt[1]: " + words);
    const Proc p = offgraph({"detokenize", "--model", kStories, "1," + std::to_string(bad)});
    EXPECT_EQ(p.code, 2) << p.err;
    EXPECT_NE(p.err.find(words), std::string::npos) << p.err;
  }
  og_session_free(session);
  og_model_close(model);
}

struct InputCase {
  std::string c_field;  // og_limits' field; the flag is it with '-'
  int64_t value;
  std::string words;
  std::vector<std::vector<std::string>> commands;  // the commands that take the flag (the flag is appended)
  void (*set)(og_limits& l, int64_t v);
};

TEST(GenerationLimits, InputLimitsMeetTheSameBoundAndWordsAtEveryEdge) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  const std::vector<std::string> run = {"run", "--model", kStories, "--prompt", "a"};
  const std::vector<std::string> serve = {"serve", "--model", kStories, "--port", "0"};
  const std::vector<std::string> tmpl = {"template", "--model", kStories};
  const InputCase cases[] = {
      {"template_max_value_bytes", 5, "is 5, outside [1024, 4294967296]", {run, serve, tmpl},
       [](og_limits& l, int64_t v) { l.template_max_value_bytes = v; }},
      {"template_max_ms", -1, "is -1, outside [0, 3600000]", {run, serve, tmpl},
       [](og_limits& l, int64_t v) { l.template_max_ms = v; }},
      {"template_max_memory_bytes", int64_t{1} << 41, "is 2199023255552, outside [1048576, 1099511627776]",
       {run, tmpl},
       [](og_limits& l, int64_t v) { l.template_max_memory_bytes = v; }},
      {"schema_max_work", 0, "is 0, outside [1, 1073741824]", {serve},
       [](og_limits& l, int64_t v) { l.schema_max_work = v; }},
      {"schema_max_enum_values", (int64_t{1} << 24) + 1, "is 16777217, outside [1, 16777216]", {serve},
       [](og_limits& l, int64_t v) { l.schema_max_enum_values = v; }},
  };
  og_limits before;
  og_limits_init(&before);
  ASSERT_EQ(og_get_limits(&before), OG_OK) << og_last_error();
  for (const InputCase& c : cases) {
    SCOPED_TRACE(c.c_field);
    std::string flag = "--" + c.c_field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    for (std::vector<std::string> args : c.commands) {
      args.push_back(flag + "=" + std::to_string(c.value));
      const Proc p = offgraph(args);
      EXPECT_EQ(p.code, 2) << args[0] << ": " << p.err;
      EXPECT_NE(p.err.find(flag + " " + c.words), std::string::npos) << args[0] << ": " << p.err;
    }
    og_limits l;
    og_limits_init(&l);
    c.set(l, c.value);
    EXPECT_EQ(og_set_limits(&l), OG_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(og_last_error()), "og_limits." + c.c_field + " " + c.words);
  }
  og_limits after;
  og_limits_init(&after);
  ASSERT_EQ(og_get_limits(&after), OG_OK) << og_last_error();
  EXPECT_EQ(std::memcmp(&before, &after, sizeof before), 0) << "a refused og_set_limits changed the limits";
}

}  // namespace
}  // namespace og::e2e
