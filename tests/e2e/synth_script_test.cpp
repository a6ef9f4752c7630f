// og-synth --script / --chat-template: a scripted synthetic model with a real
// chat template answers `offgraph run` with exactly its script (Qwen 3
// thinking + tool call, with and without enable_thinking; Llama 3.2 JSON tool
// call; GGUF and HF layouts), and a script that cannot be written fails with
// one line and exit 1. The scripts are tests/e2e/data/script_*.json (the
// JavaScript server tests use them too).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace og::e2e {
namespace {

const std::string kData = std::string(OG_SOURCE_DIR) + "/tests/e2e/data/";
const std::string kTemplates = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/";
const std::string kQwen3Template = kTemplates + "Qwen-Qwen3-0.6B.jinja";
const std::string kLlama32Template = kTemplates + "meta-llama-Llama-3.2-3B-Instruct.jinja";

const std::string kToolCall = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const std::string kThinking = "<think>\nThe user wants the weather.\n</think>\n\n";

// Runs og-synth with args; stdout and stderr captured apart.
Proc synth(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string base = scratch_dir() + "/synth" + std::to_string(counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  const std::string exe = std::string(OG_BINARY_DIR) + "/og-synth";
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fo = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0) _exit(125);
    dup2(fo, 1);
    dup2(fe, 2);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Proc p;
  p.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  p.out = slurp(out_path);
  p.err = slurp(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return p;
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A scripted model, written once per (name, arguments).
std::string model(const std::string& name, const std::vector<std::string>& args) {
  const std::string path = scratch_dir() + "/" + name;
  if (!std::filesystem::exists(path)) {
    std::vector<std::string> a = {"--out", path};
    a.insert(a.end(), args.begin(), args.end());
    const Proc p = synth(a);
    EXPECT_EQ(p.code, 0) << p.err;
  }
  return path;
}

const std::string& qwen3_tool_gguf() {
  static const std::string path =
      model("qwen3-tool.gguf", {"--family", "qwen3", "--format", "gguf", "--script", kData + "script_qwen3_tool.json",
                                "--chat-template", kQwen3Template});
  return path;
}

// The greedy reply of `offgraph run` (special tokens such as <|im_end|> stop it unprinted).
Proc reply(const std::string& model_path, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"run", "-m", model_path, "-p", "What is the weather in Paris?", "--temp", "0",
                                   "-n", "64"};
  args.insert(args.end(), extra.begin(), extra.end());
  return offgraph(args);
}

TEST(SynthScript, Qwen3ThinksThenCallsATool) {
  ASSERT_TRUE(std::filesystem::exists(kQwen3Template)) << kQwen3Template;
  const Proc p = reply(qwen3_tool_gguf());
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, kThinking + kToolCall);
  // The model stores the template: `offgraph template --model` renders the
  // prompt the run used, ending in the script's trigger "\n".
  const std::string req = write("qwen3-req.json", R"({"messages": [{"role": "user", "content": "Hi"}]})");
  const Proc t = offgraph({"template", "--model", qwen3_tool_gguf(), "--request", req});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(t.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

// enable_thinking false (the template's own switch; `run` has no flag for
// template variables, so the template sets it): the generation prompt ends in
// "<think>\n\n</think>\n\n" and the script continues from "\n\n".
TEST(SynthScript, Qwen3WithoutThinking) {
  const std::string no_think =
      write("qwen3-no-think.jinja", "{%- set enable_thinking = false %}\n" + slurp(kQwen3Template));
  const Proc p = reply(qwen3_tool_gguf(), {"--chat-template-file", no_think});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, kToolCall);
}

// HF layout (tokenizer.json with the script's tokens in reserved slots,
// chat_template.jinja), and a plain-text answer after the thinking.
TEST(SynthScript, Qwen3PlainReplyInHfLayout) {
  const std::string dir =
      model("qwen3-reply-hf", {"--family", "qwen3", "--format", "hf", "--script", kData + "script_qwen3_reply.json",
                               "--chat-template", kQwen3Template});
  EXPECT_EQ(slurp(dir + "/chat_template.jinja"), slurp(kQwen3Template));
  const Proc p = reply(dir);
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, "<think>\nThe user greets me.\n</think>\n\nHello! How can I help you today?");
}

// --ignore-eos (run, chat and batch): the script's <|im_end|> no longer ends
// the reply; only --max-new-tokens does, so a fixed-length generation works.
TEST(SynthScript, IgnoreEosRunsToMaxNewTokens) {
  const std::string& m = qwen3_tool_gguf();
  const Proc plain = reply(m, {"--stats", "json"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find("\"stop_reason\":\"stop\""), std::string::npos) << plain.out;
  const Proc ignored = reply(m, {"--stats", "json", "--ignore-eos"});
  ASSERT_EQ(ignored.code, 0) << ignored.err;
  EXPECT_EQ(ignored.out.rfind(kThinking + kToolCall, 0), 0u) << ignored.out;
  EXPECT_NE(ignored.out.find("\"stop_reason\":\"length\""), std::string::npos) << ignored.out;
  EXPECT_NE(ignored.out.find("\"generated_tokens\":64"), std::string::npos) << ignored.out;

  const Proc batch = offgraph({"batch", "-m", m, "What is the weather in Paris?", "--temp", "0", "-n", "40",
                               "--ignore-eos", "--output", "jsonl"});
  ASSERT_EQ(batch.code, 0) << batch.err;
  EXPECT_NE(batch.out.find("\"tokens\":40"), std::string::npos) << batch.out;
  EXPECT_NE(batch.out.find("\"finish_reason\":\"length\""), std::string::npos) << batch.out;
}

TEST(SynthScript, Llama32JsonToolCall) {
  ASSERT_TRUE(std::filesystem::exists(kLlama32Template)) << kLlama32Template;
  const std::string m =
      model("llama32-tool.gguf", {"--family", "llama", "--format", "gguf", "--script",
                                  kData + "script_llama32_tool.json", "--chat-template", kLlama32Template});
  const Proc p = reply(m);
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, R"({"name": "get_weather", "parameters": {"city": "Paris"}})");
}

TEST(SynthScript, ScriptsThatCannotBeWrittenFailWithOneLine) {
  const std::string conflict = write("conflict.json", R"({"tokens": [{"text": "<tool_call>"}],
      "chains": [["\n", "<tool_call>", "Paris"], ["Paris", "\n"], ["<tool_call>", "London"]]})");
  const std::string not_one = write("not-one.json", R"({"chains": [["\n", "Hello world"]]})");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--family", "qwen3", "--script", conflict},
       "conflicting bigrams: \"<tool_call>\" is followed by \"Paris\" in chain 1 but by \"London\" in chain 3"},
      {{"--family", "qwen3", "--script", not_one},
       "chain 1 element 2: \"Hello world\" is not a single token of the llama3 vocabulary (list it in \"tokens\")"},
      {{"--family", "qwen3", "--script", kData + "script_qwen3_tool.json", "--d-model", "4"},
       "8 tokens have a successor but d_model is 4 (each needs an embedding dimension of its own; raise --d-model)"},
      {{"--family", "gemma3", "--script", kData + "script_qwen3_tool.json"},
       "a scripted model must be of family llama, qwen2 or qwen3"},
      {{"--family", "qwen3", "--script", scratch_dir() + "/no-such-script.json"}, "no-such-script.json: cannot open"},
  };
  for (const Case& c : cases) {
    const std::string out = scratch_dir() + "/bad-script.gguf";
    std::vector<std::string> args = {"--format", "gguf", "--out", out};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const Proc p = synth(args);
    EXPECT_EQ(p.code, 1) << c.message << "\n" << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << p.err;
    EXPECT_EQ(p.err.rfind("og-synth: error: ", 0), 0u) << p.err;
    EXPECT_NE(p.err.find(c.message), std::string::npos) << p.err;
    EXPECT_EQ(p.out, "");
    EXPECT_FALSE(std::filesystem::exists(out)) << c.message;
  }
}

}  // namespace
}  // namespace og::e2e
