// The shared flag table (apps/shared_flags.h) seen from outside: the same
// mistake gets the same exit code and the same message in every command that
// takes the flag, and og-synth parses with the same library.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace og::e2e {
namespace {

const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

void expect_data() { ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories; }

std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += a + " ";
  return s;
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Each command with what it needs besides --model to reach the model check.
struct Cmd {
  std::vector<std::string> head;  // command and flags before --model
  std::vector<std::string> tail;  // after the model
};

const std::vector<Cmd>& model_commands() {
  static const std::vector<Cmd> cmds = {
      {{"run"}, {"--prompt", "x"}},          {{"chat"}, {}},
      {{"batch"}, {"x"}},                    {{"serve"}, {"--port", "0"}},
      {{"bench"}, {"-p", "1", "-n", "0"}},   {{"inspect"}, {}},
      {{"tokenize"}, {"x"}},                 {{"export"}, {"--out", scratch_dir() + "/never.gguf"}},
  };
  return cmds;
}

TEST(SharedFlags, MissingModelPathIsExitOneWithOneMessageEverywhere) {
  const std::string missing = scratch_dir() + "/no-such-model.gguf";
  for (const Cmd& c : model_commands()) {
    std::vector<std::string> args = c.head;
    args.insert(args.end(), {"--model", missing});
    args.insert(args.end(), c.tail.begin(), c.tail.end());
    const Proc p = offgraph(args);
    EXPECT_EQ(p.code, 1) << joined(args) << "\n" << p.err;
    EXPECT_NE(p.err.find(missing + ": no such file or directory (--model)"), std::string::npos)
        << joined(args) << "\n" << p.err;
    EXPECT_EQ(lines(p.err), 1u) << joined(args) << "\n" << p.err;
  }
}

TEST(SharedFlags, NoModelIsUsageEverywhere) {
  for (const Cmd& c : model_commands()) {
    if (c.head[0] == "inspect") continue;  // takes MODEL as an argument: its own message
    std::vector<std::string> args = c.head;
    args.insert(args.end(), c.tail.begin(), c.tail.end());
    const Proc p = offgraph(args);
    EXPECT_EQ(p.code, 2) << joined(args) << "\n" << p.err;
    EXPECT_NE(p.err.find("--model is required"), std::string::npos) << joined(args) << "\n" << p.err;
  }
}

TEST(SharedFlags, MissingTokenizerPathIsExitOne) {
  expect_data();
  const std::string missing = scratch_dir() + "/no-such-tokenizer.json";
  for (const std::string cmd : {"run", "chat", "batch", "serve", "tokenize"}) {
    std::vector<std::string> args = {cmd, "--model", kStories, "--tokenizer", missing};
    if (cmd == "run") args.insert(args.end(), {"--prompt", "x"});
    if (cmd == "batch" || cmd == "tokenize") args.push_back("x");
    const Proc p = offgraph(args);
    EXPECT_EQ(p.code, 1) << joined(args) << "\n" << p.err;
    EXPECT_NE(p.err.find(missing + ": no such file or directory (--tokenizer)"), std::string::npos)
        << joined(args) << "\n" << p.err;
  }
}

// A shared flag's bad value: exit 2 and the same text from every command.
TEST(SharedFlags, SameBadValueSameMessage) {
  expect_data();
  struct Case {
    std::vector<std::string> commands;
    std::vector<std::string> flag;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"run", "chat", "batch", "serve", "export"}, {"--threads", "-1"}, "--threads must be in [0, 1024]"},
      {{"run", "chat", "batch", "serve", "bench"}, {"--kv-storage-dtype", "q4"},
       "--kv-storage-dtype must be one of f32|f16|bf16|q8_0"},
      {{"run", "chat", "batch", "serve"}, {"--kv-max-capacity", "x"}, "--kv-max-capacity expects an integer"},
      {{"run", "chat", "batch", "serve"}, {"--kv-windows", "8,y"}, "--kv-windows expects comma-separated integers"},
      {{"run", "chat", "batch", "serve", "bench"}, {"--prefill-chunk-size", "0"}, "--prefill-chunk-size must be in [1,"},
      {{"batch", "serve", "bench"}, {"--cache-kind", "sequence"}, "--cache-kind must be one of batched-cell|batched-sequence"},
      {{"batch", "serve"}, {"--kv-block-size", "0"}, "--kv-block-size must be in [1, 4096]"},
      // The server's and the C API's bound and words (runtime/generation_limits.h).
      {{"run", "chat", "batch", "serve"}, {"--temperature", "-1"}, "--temperature is -1, outside [0, 2]"},
      {{"run", "chat", "batch", "serve"}, {"--temperature", "3"}, "--temperature is 3, outside [0, 2]"},
      {{"run", "chat", "batch", "serve"}, {"--presence-penalty", "2.5"}, "--presence-penalty is 2.5, outside [-2, 2]"},
      {{"run", "chat", "batch", "serve"}, {"--seed", "-2"}, "--seed must be in [-1,"},
      {{"run", "chat", "batch", "serve"}, {"--chat", "nosuch"}, "--chat must be one of auto|"},
      {{"run", "chat", "batch", "serve", "bench"}, {"--mmap=maybe"}, "--mmap takes no value or true|false"},
  };
  for (const Case& c : cases) {
    for (const std::string& cmd : c.commands) {
      std::vector<std::string> args = {cmd, "--model", kStories};
      if (cmd == "export") args = {cmd, "--model", scratch_dir(), "--out", scratch_dir() + "/never.gguf"};
      if (cmd == "run") args.insert(args.end(), {"--prompt", "x"});
      if (cmd == "batch") args.push_back("x");
      args.insert(args.end(), c.flag.begin(), c.flag.end());
      const Proc p = offgraph(args);
      EXPECT_EQ(p.code, 2) << joined(args) << "\n" << p.err;
      EXPECT_NE(p.err.find(c.message), std::string::npos) << joined(args) << "\n" << p.err;
    }
  }
}

