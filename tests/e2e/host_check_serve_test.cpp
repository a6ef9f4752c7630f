// `offgraph serve`'s HTTP edge end to end (issue 50 items 11 and 12): the
// DNS-rebinding repro (a foreign Host is a 403), --host-allow, its usage
// error, and a lower-case Bearer scheme, through curl against the binary.
#include <gtest/gtest.h>

#include <filesystem>

#include "serve_util.h"

namespace og::e2e {
namespace {

const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
const std::string kChat = R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})";

// curl's status and body for a POST to /v1/chat/completions with these headers.
std::pair<std::string, std::string> post(const ServeProc& s, const std::vector<std::string>& headers) {
  std::vector<std::string> argv = {"curl", "-s", "-m", "20", "-w", "\n%{http_code}", "-H", "Content-Type: text/plain",
                                   "-d", kChat};
  for (const std::string& h : headers) {
    argv.push_back("-H");
    argv.push_back(h);
  }
  argv.push_back(s.url() + "/v1/chat/completions");
  const Proc p = run_tool(argv);
  const size_t nl = p.out.rfind('\n');
  if (nl == std::string::npos) return {"", p.out + p.err};
  return {p.out.substr(nl + 1), p.out.substr(0, nl)};
}

TEST(ServeHostCheck, ForeignHostIs403AndHostAllowAddsNames) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc s({"--model", kStories, "--host-allow", "api.example.com"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  const auto evil = post(s, {"Host: evil.example", "Origin: http://evil.example"});
  EXPECT_EQ(evil.first, "403") << evil.second;
  EXPECT_NE(evil.second.find("host_not_allowed"), std::string::npos) << evil.second;
  EXPECT_EQ(post(s, {"Host: api.example.com:443"}).first, "200");
  EXPECT_EQ(post(s, {"Host: localhost:8080"}).first, "200");
  EXPECT_EQ(post(s, {}).first, "200");  // curl names 127.0.0.1:PORT
  EXPECT_EQ(s.stop(), 143);
}

TEST(ServeHostCheck, BearerInLowerCaseAndBadHostAllow) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc s({"--model", kStories, "--api-key", "k1"});
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  EXPECT_EQ(post(s, {"Authorization: bearer k1"}).first, "200");
  EXPECT_EQ(post(s, {"Authorization: bearer k2"}).first, "401");
  // With a key and no --host-allow the Host check is off (a page cannot know the key).
  EXPECT_EQ(post(s, {"Authorization: Bearer k1", "Host: proxy.example"}).first, "200");
  EXPECT_EQ(s.stop(), 143);
  const Proc bad = offgraph({"serve", "--model", kStories, "--host-allow", "a b"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--host-allow: 'a b' is not a host name or IP address"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace og::e2e
