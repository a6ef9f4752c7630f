// The bounds of untrusted input as flags (issue 50, "each bound documented
// with its default and flag"): the chat-template render limits in template,
// run, chat, batch and serve, and serve's JSON body and schema limits. Each
// flag changes the bound it names (a limit set low refuses what the default
// accepts, naming the new value), --help shows its default, and a bad value
// is a one-line usage error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "serve_util.h"

namespace og::e2e {
namespace {

using json = nlohmann::ordered_json;

const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::string kRequest = R"({"messages": [{"role": "user", "content": "hi"}]})";

Proc render(const std::string& tmpl, std::vector<std::string> extra) {
  std::vector<std::string> args = {"template", "--chat-template-file", write_file("limits.jinja", tmpl),
                                   "--request", write_file("limits-request.json", kRequest)};
  args.insert(args.end(), extra.begin(), extra.end());
  return offgraph(args);
}

TEST(LimitFlags, TemplateFlagsBoundTheRender) {
  // ~20k loop steps at 64+ units each: well inside the default 2^30 units.
  const std::string busy = "{% for i in range(20000) %}{% if i == 0 %}ok{% endif %}{% endfor %}";
  Proc p = render(busy, {});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, "ok");
  p = render(busy, {"--template-max-work", "100000"});
  EXPECT_EQ(p.code, 1) << p.out;
  EXPECT_NE(p.err.find("work budget (100000 units)"), std::string::npos) << p.err;
  EXPECT_EQ(count(p.err, "\n"), 1u) << p.err;

  p = render("{{ 'x' * 5000 }}", {"--template-max-value-bytes", "4096"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("4096 bytes"), std::string::npos) << p.err;
  EXPECT_EQ(render("{{ 'x' * 5000 }}", {}).code, 0);

  const std::string held = "{% set a = 'x' * 700000 %}{% set b = a ~ a %}{{ b|length }}";
  EXPECT_EQ(render(held, {}).out, "1400000");
  p = render(held, {"--template-max-memory-bytes", "1048576"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("more than 1048576 bytes of memory"), std::string::npos) << p.err;

  // Comparisons of a 50k-item list, each 800k units: seconds of work the
  // budget allows (0 = 64 per value byte), stopped by a 100 ms deadline.
  const std::string slow =
      "{% set l = range(50000)|list %}{% for i in range(1000) %}{% if l == l %}{% endif %}{% endfor %}done";
  p = render(slow, {"--template-max-ms", "100", "--template-max-work", "1000000000000"});
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.err.find("time limit (100 ms)"), std::string::npos) << p.err;
}

TEST(LimitFlags, HelpShowsDefaultsAndBadValuesAreOneLine) {
  const Proc h = offgraph({"serve", "--help"});
  ASSERT_EQ(h.code, 0);
  for (const char* f : {"--template-max-work N", "--template-max-ms N", "--template-max-value-bytes N",
                        "--template-max-memory-bytes N", "--json-max-keys N", "--json-max-depth N",
                        "--schema-max-properties N", "--schema-max-branches N", "--schema-max-enum-values N",
                        "--schema-max-work N"})
    EXPECT_NE(h.out.find(f), std::string::npos) << f;
  for (const char* d : {"(default: 10000)", "(default: 16777216)", "(default: 268435456)", "(default: 4096)",
                        "(default: 64)", "(default: 1024)", "(default: 65536)", "(default: 262144)"})
    EXPECT_NE(h.out.find(d), std::string::npos) << d;
  for (const char* cmd : {"run", "chat", "batch", "template"}) {
    const Proc c = offgraph({cmd, "--help"});
    EXPECT_NE(c.out.find("--template-max-work N"), std::string::npos) << cmd;
    EXPECT_NE(c.out.find("--template-max-ms N"), std::string::npos) << cmd;
  }
  const std::vector<std::vector<std::string>> bad = {
      {"serve", "--model", kStories, "--json-max-keys", "0"},
      {"serve", "--model", kStories, "--json-max-depth", "513"},
      {"serve", "--model", kStories, "--schema-max-work", "x"},
      {"serve", "--model", kStories, "--template-max-ms", "-1"},
      {"run", "--model", kStories, "-p", "a", "--template-max-value-bytes", "10"},
      {"template", "--chat", "harmony", "--template-max-memory-bytes", "1e99"},
  };
  for (const auto& args : bad) {
    const Proc p = offgraph(args);
    EXPECT_EQ(p.code, 2) << args[args.size() - 2];
    EXPECT_EQ(count(p.err, "\n"), 1u) << p.err;
    EXPECT_NE(p.err.find(args[args.size() - 2]), std::string::npos) << p.err;
  }
}

// Posts a one-message chat request with `extra` fields; the status and body.
std::pair<int, std::string> post(httplib::Client& c, const json& extra) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 2}};
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  EXPECT_TRUE(r);
  return r ? std::make_pair(r->status, r->body) : std::make_pair(0, std::string());
}

