// Signals and one-line errors of issue 50 on the real binary: `embed` stops
// on SIGINT / SIGTERM as run and batch do (it ignored SIGINT in the
// background and died without a word in the foreground); `serve` ends at once
// on SIGTERM while it is still starting (a read that blocks: before, the
// signal waited for a pipe nobody read); an error message holding newlines
// (a template's raise_exception) is still one line of stderr.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "child_proc.h"
#include "e2e_util.h"

namespace og::e2e {
namespace {

const std::string kStoriesModel = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

// Waits up to `seconds` for the child to exit (stdin left open); its exit
// code, or -1 when it had to be killed.
int wait_exit(Child& c, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
      c.read_some(0);
      if (c.in >= 0) ::close(c.in), c.in = -1;
      ::close(c.out);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    c.read_some(20);
  }
  ::kill(c.pid, SIGKILL);
  ::waitpid(c.pid, &status, 0);
  if (c.in >= 0) ::close(c.in), c.in = -1;
  ::close(c.out);
  return -1;
}

std::string embed_model() {
  const std::string out = scratch_dir() + "/signals-embed-qwen3.gguf";
  if (!std::filesystem::exists(out)) {
    const std::string cmd =
        std::string(OG_BINARY_DIR) + "/og-synth --family qwen3 --embedding --format gguf --out " + out + " >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  return out;
}

TEST(Signals, EmbedWaitingOnStdinStopsOnSigintInTheBackground) {
  const std::string m = embed_model();
  for (const int sig : {SIGINT, SIGTERM}) {
    Child c = spawn({"embed", "--model", m}, false, /*ignore_sigint=*/true);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // reading stdin, which sends nothing
    ::kill(c.pid, sig);
    const int code = wait_exit(c, 10);
    EXPECT_EQ(code, 128 + sig) << c.err();
    EXPECT_EQ(c.err(), "[interrupted]\n");
    EXPECT_EQ(c.out_text, "");
  }
}

TEST(Signals, EmbedStopsBetweenForwardPasses) {
  const std::string m = embed_model();
  const std::string inputs = scratch_dir() + "/signals-embed-inputs.txt";
  {
    std::ofstream f(inputs);
    for (int i = 0; i < 20000; ++i) f << "Once upon a time there was a little cat number " << i << "\n";
  }
  // One forward pass per input: 20,000 passes take seconds (7.6 s on a
  // 2-core machine), far longer than the load and the wait below.
  Child c = spawn({"embed", "--model", m, "--file", inputs, "--batch-rows", "1"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ::kill(c.pid, SIGTERM);
  const int code = wait_exit(c, 10);
  EXPECT_EQ(code, 143) << c.err();
  EXPECT_EQ(c.err(), "[interrupted]\n");
  EXPECT_EQ(c.out_text, "") << "an interrupted embed prints no partial output";
}

TEST(Signals, ServeEndsAtOnceOnSigtermWhileStarting) {
  ASSERT_TRUE(std::filesystem::exists(kStoriesModel)) << "missing test data " << kStoriesModel;
  // A key file that is a FIFO nobody writes: the start-up read blocks, as a
  // read from a hung disk would.
  const std::string fifo = scratch_dir() + "/signals-keys.fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Child c = spawn({"serve", "--model", kStoriesModel, "--host", "127.0.0.1", "--port", "0", "--api-key-file", fifo,
                   "--shutdown-grace-s", "30"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(c.pid, SIGTERM);
  const int code = wait_exit(c, 10);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  EXPECT_EQ(code, 143) << c.err();
  EXPECT_EQ(c.err(), "[serve] SIGTERM while loading the model: stopped before serving\n");
  std::filesystem::remove(fifo);
}

TEST(Signals, AnErrorWithNewlinesIsOneLine) {
  const std::string dir = scratch_dir();
  const std::string tmpl = dir + "/signals-raise.jinja";
  const std::string req = dir + "/signals-raise.json";
  std::ofstream(tmpl) << "{{ raise_exception('first line\\nsecond line\\r\\tthird') }}";
  std::ofstream(req) << R"({"messages": [{"role": "user", "content": "x"}]})";
  const Proc p = offgraph({"template", "--chat-template-file", tmpl, "--request", req});
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_EQ(count(p.err, "\n"), 1u) << p.err;
  EXPECT_NE(p.err.find("first line\\nsecond line\\r\\tthird"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace og::e2e
