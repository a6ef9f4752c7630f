// The binary driven as a person would: Ctrl-C (SIGINT) during `run` and
// `chat`, stdout on a terminal (a pseudo-terminal), and chat's handling of
// blank, over-long and failing turns and of its reports. Each child is waited
// for with a deadline and killed if it passes it, so no test can hang.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "child_proc.h"
#include "e2e_util.h"

namespace og::e2e {
namespace {

const std::string kGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";


// A generation long enough to be interrupted (stories260K decodes thousands of tokens a second).
const std::vector<std::string> kLong = {"--max-new-tokens", "100000", "--kv-max-capacity", "120000", "--chat", "0"};

TEST(Interrupt, RunStopsCleanlyPrintsTheReportAndExits130) {
  ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf;
  std::vector<std::string> args = {"run", "--model", kGguf, "--prompt", "Once upon a time", "--stats", "json"};
  args.insert(args.end(), kLong.begin(), kLong.end());
  Child c = spawn(args);
  ASSERT_TRUE(c.read_at_least(200, 60)) << c.err();
  ::kill(c.pid, SIGINT);
  const int code = c.finish(60);
  const std::string err = c.err();
  EXPECT_EQ(code, 130) << err;
  EXPECT_NE(err.find("[interrupted]"), std::string::npos) << err;
  EXPECT_EQ(err.find("[cache] after decode"), std::string::npos) << err;  // --stats json: no diagnostics
  const std::string out = c.out_text;
  const nlohmann::json j = nlohmann::json::parse(out.substr(out.rfind('{')));
  EXPECT_EQ(j["stop_reason"], "cancelled");
  EXPECT_GT(j["generated_tokens"].get<int>(), 10);
  EXPECT_LT(j["generated_tokens"].get<int>(), 100000);
  EXPECT_GE(c.out_text.size(), 200u);
}

TEST(Interrupt, ChatKeepsTheTurnAndASecondCtrlCLeaves) {
  ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf;
  // --verbose: the fill lines stay on stderr next to the JSON report.
  std::vector<std::string> args = {"chat", "--model", kGguf, "--stats", "json", "--verbose"};
  args.insert(args.end(), kLong.begin(), kLong.end());
  Child c = spawn(args);
  write_all(c.in, "Once upon a time\n");
  ASSERT_TRUE(c.read_at_least(200, 60)) << c.err();
  ::kill(c.pid, SIGINT);
  ASSERT_TRUE(c.wait_err("[interrupted: the reply so far is kept", 60)) << c.err();
  ASSERT_TRUE(c.wait_err("/120000 tokens]", 10)) << c.err();
  // Back at the prompt: the conversation goes on, then Ctrl-C there leaves.
  write_all(c.in, "/stats\n");
  ASSERT_TRUE(c.wait_err("\"stop_reason\":\"cancelled\"", 30)) << c.err();
  ::kill(c.pid, SIGINT);
  const int code = c.finish(60);
  const std::string err = c.err();
  EXPECT_EQ(code, 130) << err;
  EXPECT_NE(err.find("\n[interrupted]\n"), std::string::npos) << err;
  // The reply was committed: the report (stdout's last line) counts its tokens.
  const std::string out = c.out_text;
  const nlohmann::json j = nlohmann::json::parse(out.substr(out.rfind('{')));
  EXPECT_GT(j["generated_tokens"].get<int>(), 10);
  EXPECT_GT(j["cache_positions"].get<int>(), 15);
}

// On a terminal the streamed text ends its line before the report; a pipe
// receives the text alone (Run.ReferenceContinuationFromGguf: no newline).
TEST(Terminal, GeneratedTextEndsItsLineOnATerminal) {
  ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf;
  Child c = spawn({"run", "--model", kGguf, "--prompt", "Once upon a time", "--max-new-tokens", "20", "--chat", "0"},
                  /*stdout_pty=*/true);
  const int code = c.finish(60);
  EXPECT_EQ(code, 0) << c.err();
  ASSERT_GE(c.out_text.size(), 2u);
  EXPECT_EQ(c.out_text.substr(c.out_text.size() - 2), "\r\n") << c.out_text;  // the pty's newline
  EXPECT_EQ(c.out_text.find("[cache]"), std::string::npos);
}

// Chat details: a blank line (spaces) is not a turn; the JSON report has the
// last turn's stop_reason; --stats-file gets the JSON report, stderr the text.
TEST(ChatDetails, BlankLinesStopReasonAndStatsFile) {
  ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf;
  const std::string file = scratch_dir() + "/chat_stats.json";
  const Proc p = offgraph({"chat", "--model", kGguf, "--max-new-tokens", "5", "--stats-file", file},
                          "   \n\t\nOnce upon a time\n  \n");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(std::count(p.out.begin(), p.out.end(), '\n'), 1) << p.out;  // one reply line
  EXPECT_NE(p.err.find("[stats] prompt tokens: 5, generated tokens: 5, stopped by: length"),
            std::string::npos)
      << p.err;
  EXPECT_EQ(p.err.find("{\""), std::string::npos) << p.err;  // no JSON mixed into the text
  const nlohmann::json j = nlohmann::json::parse(slurp(file));
  EXPECT_EQ(j["stop_reason"], "length");
  EXPECT_EQ(j["generated_tokens"], 5);
  const Proc json = offgraph({"chat", "--model", kGguf, "--max-new-tokens", "5", "--stats", "json"}, "Hi\n");
  EXPECT_NE(split_report(json.out).report.find("\"stop_reason\":\"length\""), std::string::npos) << json.out;
  EXPECT_EQ(json.err, "") << json.err;  // --stats json: stderr carries no diagnostics
  const Proc bad = offgraph({"run", "--model", kGguf, "--prompt", "a", "--max-new-tokens", "2", "--stats-file",
                             scratch_dir() + "/no/such/dir/x.json"});
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_NE(bad.err.find("cannot write the report (--stats-file)"), std::string::npos) << bad.err;
}

// A turn that can never fit says which flag would help (not /reset), and a
// huge line is refused before it is tokenized; a chat whose every turn
// failed exits 1.
TEST(ChatDetails, TurnThatCanNeverFit) {
  ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf;
  std::string longer;
  for (int i = 0; i < 40; ++i) longer += "once upon a time ";
  const Proc p = offgraph({"chat", "--model", kGguf, "--kv-max-capacity", "64", "--max-new-tokens", "5"},
                          longer + "\n");
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_NE(p.err.find("[turn too long: it needs"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("but the cache holds 64, even after /reset; raise --kv-max-capacity]"), std::string::npos)
      << p.err;
  EXPECT_NE(p.err.find("every turn failed (1 of 1)"), std::string::npos) << p.err;
  // 10 MB on one line: refused at once by its size, with the same advice.
  const std::string huge(10 << 20, 'a');
  const auto t0 = std::chrono::steady_clock::now();
  const Proc h = offgraph({"chat", "--model", kGguf, "--max-new-tokens", "5"}, huge + "\nOnce upon a time\n");
  EXPECT_EQ(h.code, 0) << h.err.substr(0, 500);  // the second turn ran
  EXPECT_NE(h.err.find("[turn too long: it needs at least"), std::string::npos) << h.err.substr(0, 500);
  EXPECT_FALSE(h.out.empty());
  std::printf("[ e2e ] 10 MB line refused and a turn run in %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace
}  // namespace og::e2e