// og-synth parses with the commands' flag library: typed values, unknown
// flags with a suggestion, --help with defaults; bad usage exits 2.
TEST(SharedFlags, OgSynthUsesTheFlagLibrary) {
  const std::string synth = std::string(OG_BINARY_DIR) + "/og-synth";
  auto run = [&](const std::string& args) {
    const std::string out = scratch_dir() + "/synth.out";
    const int rc = std::system((synth + " " + args + " >" + out + " 2>&1").c_str());
    return std::make_pair(WEXITSTATUS(rc), slurp(out));
  };
  const std::string out = scratch_dir() + "/s.gguf";
  auto [code, text] = run("--family llama --format gguf --out " + out + " --layers 1 --d-model 32");
  EXPECT_EQ(code, 0) << text;
  EXPECT_TRUE(std::filesystem::exists(out));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--family llama --format gguf", "--out is required"},
      {"--family lama --format gguf --out x", "--family must be one of llama|"},
      {"--family llama --format gguf --out x --layers two", "--layers expects an integer"},
      {"--family llama --format gguf --out x --layer 2", "unknown flag --layer (did you mean --layers?)"},
      {"--family llama --format gguf --out x --preset gemma4-e2b", "does not fit --family llama"},
      {"--family llama --format gguf --out x --tokenizer gpt2", "--tokenizer must be one of stories|llama3|gemma4"},
  };
  for (const auto& [args, message] : bad) {
    auto [c, t] = run(args);
    EXPECT_EQ(c, 2) << args << "\n" << t;
    EXPECT_NE(t.find(message), std::string::npos) << args << "\n" << t;
  }
  auto [hc, help] = run("--help");
  EXPECT_EQ(hc, 0);
  EXPECT_NE(help.find("usage: og-synth --family F"), std::string::npos) << help;
  EXPECT_NE(help.find("--seed N"), std::string::npos) << help;
}

}  // namespace
}  // namespace og::e2e
