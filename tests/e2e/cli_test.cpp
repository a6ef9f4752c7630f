// The command line as a newcomer and a script meet it: signals in every
// long-running command (also when started with SIGINT ignored), output that
// is machine-readable and only that, limits known before work, help and
// version, llama.cpp's spellings, and progress on a terminal or in a pipe.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "child_proc.h"
#include "e2e_util.h"

namespace og::e2e {
namespace {

const std::string kGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

void expect_data() { ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf; }

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  for (const std::string& l : lines(out)) v.push_back(nlohmann::json::parse(l));
  return v;
}

// ---- signals ----

// batch started as a background job (SIGINT ignored) still stops on SIGINT and
// on SIGTERM: the finished generation is written whole, the running ones are
// written as far as they got and reported cancelled, the report and the
// --stats-file are written, and the exit code is 128 + the signal.
void interrupt_batch(int sig) {
  const std::string prompts = scratch_dir() + "/batch-signal-prompts.txt";
  std::ofstream(prompts) << "{\"prompt\": \"Hi\", \"max_new_tokens\": 3}\nOnce upon a time\nThe cat\n";
  const std::string stats = scratch_dir() + "/batch-signal-" + std::to_string(sig) + ".json";
  Child c = spawn({"batch", "--model", kGguf, "--prompts-file", prompts, "--max-new-tokens", "100000",
                   "--kv-max-capacity", "120000", "--chat", "0", "--output", "jsonl", "--stats", "json",
                   "--stats-file", stats},
                  false, /*ignore_sigint=*/true);
  // The short generation comes first (k = 0) and is written when it finishes.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (c.out_text.find('\n') == std::string::npos && std::chrono::steady_clock::now() < until) c.read_some(20);
  ASSERT_NE(c.out_text.find('\n'), std::string::npos) << c.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the long ones are decoding
  ::kill(c.pid, sig);
  const int code = c.finish(60);
  EXPECT_EQ(code, 128 + sig) << c.err();
  EXPECT_NE(c.err().find("[interrupted]"), std::string::npos) << c.err();
  const auto gens = json_lines(c.out_text);
  ASSERT_EQ(gens.size(), 3u) << c.out_text;
  EXPECT_EQ(gens[0]["finish_reason"], "length");
  EXPECT_EQ(gens[0]["tokens"], 3);
  for (int k : {1, 2}) {
    EXPECT_EQ(gens[k]["index"], k);
    EXPECT_EQ(gens[k]["finish_reason"], "cancelled") << gens[k].dump();
    EXPECT_LT(gens[k]["tokens"].get<int>(), 100000);
  }
  const nlohmann::json report = nlohmann::json::parse(slurp(stats));
  ASSERT_EQ(report["generations"].size(), 3u);
  EXPECT_EQ(report["generations"][1]["finish_reason"], "cancelled");
}

TEST(Cli, BatchStopsOnSigintEvenWhenStartedWithSigintIgnored) {
  expect_data();
  interrupt_batch(SIGINT);
}

TEST(Cli, BatchStopsOnSigterm) {
  expect_data();
  interrupt_batch(SIGTERM);
}

TEST(Cli, BenchStopsOnSigintWithTheRowsDone) {
  expect_data();
  Child c = spawn({"bench", "--model", kGguf, "-p", "16", "-n", "100000", "-r", "1", "-t", "1"}, false, true);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (c.out_text.find("| pp16 |") == std::string::npos && std::chrono::steady_clock::now() < until)
    c.read_some(20);
  ASSERT_NE(c.out_text.find("| pp16 |"), std::string::npos) << c.out_text << c.err();  // printed as it finished
  ::kill(c.pid, SIGINT);
  EXPECT_EQ(c.finish(120), 130) << c.err();
  EXPECT_NE(c.err().find("[interrupted: 1 of 2 tests done]"), std::string::npos) << c.err();
}

// ---- machine-readable output ----

TEST(Cli, BatchJsonlIsOneObjectPerGeneration) {
  expect_data();
  const Proc p = offgraph({"batch", "--model", kGguf, "--max-new-tokens", "8", "--output", "jsonl", "--prompt-rounds",
                           "2", "Once upon a time", "The cat"});
  ASSERT_EQ(p.code, 0) << p.err;
  const auto gens = json_lines(p.out);
  ASSERT_EQ(gens.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(gens[k]["index"], k);
    EXPECT_EQ(gens[k]["prompt_index"], k % 2);
    EXPECT_EQ(gens[k]["round"], k / 2);
    EXPECT_EQ(gens[k]["tokens"], 8);
    EXPECT_EQ(gens[k]["finish_reason"], "length");
    EXPECT_FALSE(gens[k]["text"].get<std::string>().empty());
  }
  EXPECT_EQ(gens[0]["text"], gens[2]["text"]);  // greedy: the rounds agree
}

// A generation with newlines is still one line of text output, escaped.
TEST(Cli, BatchTextOutputIsOneLinePerGeneration) {
  expect_data();
  const Proc jl = offgraph({"batch", "--model", kGguf, "--max-new-tokens", "120", "--output", "jsonl", "--chat", "0",
                            "Once upon a time", "Lily"});
  ASSERT_EQ(jl.code, 0) << jl.err;
  const auto gens = json_lines(jl.out);
  ASSERT_EQ(gens.size(), 2u);
  bool any_newline = false;
  for (const auto& g : gens) any_newline = any_newline || g["text"].get<std::string>().find('\n') != std::string::npos;
  ASSERT_TRUE(any_newline) << "the test needs a generation with a newline in it";
  const Proc tx = offgraph({"batch", "--model", kGguf, "--max-new-tokens", "120", "--chat", "0", "Once upon a time",
                            "Lily"});
  ASSERT_EQ(tx.code, 0) << tx.err;
  const auto ls = lines(tx.out);
  ASSERT_EQ(ls.size(), 2u) << tx.out;
  for (size_t k = 0; k < 2; ++k) {
    std::string unescaped;
    for (size_t i = 0; i < ls[k].size(); ++i) {
      if (ls[k][i] != '\\') {
        unescaped += ls[k][i];
        continue;
      }
      const char e = ls[k][++i];
      unescaped += e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
    }
    EXPECT_EQ(unescaped, gens[k]["text"].get<std::string>());
  }
}

TEST(Cli, QuietAndVerboseOnEveryCommand) {
  expect_data();
  const Proc run = offgraph({"run", "-m", kGguf, "-p", "Once", "-n", "4", "-q"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_FALSE(run.out.empty());
  const Proc chat = offgraph({"chat", "-m", kGguf, "-n", "4", "--quiet"}, "Hi\n");
  EXPECT_EQ(chat.code, 0) << chat.err;
  EXPECT_EQ(chat.err, "");
  const Proc batch = offgraph({"batch", "-m", kGguf, "-n", "4", "-q", "x"});
  EXPECT_EQ(batch.code, 0) << batch.err;
  EXPECT_EQ(batch.err, "");
  const Proc verbose = offgraph({"run", "-m", kGguf, "-p", "Once", "-n", "4", "--stats", "json", "-v"});
  EXPECT_NE(verbose.err.find("[cache] after load"), std::string::npos) << verbose.err;
  for (const std::string cmd : {"run", "chat", "batch", "serve", "bench", "inspect", "tokenize", "detokenize",
                                "export", "quantize"}) {
    const Proc h = offgraph({cmd, "--help"});
    EXPECT_NE(h.out.find("-q, --quiet"), std::string::npos) << cmd;
    EXPECT_NE(h.out.find("-v, --verbose"), std::string::npos) << cmd;
  }
}

// ---- limits known before work ----

TEST(Cli, BatchRefusesAHugePromptFromItsSize) {
  expect_data();
  const std::string path = scratch_dir() + "/huge-prompt.txt";
  std::ofstream(path) << std::string(10 << 20, 'a') << "\nOnce upon a time\n";
  const auto t0 = std::chrono::steady_clock::now();
  const Proc p = offgraph({"batch", "-m", kGguf, "-n", "4", "--prompts-file", path, "--output", "jsonl"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(p.code, 1) << p.err;  // one generation refused, the other ran
  EXPECT_NE(p.err.find("(not tokenized)"), std::string::npos) << p.err.substr(0, 2000);
  const auto gens = json_lines(p.out);
  ASSERT_EQ(gens.size(), 2u);
  EXPECT_EQ(gens[0]["finish_reason"], "refused");
  EXPECT_EQ(gens[1]["finish_reason"], "length");
  EXPECT_LT(s, 30.0);  // generous: tokenizing 10 MB took far longer and 348 MB
}

TEST(Cli, BenchCapsThreadsAndWarnsPastTheContext) {
  expect_data();
  const Proc many = offgraph({"bench", "-m", kGguf, "-t", "1000"});
  EXPECT_EQ(many.code, 2) << many.err;
  EXPECT_NE(many.err.find("--threads 1000 is more than 4x this machine's"), std::string::npos) << many.err;
  const Proc past = offgraph({"bench", "-m", kGguf, "-p", "600", "-n", "0", "-r", "1", "-t", "1"});
  EXPECT_EQ(past.code, 0) << past.err;
  EXPECT_NE(past.err.find("[warning] a test reaches position 600"), std::string::npos) << past.err;
  EXPECT_NE(past.err.find("trained context length 512"), std::string::npos) << past.err;
}

TEST(Cli, AFlagLikeValueIsRefusedUnlessAttached) {
  expect_data();
  const std::string d = scratch_dir();
  const Proc p = offgraph({"export", "--model", d, "--out", "--quiet"});
  EXPECT_EQ(p.code, 2) << p.err;
  EXPECT_NE(p.err.find("--out needs a value, got the flag-like '--quiet' (write --out=--quiet"), std::string::npos)
      << p.err;
  EXPECT_FALSE(std::filesystem::exists("--quiet"));
  const Proc stop = offgraph({"run", "-m", kGguf, "-p", "Once", "-n", "4", "--stop=--never"});
  EXPECT_EQ(stop.code, 0) << stop.err;  // attached: taken as the value
}

TEST(Cli, ExportNamesASymlinkLoop) {
  const std::string d = scratch_dir() + "/loop-hf";
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  const std::string synth = std::string(OG_BINARY_DIR) + "/og-synth";
  ASSERT_EQ(std::system((synth + " --family llama --format hf --out " + d + " >/dev/null").c_str()), 0);
  std::filesystem::remove(d + "/model.safetensors");
  std::filesystem::create_symlink("loop", d + "/model.safetensors");
  std::filesystem::create_symlink("model.safetensors", d + "/loop");
  const Proc p = offgraph({"export", "--model", d, "--out", scratch_dir() + "/loop.gguf"});
  EXPECT_EQ(p.code, 1) << p.err;
  EXPECT_NE(p.err.find("model.safetensors: cannot open: Too many levels of symbolic links"), std::string::npos)
      << p.err;
}

// ---- help, version, habits ----

TEST(Cli, HelpCommandEqualsDashDashHelp) {
  for (const std::string cmd : {"run", "batch", "serve", "bench", "export"}) {
    const Proc a = offgraph({"help", cmd});
    const Proc b = offgraph({cmd, "--help"});
    EXPECT_EQ(a.code, 0) << cmd;
    EXPECT_EQ(a.out, b.out) << cmd;
    EXPECT_NE(a.out.find("usage: offgraph " + cmd), std::string::npos);
  }
  const Proc bad = offgraph({"help", "nosuch"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown command 'nosuch'"), std::string::npos);
}

TEST(Cli, VersionNamesCommitAndInstructionSets) {
  for (const std::string flag : {"--version", "-V"}) {
    const Proc v = offgraph({flag});
    EXPECT_EQ(v.code, 0);
    EXPECT_NE(v.out.find("offgraph 0.1.0 (commit "), std::string::npos) << v.out;
    EXPECT_EQ(v.out.find("commit unknown"), std::string::npos) << v.out;  // built from a git checkout
    EXPECT_NE(v.out.find("compiled: scalar avx2 avxvnni avx512; this CPU: scalar"), std::string::npos) << v.out;
    EXPECT_NE(v.out.find("; in use: "), std::string::npos) << v.out;
  }
}

// llama.cpp's spellings of flags offgraph has give the same output.
TEST(Cli, LlamaCppSpellingsAreAliases) {
  expect_data();
  const Proc ours = offgraph({"run", "--model", kGguf, "--prompt", "Once upon", "--max-new-tokens", "12",
                              "--kv-max-capacity", "64", "--threads", "1", "--temperature", "0.8", "--seed", "7",
                              "--top-k", "40", "--top-p", "0.9", "--min-p", "0.05", "--repeat-penalty", "1.1", "-q"});
  const Proc theirs = offgraph({"run", "-m", kGguf, "-p", "Once upon", "-n", "12", "-c", "64", "-t", "1", "--temp",
                                "0.8", "-s", "7", "--top-k", "40", "--top-p", "0.9", "--min-p", "0.05",
                                "--repeat-penalty", "1.1", "-q"});
  ASSERT_EQ(ours.code, 0) << ours.err;
  EXPECT_EQ(theirs.code, 0) << theirs.err;
  EXPECT_EQ(ours.out, theirs.out);
  const Proc long_names = offgraph({"run", "-m", kGguf, "-p", "Once upon", "--n-predict", "12", "--ctx-size", "64",
                                    "-t", "1", "--temp", "0.8", "--seed", "7", "--top-k", "40", "--top-p", "0.9",
                                    "--min-p", "0.05", "--repeat-penalty", "1.1", "-q"});
  EXPECT_EQ(long_names.out, ours.out);
}

// llama.cpp's flags that offgraph lacks get what to do instead, not a guess.
TEST(Cli, LlamaCppOnlyFlagsSayWhatToDoInstead) {
  expect_data();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"run", "-m", kGguf, "-p", "x", "-ngl", "99"}, "-ngl: llama.cpp's flag; llama.cpp's GPU offload"},
      {{"run", "-m", kGguf, "-p", "x", "--lora", "a.gguf"}, "--lora: llama.cpp's flag; adapters are not applied"},
      {{"embed", "-m", kGguf, "-md", "d.gguf", "x"}, "speculative decoding runs in run, chat, batch, serve and bench"},
      {{"serve", "-m", kGguf, "--json-schema", "s.json"}, "serve constrains each request by its response_format"},
      {{"embed", "-m", kGguf, "--mmproj", "p.gguf", "x"}, "run, chat, batch, serve and inspect take --mmproj FILE"},
      {{"run", "-m", kGguf, "-p", "x", "--mmproj-url", "u"}, "give a local mmproj file with --mmproj"},
      {{"run", "-m", kGguf, "-p", "x", "-fa"}, "attention always runs fused"},
      {{"serve", "-m", kGguf, "-c", "4096"}, "--kv-max-capacity (positions per session)"},
      {{"batch", "-m", kGguf, "--ctx-size", "4096", "x"}, "--kv-max-capacity (positions per session)"},
      {{"chat", "-m", kGguf, "-ctk", "q8_0"}, "use --kv-storage-dtype"},
  };
  for (const Case& c : cases) {
    const Proc p = offgraph(c.args);
    EXPECT_EQ(p.code, 2) << p.err;
    EXPECT_NE(p.err.find(c.says), std::string::npos) << p.err;
    EXPECT_EQ(p.err.find("did you mean"), std::string::npos) << p.err;
  }
}

// llama.cpp's short spellings of flags offgraph has mean the same here:
// -md is --model-draft, -j --json-schema, --grammar-file --grammar.
TEST(Cli, LlamaCppSpellingsOfOurFlagsWork) {
  expect_data();
  const Proc md = offgraph({"run", "-m", kGguf, "-p", "x", "-md", "missing-draft.gguf"});
  EXPECT_EQ(md.code, 1) << md.err;
  EXPECT_NE(md.err.find("missing-draft.gguf: no such file or directory (--model-draft)"), std::string::npos) << md.err;
  const Proc j = offgraph({"run", "-m", kGguf, "-p", "x", "-n", "8", "--temp", "0", "-j",
                           R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(j.out.substr(0, 1), "{") << j.out;  // the schema holds (the story model writes no JSON unasked)
  const Proc g = offgraph({"run", "-m", kGguf, "-p", "x", "--grammar-file", "missing.gbnf"});
  EXPECT_NE(g.code, 0);
  EXPECT_NE(g.err.find("missing.gbnf"), std::string::npos) << g.err;
}

// ---- progress ----

// In a pipe: one plain line per tensor; on a terminal (a pty through
// script(1)): one line rewritten in place with done/total, rate and time left.
TEST(Cli, ConvertProgressIsOneUpdatingLineOnATerminal) {
  const std::string d = scratch_dir() + "/progress-hf";
  std::filesystem::remove_all(d);
  const std::string synth = std::string(OG_BINARY_DIR) + "/og-synth";
  ASSERT_EQ(std::system((synth + " --family llama --format hf --out " + d + " >/dev/null").c_str()), 0);
  const Proc pipe = offgraph({"export", "--model", d, "--out", scratch_dir() + "/progress-pipe.gguf"});
  ASSERT_EQ(pipe.code, 0) << pipe.err;
  EXPECT_NE(pipe.err.find("token_embd.weight"), std::string::npos) << pipe.err;
  EXPECT_EQ(pipe.err.find('\r'), std::string::npos);
  const Proc none = offgraph({"export", "--model", d, "--out", scratch_dir() + "/progress-none.gguf", "--no-progress"});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.err.find("token_embd.weight"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("[summary]"), std::string::npos) << none.err;
  // script(1) gives the command a terminal and records what it wrote there.
  const std::string exe = std::string(OG_BINARY_DIR) + "/offgraph";
  const std::string typescript = scratch_dir() + "/progress.typescript";
  const std::string cmd = "script -q -e -c '" + exe + " export --model " + d + " --out " + scratch_dir() +
                          "/progress-tty.gguf' " + typescript + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string tty = slurp(typescript);
  EXPECT_NE(tty.find("\r\033[K["), std::string::npos) << tty;
  EXPECT_NE(tty.find(" left"), std::string::npos) << tty;
  EXPECT_NE(tty.find("MB/s"), std::string::npos) << tty;
  EXPECT_EQ(tty.find("token_embd.weight"), std::string::npos) << tty;  // no per-tensor lines on a terminal
}

}  // namespace
}  // namespace og::e2e
