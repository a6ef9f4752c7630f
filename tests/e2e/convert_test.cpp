// `offgraph export` and `offgraph quantize` end to end: progress and summary
// on stderr, the exported file runs and inspects (with its offgraph.kv.*
// geometry and default prefill chunk), bad usage exits 2, bad files and
// outputs exit 1 with one line, and an interrupted run never leaves a file
// under the output name.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const std::string d = scratch_dir() + "/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const std::string& tiny_hf() {
  static const std::string dir = [] {
    const std::string d = scratch_dir() + "/conv-qwen3-hf";
    synth::write_hf(synth::tiny_spec(synth::Family::kQwen3), d);
    return d;
  }();
  return dir;
}

bool has_temp_files(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return true;
  return false;
}

TEST(Export, WritesAFileThatRunsAndInspects) {
  const std::string d = fresh_dir("export-ok");
  const std::string out = d + "/m.gguf";
  Proc p = offgraph({"export", "--model", tiny_hf(), "--out", out, "--dtype", "q8_0", "--prefill-chunk-size", "48"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.err.find("/"), std::string::npos);
  EXPECT_NE(p.err.find("token_embd.weight"), std::string::npos) << p.err;  // a progress line per tensor
  EXPECT_NE(p.err.find("MB/s"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("[summary] size"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("bits per weight"), std::string::npos) << p.err;
  EXPECT_TRUE(p.out.empty());
  Proc i = offgraph({"inspect", out, "--json"});
  ASSERT_EQ(i.code, 0) << i.err;
  const nlohmann::json j = nlohmann::json::parse(i.out);
  EXPECT_EQ(j["kv_stored"]["prefill_chunk_size"], 48);
  EXPECT_EQ(j["kv_stored"]["caches"].size(), j["kv"]["caches"].size());
  Proc t = offgraph({"inspect", out});
  EXPECT_NE(t.out.find("kv (file):"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("agrees with the architecture"), std::string::npos) << t.out;
  // run takes the file's prefill chunk when --prefill-chunk-size is not given.
  Proc r = offgraph({"run", "--model", out, "--prompt", "Once", "--max-new-tokens", "4"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("max_write=48"), std::string::npos) << r.err;
  Proc r2 = offgraph({"run", "--model", out, "--prompt", "Once", "--max-new-tokens", "4", "--prefill-chunk-size", "8"});
  EXPECT_NE(r2.err.find("max_write=8"), std::string::npos) << r2.err;
  // An existing output is kept unless --force.
  Proc again = offgraph({"export", "--model", tiny_hf(), "--out", out, "--quiet"});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("already exists (pass --force"), std::string::npos) << again.err;
  Proc forced = offgraph({"export", "--model", tiny_hf(), "--out", out, "--quiet", "--force"});
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(forced.err.find("token_embd.weight"), std::string::npos);  // --quiet
  EXPECT_FALSE(has_temp_files(d));
}

TEST(Quantize, ConvertsAndRefusesRequantizing) {
  const std::string d = fresh_dir("quantize");
  ASSERT_EQ(offgraph({"export", "--model", tiny_hf(), "--out", d + "/f16.gguf", "--quiet"}).code, 0);
  Proc q = offgraph({"quantize", d + "/f16.gguf", d + "/q.gguf", "q4_0"});
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_NE(q.err.find("f16 -> q4_0"), std::string::npos) << q.err;
  EXPECT_NE(q.err.find("[summary]"), std::string::npos);
  Proc r = offgraph({"run", "--model", d + "/q.gguf", "--prompt", "Hi", "--max-new-tokens", "3"});
  EXPECT_EQ(r.code, 0) << r.err;
  Proc again = offgraph({"quantize", d + "/q.gguf", d + "/q2.gguf", "q8_0"});
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(lines(again.err).size(), 1u) << again.err;
  EXPECT_NE(again.err.find("already quantized"), std::string::npos) << again.err;
  EXPECT_FALSE(fs::exists(d + "/q2.gguf"));
  EXPECT_EQ(offgraph({"quantize", d + "/q.gguf", d + "/q2.gguf", "q8_0", "--allow-requantize"}).code, 0);
}

TEST(Convert, BadUsageExitsTwoAndBadFilesOne) {
  const std::string d = fresh_dir("convert-bad");
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"export", "--out", d + "/o.gguf"}, 2, "--model is required"},
      {{"export", "--model", tiny_hf()}, 2, "--out is required"},
      {{"export", "--model", tiny_hf(), "--out", d + "/o.gguf", "--dtype", "iq2_xxs"}, 2, "unknown weight type 'iq2_xxs'"},
      {{"export", "--model", d + "/none", "--out", d + "/o.gguf"}, 1, "none: no such file or directory (--model)"},
      {{"export", "--model", tiny_hf() + "/config.json", "--out", d + "/o.gguf"}, 1, "not a directory"},
      {{"export", "--model", tiny_hf(), "--out", d + "/no/dir/o.gguf"}, 1, "does not exist"},
      {{"export", "--model", tiny_hf(), "--out", "/dev/full"}, 1, "/dev/full: write failed"},
      {{"export", "--model", tiny_hf(), "--out", d}, 1, "is a directory"},
      {{"export", "--model", d, "--out", d + "/o.gguf"}, 1, "no tokenizer.json"},
      {{"quantize", d + "/a.gguf", d + "/b.gguf"}, 2, "expected IN.gguf OUT.gguf TYPE"},
      {{"quantize", d + "/a.gguf", d + "/b.gguf", "q9"}, 2, "unknown weight type 'q9'"},
      {{"quantize", d + "/a.gguf", d + "/b.gguf", "q8_0"}, 1, "a.gguf"},
      {{"quantize", d + "/a.gguf", d + "/b.gguf", "q8_0", "--imatrix", "x"}, 2, "--imatrix"},
  };
  for (const Case& c : cases) {
    Proc p = offgraph(c.args);
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    EXPECT_EQ(p.code, c.code) << cmd << "\n" << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << cmd << "\n" << p.err;
    EXPECT_NE(p.err.find(c.message), std::string::npos) << cmd << "\nwanted: " << c.message << "\ngot: " << p.err;
  }
  EXPECT_FALSE(has_temp_files(d));
  Proc h = offgraph({"export", "--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--imatrix"), std::string::npos);  // says it is not supported
  EXPECT_NE(h.out.find("q4_k_m"), std::string::npos);
}

// A model big enough that the export is still running when the signal comes.
const std::string& big_hf() {
  static const std::string dir = [] {
    synth::SynthSpec s = synth::tiny_spec(synth::Family::kLlama);
    s.d_model = 512;
    s.n_layers = 8;
    s.n_heads = 8;
    s.n_kv_heads = 4;
    s.head_dim = 64;
    s.d_ff = 1536;
    const std::string d = scratch_dir() + "/conv-big-hf";
    synth::write_hf(s, d);
    return d;
  }();
  return dir;
}

// Starts an export, waits for its first progress line, sends `sig`, and
// returns the exit status; the output name must then hold nothing or a whole file.
void interrupt_export(int sig, const std::string& name) {
  const std::string d = fresh_dir(name);
  const std::string out = d + "/o.gguf", err = d + "/err.txt";
  const std::string exe = std::string(OG_BINARY_DIR) + "/offgraph";
  const pid_t pid = fork();
  if (pid == 0) {
    const int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fe < 0) _exit(125);
    dup2(fe, 2);
    execl(exe.c_str(), exe.c_str(), "export", "--model", big_hf().c_str(), "--out", out.c_str(), "--dtype", "q4_k_m",
          "--threads", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Bounded wait (60 s) for the first tensor line.
  for (int i = 0; i < 6000 && slurp(err).find("token_embd.weight") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  if (fs::exists(out)) {
    // Finished before the signal: then the file is complete and loads.
    Proc i = offgraph({"inspect", out});
    EXPECT_EQ(i.code, 0) << i.err;
    std::printf("[note] the export finished before signal %d arrived\n", sig);
  } else if (sig == SIGKILL) {
    EXPECT_TRUE(WIFSIGNALED(status)) << slurp(err);
  } else {
    // Stopped at the next tensor: a message, the partial file removed, exit 128 + the signal.
    ASSERT_TRUE(WIFEXITED(status)) << slurp(err);
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << slurp(err);
    EXPECT_NE(slurp(err).find("[interrupted: " + out + " was not written]"), std::string::npos) << slurp(err);
  }
  if (sig != SIGKILL) {
    EXPECT_FALSE(has_temp_files(d)) << "signal " << sig << " left the temporary file";
  }
}

TEST(Convert, AnInterruptedExportNeverLeavesAPartialFile) {
  interrupt_export(SIGINT, "interrupt-int");
  interrupt_export(SIGTERM, "interrupt-term");
  interrupt_export(SIGKILL, "interrupt-kill");  // no handler runs: the temporary file may stay, the output name not
}

}  // namespace
}  // namespace og::e2e
