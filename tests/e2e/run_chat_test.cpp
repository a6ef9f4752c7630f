// `offgraph run` and `offgraph chat` end to end on the built binary: the
// stories260K reference continuation from GGUF and HF, the reports, scripted
// chats through a pipe (undo, reset, ring recompute, overflow, quit), and every
// bad flag giving its message and exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "kernels/kernel_table.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

const std::string kModels = std::string(OG_TESTDATA_DIR) + "/models";
const std::string kGguf = kModels + "/stories260K/stories260K.gguf";
const std::string kHf = kModels + "/stories260K-hf";

// REFERENCE_OUTPUTS.md case A (llama2.c run.c -n 64: 5 prompt positions + 60
// generated tokens), minus the prompt: `run` does not echo the prompt.
const std::string kContinuation =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red "
    "ball. She wanted to play with it, but it was too high.\nLily";

std::vector<std::string> run_args(const std::string& model, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"run", "--model", model, "--prompt", "Once upon a time", "--max-new-tokens", "60",
                                "--chat", "0"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Removes the scratch directory (synthetic models, process files) at the end.
class ScratchCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(scratch_dir(), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kCleanup = ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

void expect_data() {
  ASSERT_TRUE(std::filesystem::exists(kGguf)) << "missing test data " << kGguf;
  ASSERT_TRUE(std::filesystem::exists(kHf)) << "missing test data " << kHf;
}

TEST(Run, ReferenceContinuationFromGguf) {
  expect_data();
  Proc p = offgraph(run_args(kGguf));
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, kContinuation);
  // Everything else is on stderr.
  EXPECT_NE(p.err.find("[cache] off-graph sequence | capacity="), std::string::npos) << p.err;
  for (const char* when : {"after load", "after prefill", "after decode"}) {
    EXPECT_NE(p.err.find(std::string("[cache] ") + when), std::string::npos) << when;
    EXPECT_NE(p.err.find(std::string("[mem] ") + when), std::string::npos) << when;
  }
  for (const char* field : {"prompt tokens: 5", "generated tokens: 60", "load:", "time to first token:",
                            "prefill:", "decode:", "tok/s", "sampling:", "peak rss:"})
    EXPECT_NE(p.err.find(field), std::string::npos) << field << "\n" << p.err;
}

TEST(Run, ReferenceContinuationFromHf) {
  expect_data();
  Proc p = offgraph(run_args(kHf));
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, kContinuation);
}