TEST(LimitFlags, ServeTakesTheJsonLimits) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc s({"--model", kStories, "--chat", "chatml", "--kv-max-capacity", "256", "--json-max-keys", "8",
               "--json-max-depth", "5"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(30, 0);
  json bias = json::object();
  for (int i = 1; i <= 8; ++i) bias[std::to_string(i)] = 0;
  EXPECT_EQ(post(c, {{"logit_bias", bias}}).first, 200);
  bias["9"] = 0;
  auto [status, body] = post(c, {{"logit_bias", bias}});
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("more than 8 keys"), std::string::npos) << body;

  // The body is level 1, the schema 2, then 3 nested item schemas fit; a 4th does not.
  auto nested = [](int levels) {
    json sch = {{"type", "integer"}};
    for (int k = 0; k < levels; ++k) sch = {{"type", "array"}, {"items", sch}, {"maxItems", 1}};
    return sch;
  };
  EXPECT_EQ(post(c, {{"json_schema", nested(3)}}).first, 200);
  std::tie(status, body) = post(c, {{"json_schema", nested(4)}});
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("deeper than 5 levels"), std::string::npos) << body;
  EXPECT_EQ(s.stop(SIGTERM, 30), 143);
}

TEST(LimitFlags, ServeTakesTheSchemaLimits) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc s({"--model", kStories, "--chat", "chatml", "--kv-max-capacity", "256", "--schema-max-properties", "2",
               "--schema-max-branches", "2", "--schema-max-enum-values", "3", "--schema-max-work", "40"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(30, 0);
  auto schema = [&](const json& sch) { return post(c, {{"json_schema", sch}}); };
  auto refused = [&](const json& sch, const std::string& limit) {
    const auto [status, body] = schema(sch);
    EXPECT_EQ(status, 400) << body;
    EXPECT_NE(body.find(limit), std::string::npos) << body;
  };
  const json i = {{"type", "integer"}};
  EXPECT_EQ(schema({{"type", "object"}, {"properties", {{"a", i}, {"b", i}}}}).first, 200);
  refused({{"type", "object"}, {"properties", {{"a", i}, {"b", i}, {"c", i}}}}, "max_properties");
  EXPECT_EQ(schema({{"anyOf", json::array({i, {{"type", "string"}}})}}).first, 200);
  refused({{"anyOf", json::array({i, {{"type", "string"}}, {{"type", "boolean"}}})}}, "max_branches");
  EXPECT_EQ(schema({{"enum", json::array({1, 2, 3})}}).first, 200);
  refused({{"enum", json::array({1, 2, 3, 4})}}, "max_enum_values");
  auto nested = [&](int levels) {
    json sch = i;
    for (int k = 0; k < levels; ++k) sch = {{"type", "array"}, {"items", sch}, {"maxItems", 1}};
    return sch;
  };
  EXPECT_EQ(schema(nested(3)).first, 200);
  refused(nested(45), "max_work");
  EXPECT_EQ(s.stop(SIGTERM, 30), 143);
}

}  // namespace
}  // namespace og::e2e
