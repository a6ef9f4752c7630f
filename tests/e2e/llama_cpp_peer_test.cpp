// llama.cpp reads what `offgraph export` writes: the real stories260K HF
// checkpoint exported to GGUF (F32 and Q8_0), and a synthetic checkpoint of
// every family, give the same greedy text in llama.cpp's llama-completion as
// in `offgraph run` (Mistral with --kv-windows 0: llama.cpp runs the llama
// arch with full attention, MODEL-FORMATS.md 8.2). llama.cpp is built outside
// the repository (README.md says how); without it this test skips with a
// message, every other test runs.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "e2e_util.h"
#include "synth/synth.h"

#ifndef OG_LLAMA_CPP_BIN
#define OG_LLAMA_CPP_BIN ""
#endif

namespace og::e2e {
namespace {

namespace fs = std::filesystem;

// $OFFGRAPH_LLAMA_CPP_BIN, else the directory CMake was given (OG_LLAMA_CPP_BIN).
// One thread: llama.cpp's spinning workers crawl on a busy 2-core machine.
std::string llama_bin() {
  if (const char* e = std::getenv("OFFGRAPH_LLAMA_CPP_BIN"); e && *e) return e;
  return OG_LLAMA_CPP_BIN;
}

// Runs a program with stdout to `out`, stdin and stderr /dev/null; returns its exit code.
int run_to(const std::vector<std::string>& argv_s, const std::string& out) {
  std::vector<char*> argv;
  std::vector<std::string> args = argv_s;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = open("/dev/null", O_WRONLY);
    const int fi = open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || fi < 0) _exit(125);
    dup2(fi, 0);
    dup2(fo, 1);
    dup2(fe, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string skip_reason() {
  if (llama_bin().empty() || !fs::exists(llama_bin() + "/llama-completion"))
    return "llama.cpp's llama-completion not found (looked in '" + llama_bin() +
           "'; set OFFGRAPH_LLAMA_CPP_BIN or -DOG_LLAMA_CPP_BIN to its bin directory)";
  return "";
}

// Exports hf as dtype, then compares llama.cpp's and offgraph's greedy continuations.
void expect_same_text(const std::string& hf, const std::string& name, const std::string& dtype, int n,
                      const std::vector<std::string>& run_extra = {}) {
  const std::string d = scratch_dir() + "/peer";
  fs::create_directories(d);
  const std::string gguf = d + "/" + name + "-" + dtype + ".gguf", out = d + "/" + name + "-" + dtype + ".txt";
  fs::remove(gguf);
  const std::string prompt = "Once upon a time";
  Proc e = offgraph({"export", "--model", hf, "--out", gguf, "--dtype", dtype, "--quiet"});
  ASSERT_EQ(e.code, 0) << e.err;
  std::vector<std::string> args = {"run", "--model", gguf, "--prompt", prompt, "--max-new-tokens", std::to_string(n),
                                   "--chat", "0"};
  args.insert(args.end(), run_extra.begin(), run_extra.end());
  Proc ours = offgraph(args);
  ASSERT_EQ(ours.code, 0) << ours.err;
  // llama-completion prints through an asynchronous logger that this llama.cpp
  // does not drain at exit, so on a busy machine the tail of its text can be
  // lost: a strict prefix of ours is retried (a few times); anything else is a mismatch.
  const std::string want = trim(ours.out);
  std::string theirs;
  for (int attempt = 0; attempt < 6; ++attempt) {
    ASSERT_EQ(run_to({llama_bin() + "/llama-completion", "-m", gguf, "-p", prompt, "-n", std::to_string(n),
                      "--temp", "0", "-t", "1", "-no-cnv", "--no-display-prompt", "--no-warmup"},
                     out),
              0)
        << "llama-completion failed on " << gguf;
    theirs = trim(slurp(out));
    if (theirs.size() >= want.size() || want.rfind(theirs, 0) != 0) break;
    std::printf("[note] llama-completion's text was cut short (%zu of %zu bytes); running it again\n",
                theirs.size(), want.size());
  }
  std::printf("[llama.cpp %s %s] %s\n[offgraph  %s %s] %s\n", name.c_str(), dtype.c_str(), theirs.c_str(),
              name.c_str(), dtype.c_str(), want.c_str());
  EXPECT_EQ(theirs, want) << name << " " << dtype;
  EXPECT_FALSE(theirs.empty());
}

TEST(LlamaCppPeer, Stories260KExportGivesTheSameText) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string hf = std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf";
  for (const char* dtype : {"f32", "q8_0"}) expect_same_text(hf, "stories", dtype, 48);
}

TEST(LlamaCppPeer, EverySyntheticFamilyGivesTheSameText) {
  if (const std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  using synth::Family;
  for (Family f : {Family::kLlama, Family::kQwen2, Family::kQwen3, Family::kGemma3, Family::kMistral}) {
    const std::string name = synth::family_name(f);
    const std::string hf = scratch_dir() + "/peer-hf-" + name;
    synth::write_hf(synth::tiny_spec(f), hf);
    std::vector<std::string> extra;
    if (f == Family::kMistral) extra = {"--kv-windows", "0"};
    expect_same_text(hf, name, "f32", 24, extra);
  }
}

}  // namespace
}  // namespace og::e2e