// OFFGRAPH_ISA picks the instruction set of every kernel, attention over the
// cache included: each one this CPU has gives the reference text (f32 and f16
// caches); one it lacks, or an unknown name, is one line and exit code 2.
TEST(Run, ReferenceContinuationOnEveryIsa) {
  expect_data();
  for (kernels::Isa isa : kernels::available_isas()) {
    ASSERT_EQ(setenv("OFFGRAPH_ISA", kernels::isa_str(isa), 1), 0);
    for (const char* dtype : {"f32", "f16"}) {
      Proc p = offgraph(run_args(kGguf, {"--kv-storage-dtype", dtype}));
      EXPECT_EQ(p.code, 0) << kernels::isa_str(isa) << " " << dtype << "\n" << p.err;
      EXPECT_EQ(p.out, kContinuation) << kernels::isa_str(isa) << " " << dtype;
    }
  }
  // A known instruction set this CPU lacks (none on a CPU with all of them).
  for (int i = 0; i < kernels::kNumIsas; ++i) {
    const auto isa = static_cast<kernels::Isa>(i);
    if (kernels::isa_available(isa)) continue;
    ASSERT_EQ(setenv("OFFGRAPH_ISA", kernels::isa_str(isa), 1), 0);
    Proc lacking = offgraph(run_args(kGguf));
    EXPECT_EQ(lacking.code, 2) << lacking.err;
    EXPECT_NE(lacking.err.find("does not support"), std::string::npos) << lacking.err;
    EXPECT_EQ(std::count(lacking.err.begin(), lacking.err.end(), '\n'), 1) << lacking.err;
  }
  ASSERT_EQ(setenv("OFFGRAPH_ISA", "avx9000", 1), 0);
  Proc bad = offgraph(run_args(kGguf));
  unsetenv("OFFGRAPH_ISA");
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("OFFGRAPH_ISA=avx9000"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST(Run, SameOutputWithOtherCachePoliciesAndChunks) {
  expect_data();
  for (std::vector<std::string> extra : std::vector<std::vector<std::string>>{
           {"--kv-cache", "reference"},
           {"--prefill-chunk-size", "2"},
           {"--kv-initial-capacity", "8"},  // grows by doubling during decode
           {"--threads", "1"},
           {"--warmup"},
           {"--kv-windows", "0"}}) {
    Proc p = offgraph(run_args(kGguf, extra));
    ASSERT_EQ(p.code, 0) << extra[0] << "\n" << p.err;
    EXPECT_EQ(p.out, kContinuation) << extra[0];
  }
}

TEST(Run, EveryStorageDtype) {
  expect_data();
  for (const char* dt : {"f32", "f16", "bf16", "q8_0"}) {
    Proc p = offgraph({"run", "--model", kGguf, "--prompt", "Once upon a time", "--max-new-tokens", "20",
                       "--kv-storage-dtype", dt});
    ASSERT_EQ(p.code, 0) << dt << "\n" << p.err;
    EXPECT_NE(p.err.find(std::string("kv_dtype=") + dt), std::string::npos) << p.err;
    EXPECT_FALSE(p.out.empty());
  }
}

TEST(Run, StatsJsonHoldsEveryField) {
  expect_data();
  Proc p = offgraph(run_args(kGguf, {"--stats", "json", "--warmup"}));
  ASSERT_EQ(p.code, 0) << p.err;
  // The report is the last line of stdout; stderr carries no diagnostics.
  EXPECT_EQ(p.err, "");
  const nlohmann::json j = nlohmann::json::parse(split_report(p.out).report);
  EXPECT_EQ(j.at("prompt_tokens").get<int>(), 5);
  EXPECT_EQ(j.at("generated_tokens").get<int>(), 60);  // the warmup run is not counted
  EXPECT_EQ(j.at("stop_reason").get<std::string>(), "length");  // OpenAI's finish reason
  for (const char* k : {"load_ms", "ttft_ms", "prefill_ms", "prefill_tok_s", "decode_ms", "decode_tok_s",
                        "sampling_ms"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_GE(j.at(k).get<double>(), 0.0) << k;
  }
  EXPECT_GT(j.at("decode_tok_s").get<double>(), 0.0);
  EXPECT_GT(j.at("prefill_tok_s").get<double>(), 0.0);
  EXPECT_GT(j.at("peak_rss_bytes").get<int64_t>(), 1 << 20);
  EXPECT_EQ(j.at("cache_capacity").get<int>(), 512);  // min(n_ctx 512, 4096)
  EXPECT_EQ(j.at("recomputed_tokens").get<int>(), 0);
}

TEST(Run, StopStringEndsAndIsNotPrinted) {
  expect_data();
  Proc p = offgraph(run_args(kGguf, {"--stop", "park", "--stop", "never-there", "--stats", "json"}));
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(split_report(p.out).text, ", there was a little girl named Lily. She loved to play outside in the ");
  EXPECT_NE(split_report(p.out).report.find("\"stop_reason\":\"stop\""), std::string::npos) << p.out;
}

TEST(Run, SeedMakesSamplingRepeatable) {
  expect_data();
  auto sample = [](const std::string& seed) {
    Proc p = offgraph(run_args(kGguf, {"--temperature", "1.5", "--top-k", "40", "--top-p", "0.95", "--min-p",
                                       "0.01", "--repeat-penalty", "1.1", "--seed", seed}));
    EXPECT_EQ(p.code, 0) << p.err;
    return p.out;
  };
  const std::string a = sample("42");
  EXPECT_EQ(a, sample("42"));
  EXPECT_NE(a, sample("43"));
  EXPECT_NE(a, kContinuation);
}

TEST(Run, AliasesAndEqualsForm) {
  expect_data();
  Proc p = offgraph({"run", "--model=" + kGguf, "--prompt=Once upon a time", "--max_new_tokens", "60", "--chat=0",
                     "--prefill_chunk_size=3"});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out, kContinuation);
}

TEST(Run, CapacityCapsTheGeneration) {
  expect_data();
  Proc p = offgraph(run_args(kGguf, {"--kv-max-capacity", "12", "--stats", "json"}));
  ASSERT_EQ(p.code, 0) << p.err;
  const TextAndReport r = split_report(p.out);
  EXPECT_EQ(r.text, kContinuation.substr(0, r.text.size()));
  EXPECT_NE(p.err.find("[generation stopped: the cache is full at 12/12"), std::string::npos) << p.err;
  // 5 prompt positions + 7 forwarded tokens fill the 12; the 8th is sampled from the last.
  EXPECT_NE(r.report.find("\"generated_tokens\":8"), std::string::npos) << p.out;
  EXPECT_NE(r.report.find("\"cache_positions\":12"), std::string::npos) << p.out;
}

// Every position of the cache is used, and the stop line and the fill line
// give the same count (issue: capacity 6 with a 5-token prompt said "full at
// 6/6" and then "5/6").
TEST(Run, TheWholeCapacityIsUsedAndReportedOnce) {
  expect_data();
  for (int cap : {6, 7}) {
    Proc p = offgraph(run_args(kGguf, {"--kv-max-capacity", std::to_string(cap)}));
    ASSERT_EQ(p.code, 0) << p.err;
    EXPECT_FALSE(p.out.empty());
    EXPECT_EQ(p.out, kContinuation.substr(0, p.out.size()));
    const std::string full = std::to_string(cap) + "/" + std::to_string(cap);
    EXPECT_NE(p.err.find("[generation stopped: the cache is full at " + full + " positions"), std::string::npos)
        << p.err;
    EXPECT_NE(p.err.find("[cache] after decode: " + full + " positions"), std::string::npos) << p.err;
    EXPECT_NE(p.err.find("generated tokens: " + std::to_string(cap - 4)), std::string::npos) << p.err;
  }
}

TEST(Run, PromptLongerThanTheCapacityIsAnError) {
  expect_data();
  Proc p = offgraph(run_args(kGguf, {"--kv-max-capacity", "4"}));
  EXPECT_EQ(p.code, 2);
  EXPECT_TRUE(p.out.empty());
  EXPECT_NE(p.err.find("the prompt of 5 tokens does not fit: a session of 4 positions holds the prompt and at "
                       "least one generated token (raise --kv-max-capacity)"),
            std::string::npos)
      << p.err;
  EXPECT_EQ(p.err.find("[cache] after prefill"), std::string::npos);
  // A prompt that fills the cache leaves no room for the reply: the same rule
  // and words as serve and the library (runtime/prompt_room.h).
  p = offgraph(run_args(kGguf, {"--kv-max-capacity", "5"}));
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("the prompt of 5 tokens does not fit: a session of 5 positions"), std::string::npos) << p.err;
}

TEST(Run, HelpListsEveryFlagWithItsDefault) {
  Proc p = offgraph({"run", "--help"});
  ASSERT_EQ(p.code, 0);
  for (const char* flag :
       {"--model", "--tokenizer", "--prompt", "--interactive", "--system", "--chat", "--temperature", "--top-k",
        "--top-p", "--min-p", "--repeat-penalty", "--seed", "--max-new-tokens", "--stop", "--kv-max-capacity",
        "--kv-initial-capacity", "--kv-storage-dtype", "--kv-windows", "--kv-cache", "--prefill-chunk-size",
        "--threads", "--warmup", "--stats"}) {
    size_t at = p.out.find(std::string("  ") + flag + " ");
    if (at == std::string::npos) at = p.out.find(std::string(", ") + flag + " ");  // after a one-letter alias
    ASSERT_NE(at, std::string::npos) << flag << "\n" << p.out;
    // The description may start on the next line (after a long list of choices).
    const size_t next = p.out.find("\n  -", at + 1);
    EXPECT_NE(p.out.substr(at, next - at).find("(default: "), std::string::npos) << flag;
    EXPECT_EQ(count(p.out.substr(at, next - at), "(default: "), 1u) << flag;
  }
  EXPECT_NE(p.out.find("--prefill-chunk-size N"), std::string::npos);
  EXPECT_NE(p.out.find("(default: 512)"), std::string::npos);
  Proc c = offgraph({"chat", "--help"});
  EXPECT_EQ(c.code, 0);
  EXPECT_NE(c.out.find("--kv-cache"), std::string::npos);
}

// ---- chat ----

std::vector<std::string> chat_args(const std::string& model, std::vector<std::string> extra = {},
                                   const std::string& max_new_tokens = "20") {
  std::vector<std::string> a = {"chat", "--model", model, "--max-new-tokens", max_new_tokens, "--chat", "0"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(Chat, UndoThenSameTurnReproducesAndResetStartsOver) {
  expect_data();
  Proc p = offgraph(chat_args(kGguf), "Once upon a time\n/undo\nOnce upon a time\nLily\n/reset\nOnce upon a time\n"
                                      "/quit\nnot read\n");
  ASSERT_EQ(p.code, 0) << p.err;
  const auto out = lines(p.out);
  ASSERT_EQ(out.size(), 4u) << p.out;
  EXPECT_EQ(out[0], kContinuation.substr(0, out[0].size()));
  EXPECT_FALSE(out[0].empty());
  EXPECT_EQ(out[1], out[0]);  // after /undo the same turn gives the same tokens
  EXPECT_NE(out[2], out[0]);  // a second turn continues the story
  EXPECT_EQ(out[3], out[0]);  // after /reset, as new
  EXPECT_NE(p.err.find("[undo: removed the last turn, 25 tokens]"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("[reset]"), std::string::npos);
  EXPECT_NE(p.err.find("[25/512 tokens]"), std::string::npos) << p.err;
  EXPECT_EQ(count(p.err, "[0/512 tokens]"), 2u) << p.err;
}

TEST(Chat, RunInteractiveIsChat) {
  expect_data();
  Proc p = offgraph({"run", "--interactive", "--model", kGguf, "--max-new-tokens", "20", "--chat", "0"},
                    "Once upon a time\n");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(lines(p.out).size(), 1u);
  EXPECT_EQ(p.out, kContinuation.substr(0, p.out.size() - 1) + "\n");
}

TEST(Chat, UndoTokensAndCommands) {
  expect_data();
  Proc p = offgraph(chat_args(kGguf), "Once upon a time\n/undo 3\n/undo 999\n/undo x\n/stats\n/help\n/bogus\n"
                                      "/undo\n/undo\n");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.err.find("[undo: removed 3 tokens]"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("[22/512 tokens]"), std::string::npos);
  EXPECT_NE(p.err.find("[cannot undo 999 tokens: the history holds 22]"), std::string::npos);
  EXPECT_NE(p.err.find("[/undo N needs a whole number N >= 1, got 'x']"), std::string::npos);
  EXPECT_NE(p.err.find("[stats] prompt tokens: 5, generated tokens: 20"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("/undo N  drop the last N tokens"), std::string::npos);
  EXPECT_NE(p.err.find("[unknown command /bogus"), std::string::npos);
  EXPECT_NE(p.err.find("[nothing to undo]"), std::string::npos);
}

TEST(Chat, OverflowChangesNothing) {
  expect_data();
  // Capacity 30: the first turn uses 25; the second cannot fit and changes
  // nothing; the third (short) still continues from the first.
  Proc ref = offgraph(chat_args(kGguf, {"--kv-max-capacity", "30"}, "3"),
                      "Once upon a time\nLily\n");
  Proc p = offgraph(chat_args(kGguf, {"--kv-max-capacity", "30"}, "3"),
                    "Once upon a time\nthe little girl named Lily went to the park to play with her big red ball and her "
                    "friend Tom\nLily\n");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.err.find("[cache full: 8/30 tokens used, this turn needs"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("; /undo or /reset makes room]"), std::string::npos) << p.err;
  EXPECT_EQ(p.out, ref.out);
  // A reply capped by the capacity says so.
  Proc q = offgraph(chat_args(kGguf, {"--kv-max-capacity", "12"}), "Once upon a time\n");
  EXPECT_NE(q.err.find("[reply cut: the cache is full at 12/12 tokens"), std::string::npos) << q.err;
  EXPECT_NE(q.err.find("[12/12 tokens]"), std::string::npos);
}

// /undo N across a wrapped ring must recompute and give exactly what the
// reference cache (which keeps everything) gives.
TEST(Chat, UndoPastAWrappedRingRecomputes) {
  for (auto fam : {synth::Family::kMistral, synth::Family::kGemma3}) {
    synth::SynthSpec spec = synth::tiny_spec(fam);
    ASSERT_GT(spec.window, 0);
    ASSERT_LE(spec.window, 8);
    const std::string path = scratch_dir() + "/" + synth::family_name(fam) + ".gguf";
    synth::write_gguf(spec, path);
    const std::string script =
        "Once upon a time there was a cat\nthe cat sat on the mat\n/undo 15\nthe dog\n/undo\nthe dog\n"
        "/undo 30\nthe bird flew\n/quit\n";
    auto chat = [&](const std::string& kind) {
      return offgraph({"chat", "--model", path, "--chat", "0", "--max-new-tokens", "12", "--kv-cache", kind,
                       "--prefill-chunk-size", "4"},
                      script);
    };
    Proc seq = chat("sequence"), ref = chat("reference");
    ASSERT_EQ(seq.code, 0) << seq.err;
    ASSERT_EQ(ref.code, 0) << ref.err;
    EXPECT_NE(seq.err.find("ring("), std::string::npos) << seq.err;
    EXPECT_NE(seq.err.find("recomputed"), std::string::npos) << seq.err;
    EXPECT_EQ(ref.err.find("recomputed"), std::string::npos);
    EXPECT_EQ(lines(seq.out).size(), 5u);
    EXPECT_EQ(seq.out, ref.out) << synth::family_name(fam);
    const auto o = lines(seq.out);
    EXPECT_EQ(o[2], o[3]);  // /undo then the same turn
  }
}

TEST(Chat, RingWithWindowOverrideMatchesReference) {
  expect_data();
  const std::string script = "Once upon a time\nLily\n/undo 20\nLily\n";
  auto chat = [&](const std::string& kind) {
    return offgraph(chat_args(kGguf, {"--kv-windows", "6", "--kv-cache", kind, "--prefill-chunk-size", "3"}),
                    script);
  };
  Proc seq = chat("sequence"), ref = chat("reference");
  ASSERT_EQ(seq.code, 0) << seq.err;
  EXPECT_NE(seq.err.find("5 layers: 0 flat + 5 ring(window 6)"), std::string::npos) << seq.err;
  EXPECT_NE(seq.err.find("recomputed"), std::string::npos) << seq.err;
  EXPECT_EQ(seq.out, ref.out);
}

// A real chat template (llama3) over the Llama 3 vocabulary: each turn is the
// template's delta; /undo and the same turn again reproduce the reply.
TEST(Chat, Llama3TemplateUndoReproduces) {
  synth::SynthSpec spec = synth::tiny_spec(synth::Family::kQwen2);
  spec.tokenizer = "llama3";
  const std::string path = scratch_dir() + "/qwen2_llama3.gguf";
  synth::write_gguf(spec, path);
  int n = 0;
  auto chat = [&](const std::string& script) {
    // --stats-file: stdout holds only the replies; --verbose: the diagnostics stay on stderr.
    const std::string report = scratch_dir() + "/undo-report-" + std::to_string(n++) + ".json";
    Proc p = offgraph({"chat", "--model", path, "--chat", "llama3", "--system", "Be brief.", "--max-new-tokens", "6",
                       "--stats", "json", "--stats-file", report, "--verbose"},
                      script);
    EXPECT_EQ(p.code, 0) << p.err;
    p.err += "\n" + slurp(report);  // the report as the last line, as the checks below read it
    while (!p.err.empty() && p.err.back() == '\n') p.err.pop_back();
    return p;
  };
  Proc one = chat("Hello there\n");
  Proc two = chat("Hello there\nHow are you?\n");
  Proc undo = chat("Hello there\nHow are you?\n/undo\nHow are you?\n");
  EXPECT_NE(one.err.find("[chat template: llama3]"), std::string::npos) << one.err;
  ASSERT_GT(two.out.size(), one.out.size());
  EXPECT_EQ(two.out.substr(0, one.out.size()), one.out);
  const std::string second = two.out.substr(one.out.size());
  EXPECT_EQ(undo.out, two.out + second);
  // The second turn prefills only its delta (plus the first reply's pending last token).
  const auto j1 = nlohmann::json::parse(lines(one.err).back());
  const auto j2 = nlohmann::json::parse(lines(two.err).back());
  const int p1 = j1.at("prompt_tokens").get<int>(), p2 = j2.at("prompt_tokens").get<int>();
  EXPECT_GT(p1, 10);  // system, user and the headers
  EXPECT_LT(p2 - p1, p1);
  EXPECT_GT(p2 - p1, 5);
}

// ---- bad flags: one message each, exit code 2 ----

struct BadCase {
  std::vector<std::string> args;
  std::string message;
};

TEST(Flags, EveryBadFlagAndValueExitsWithTwo) {
  expect_data();
  const std::string m = kGguf;
  const std::vector<BadCase> cases = {
      {{"run"}, "--model is required"},
      {{"run", "--model", m}, "--prompt is required"},
      {{"run", "--model", m, "--prompt", "a", "--interactive"}, "--prompt cannot be combined with --interactive"},
      {{"run", "--model", m, "--prompt", "a", "--max-new-tokens", "abc"}, "--max-new-tokens expects an integer"},
      {{"run", "--model", m, "--prompt", "a", "--max-new-tokens", "12x"}, "--max-new-tokens expects an integer"},
      {{"run", "--model", m, "--prompt", "a", "--max-new-tokens", "-1"},
       "--max-new-tokens is -1, outside [0, 2147483647]"},
      {{"run", "--model", m, "--prompt", "a", "--max-new-tokens"}, "--max-new-tokens needs a value"},
      {{"run", "--model", m, "--prompt", "a", "--max-new-tokens="}, "--max-new-tokens expects an integer, got ''"},
      {{"run", "--model", m, "--prompt", "a", "--max-new-tokens", ""}, "--max-new-tokens expects an integer, got ''"},
      {{"run", "--model", m, "--prompt", "a", "--max-new-tokens", "99999999999999999999"},
       "--max-new-tokens must be in [-9223372036854775808, 9223372036854775807], got '99999999999999999999'"},
      {{"run", "--model", m, "--prompt", "a", "--seed", "-99999999999999999999"}, "--seed must be in [-1,"},
      {{"run", "--model", m, "--prompt", "a", "--kv-windows", "1,99999999999999999999"},
       "--kv-windows values must be in [0, 2147483647], got '99999999999999999999'"},
      {{"run", "--model", m, "--prompt", "a", "--help=1"}, "--help takes no value, got '1'"},
      {{"run", "--model", m, "--prompt", "a", "--chat="}, "--chat must be one of auto|"},
      {{"run", "--model", m, "--prompt", "a", "--temperature", "-0.5"}, "--temperature is -0.5, outside [0, 2]"},
      {{"run", "--model", m, "--prompt", "a", "--temperature", "3"}, "--temperature is 3, outside [0, 2]"},
      {{"run", "--model", m, "--prompt", "a", "--temperature", "nan"}, "--temperature expects a number"},
      {{"run", "--model", m, "--prompt", "a", "--temperature", "1", "--top-p", "0"}, "--top-p is 0, outside (0, 1]"},
      {{"run", "--model", m, "--prompt", "a", "--temperature", "1", "--top-p", "1.5"}, "--top-p is 1.5, outside (0, 1]"},
      {{"run", "--model", m, "--prompt", "a", "--temperature", "1", "--min-p", "2"}, "--min-p is 2, outside [0, 1]"},
      {{"run", "--model", m, "--prompt", "a", "--temperature", "1", "--top-k", "-3"}, "--top-k is -3, outside [-1,"},
      {{"run", "--model", m, "--prompt", "a", "--top-k", "5"}, "need --temperature > 0"},
      {{"run", "--model", m, "--prompt", "a", "--repeat-penalty", "0"}, "--repeat-penalty is 0, outside (0, 100]"},
      {{"run", "--model", m, "--prompt", "a", "--repeat-last-n", "-1"}, "--repeat-last-n is -1, outside [0,"},
      {{"run", "--model", m, "--prompt", "a", "--seed", "x"}, "--seed expects an integer"},
      {{"run", "--model", m, "--prompt", "a", "--seed", "-2"}, "--seed must be in [-1,"},
      {{"run", "--model", m, "--prompt", "a", "--chat", "foo"}, "--chat must be one of auto|"},
      {{"run", "--model", m, "--prompt", "a", "--kv-storage-dtype", "f8"},
       "--kv-storage-dtype must be one of f32|f16|bf16|q8_0"},
      {{"run", "--model", m, "--prompt", "a", "--kv-cache", "paged"}, "--kv-cache must be one of sequence|reference"},
      {{"run", "--model", m, "--prompt", "a", "--kv-windows", "512,x"}, "--kv-windows expects comma-separated"},
      {{"run", "--model", m, "--prompt", "a", "--kv-windows", "512,-1"}, "--kv-windows values must be in [0,"},
      {{"run", "--model", m, "--prompt", "a", "--kv-windows", ""}, "--kv-windows expects comma-separated"},
      {{"run", "--model", m, "--prompt", "a", "--kv-max-capacity", "-5"}, "--kv-max-capacity must be in [0,"},
      {{"run", "--model", m, "--prompt", "a", "--kv-initial-capacity", "0"}, "--kv-initial-capacity must be in [1,"},
      {{"run", "--model", m, "--prompt", "a", "--kv-initial-capacity", "1024", "--kv-max-capacity", "512"},
       "--kv-initial-capacity 1024 exceeds --kv-max-capacity 512"},
      {{"run", "--model", m, "--prompt", "a", "--prefill-chunk-size", "0"}, "--prefill-chunk-size must be in [1,"},
      {{"run", "--model", m, "--prompt", "a", "--threads", "-2"}, "--threads must be in [0, 1024]"},
      {{"run", "--model", m, "--prompt", "a", "--threads", "5000"}, "--threads must be in [0, 1024]"},
      {{"run", "--model", m, "--prompt", "a", "--stats", "xml"}, "--stats must be one of text|json"},
      {{"run", "--model", m, "--prompt", "a", "--warmup=maybe"}, "--warmup takes no value or true|false"},
      {{"run", "--model", m, "--prompt", "a", "--stop", ""}, "--stop must not be empty"},
      {{"run", "--model", m, "--prompt", "a", "--max-new-token", "5"},
       "unknown flag --max-new-token (did you mean --max-new-tokens?)"},
      {{"run", "--model", m, "--prompt", "a", "--temprature", "1"},
       "unknown flag --temprature (did you mean --temperature?)"},
      {{"run", "--model", m, "--prompt", "a", "--bogus"}, "unknown flag --bogus"},
      {{"run", "--model", m, "--prompt", "a", "-x"}, "unknown flag '-x'"},
      {{"run", "--model", m, "--prompt", "a", "extra"}, "unexpected argument 'extra'"},
      {{"run", "--model", m, "--prompt", "a", "--temperature", "1", "--temperature", "2"},
       "--temperature given more than once"},
      {{"chat", "--model", m, "--prompt", "a"}, "unknown flag --prompt"},
      {{"chat"}, "--model is required"},
      {{"chat", "--model", m, "--kv-cache", "x"}, "--kv-cache must be one of"},
      {{"chat", "--model", m, "--warmup"}, "unknown flag --warmup"},
      {{"run", "--model", m, "--interactive", "--warmup"}, "--warmup cannot be combined with --interactive"},
  };
  for (const auto& c : cases) {
    Proc p = offgraph(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_EQ(p.code, 2) << joined << "\n" << p.err;
    EXPECT_NE(p.err.find(c.message), std::string::npos) << joined << "\nwanted: " << c.message << "\ngot: " << p.err;
    EXPECT_EQ(lines(p.err).size(), 1u) << joined << "\n" << p.err;  // one clear line
    EXPECT_TRUE(p.out.empty()) << joined;
  }
}

// --flag=value and --flag value are one syntax: an empty value is the same
// value either way (an empty prompt is a valid prompt: BOS only).
TEST(Flags, EmptyValueIsTheSameInBothSpellings) {
  expect_data();
  const Proc eq = offgraph({"run", "--model", kGguf, "--prompt=", "--max-new-tokens", "8", "--chat", "0"});
  const Proc sep = offgraph({"run", "--model", kGguf, "--prompt", "", "--max-new-tokens", "8", "--chat", "0"});
  EXPECT_EQ(eq.code, 0) << eq.err;
  EXPECT_EQ(sep.code, 0) << sep.err;
  EXPECT_EQ(eq.out, sep.out);
  EXPECT_FALSE(eq.out.empty());
}

// More --kv-windows entries than the model has caches: a warning names the
// entries used and those ignored, and an ignored window narrows nothing.
TEST(Run, ExtraWindowEntriesAreNamedAndIgnored) {
  expect_data();
  const Proc p = offgraph(run_args(kGguf, {"--kv-windows", "0,0,0,0,0,16"}));
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.err.find("[warning] --kv-windows has 6 entries but the model has 5 caches: using 0,0,0,0,0, "
                       "ignoring 16"),
            std::string::npos)
      << p.err;
  EXPECT_NE(p.err.find("max_write=512"), std::string::npos) << p.err;
  EXPECT_EQ(p.out, kContinuation);
  const Proc exact = offgraph(run_args(kGguf, {"--kv-windows", "0,0,0,0,0"}));
  EXPECT_EQ(exact.err.find("[warning]"), std::string::npos) << exact.err;
}

// The seed a random run prints replays through --seed.
TEST(Run, PrintedRandomSeedReplays) {
  expect_data();
  for (int i = 0; i < 3; ++i) {
    const Proc a = offgraph(run_args(kGguf, {"--temperature", "1"}));
    ASSERT_EQ(a.code, 0) << a.err;
    const size_t at = a.err.find("[sampler] seed ");
    ASSERT_NE(at, std::string::npos) << a.err;
    const std::string seed = a.err.substr(at + 15, a.err.find('\n', at) - at - 15);
    const Proc b = offgraph(run_args(kGguf, {"--temperature", "1", "--seed", seed}));
    ASSERT_EQ(b.code, 0) << "seed " << seed << ": " << b.err;
    EXPECT_EQ(a.out, b.out) << "seed " << seed;
  }
}

TEST(Flags, UnknownCommand) {
  Proc p = offgraph({"runn"});
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("unknown command 'runn'"), std::string::npos);
}

}  // namespace
}  // namespace og::e2e
