// A chat request means the same to `offgraph template` as to the server: the
// command parses its request file with the server's parser (the same
// og::ChatRequest, forms and refusals as /apply-template, /tokenize and
// /v1/chat/completions), so the same file renders to the same text and a bad
// one is refused with the same words.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "serve_util.h"

namespace og::e2e {
namespace {

using nlohmann::json;

const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
const std::string kQwen25 = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/Qwen-Qwen2.5-7B-Instruct.jinja";

std::string write(const std::string& name, const std::string& text) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(TemplateRequest, TheCommandAndTheServerReadAMessageArrayAlike) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc server({"--model", kStories, "--chat-template-file", kQwen25});
  ASSERT_TRUE(server.ready()) << server.stderr_text();
  httplib::Client http("127.0.0.1", server.port());
  // Text parts are joined as the server joins them (the command gave the
  // template the list itself), and a system message's parts too.
  const std::vector<json> requests = {
      {{"messages", {{{"role", "user"}, {"content", "Hi there"}}}}},
      {{"messages",
        {{{"role", "system"}, {"content", {{{"type", "text"}, {"text", "Be "}}, {{"type", "text"}, {"text", "brief."}}}}},
         {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "one"}}, {{"type", "text"}, {"text", " two"}}}}}}},
       {"add_generation_prompt", false}},
  };
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(requests[i].dump());
    const std::string path = write("tr" + std::to_string(i) + ".json", requests[i].dump());
    const Proc p = offgraph({"template", "--model", kStories, "--chat-template-file", kQwen25, "--request", path});
    ASSERT_EQ(p.code, 0) << p.err;
    const auto r = http.Post("/apply-template", requests[i].dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(p.out, json::parse(r->body)["prompt"].get<std::string>());
  }
  // A request the server refuses is refused by the command in its words.
  const json bad = {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}};
  const auto r = http.Post("/apply-template", bad.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 400);
  const std::string words = json::parse(r->body)["error"]["message"];
  const Proc p = offgraph({"template", "--model", kStories, "--chat-template-file", kQwen25, "--request",
                          write("bad-role.json", bad.dump())});
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_NE(p.err.find("--request: " + words), std::string::npos) << p.err << " | server: " << words;
}

}  // namespace
}  // namespace og::e2e
