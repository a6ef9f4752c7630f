// Grammar bounds through `serve` (issue 50 item 7): the JSON-schema enum of
// 10,000 integers that was a 500 ("more than 8192 parses are alive") is
// served, and a grammar that only grows too ambiguous mid-reply (every reply
// starts with 14 'b's, each doubling the live parses) is a 400 naming
// limits.max_stacks, an error event on a stream, never a 500.
#include <gtest/gtest.h>

#include <filesystem>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "serve_util.h"

namespace og::e2e {
namespace {

using json = nlohmann::ordered_json;

const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

// a1 ::= "b" a2 "c" | "b" a2 "d", ..., a15 ::= "e": after k 'b's, 2^k parses.
std::string doubling_grammar() {
  std::string g = "root ::= a1\n";
  for (int k = 1; k < 15; ++k) {
    const std::string next = "a" + std::to_string(k + 1);
    g += "a" + std::to_string(k) + " ::= \"b\" " + next + " \"c\" | \"b\" " + next + " \"d\"\n";
  }
  return g + "a15 ::= \"e\"\n";
}

TEST(GrammarLimitsServe, BigEnumIsServedAndMidReplyAmbiguityIsA400) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc s({"--model", kStories, "--chat", "chatml", "--kv-max-capacity", "512"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(60, 0);
  const json msgs = json::array({{{"role", "user"}, {"content", "Pick a number."}}});

  json schema = {{"enum", json::array()}};
  for (int i = 0; i < 10000; ++i) schema["enum"].push_back(i);
  auto r = c.Post("/v1/chat/completions",
                  json({{"messages", msgs}, {"max_tokens", 12}, {"seed", 1}, {"json_schema", schema}}).dump(),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json reply = json::parse(r->body);
  if (reply["choices"][0]["finish_reason"] == "stop") {
    const json n = json::parse(reply["choices"][0]["message"]["content"].get<std::string>(), nullptr, false);
    EXPECT_TRUE(n.is_number_integer() && n.get<int>() >= 0 && n.get<int>() < 10000) << r->body;
  }

  const json body = {{"messages", msgs}, {"max_tokens", 40}, {"grammar", doubling_grammar()}};
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("limits.max_stacks"), std::string::npos) << r->body;

  json streamed = body;
  streamed["stream"] = true;
  r = c.Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"grammar_limit\""), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("engine_failure"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace og::e2e
