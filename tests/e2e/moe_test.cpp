// Mixture-of-experts models (synthetic qwen3moe, mixtral and gpt-oss) through
// the built binary: `inspect` shows the experts (and gpt-oss's sinks, YaRN and
// windows), `run` decodes greedily and the GGUF and HF layouts and an export
// agree, `batch` gives each prompt what `run` gives it alone (the scheduler
// groups many sessions' rows by expert; gpt-oss's rings and sinks included).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

std::string synth_file(synth::Family f, bool hf) {
  const std::string p = scratch_dir() + "/" + synth::family_name(f) + (hf ? "-hf" : ".gguf");
  if (hf) synth::write_hf(synth::tiny_spec(f), p);
  else synth::write_gguf(synth::tiny_spec(f), p);
  return p;
}

std::string run_greedy(const std::string& model, const std::string& prompt) {
  const Proc r = offgraph({"run", "--model", model, "--prompt", prompt, "--max-new-tokens", "24", "--temperature",
                           "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out;
}

// A text as `batch --output text` prints it: backslash, newline, CR and tab
// escaped (random text from a synthetic vocabulary may hold such characters).
std::string batch_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

TEST(MoeRun, InspectShowsTheExperts) {
  const Proc r = offgraph({"inspect", synth_file(synth::Family::kQwen3Moe, false), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "qwen3moe");
  EXPECT_EQ(j["hparams"]["n_experts"], 8) << r.out;
  EXPECT_EQ(j["hparams"]["n_experts_used"], 2) << r.out;
  EXPECT_EQ(j["hparams"]["d_ff_expert"], 32) << r.out;
  const Proc t = offgraph({"inspect", synth_file(synth::Family::kMixtral, true)});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("experts 8 used 2 ff_expert 64"), std::string::npos) << t.out;
}

TEST(MoeRun, GreedyRunsAgreeAcrossLayoutsAndExport) {
  for (synth::Family f : {synth::Family::kQwen3Moe, synth::Family::kMixtral}) {
    const std::string gguf = synth_file(f, false), hf = synth_file(f, true);
    const std::string exported = scratch_dir() + "/" + synth::family_name(f) + "-exported.gguf";
    const Proc e = offgraph({"export", "--model", hf, "--out", exported, "--dtype", "f32", "--force"});
    ASSERT_EQ(e.code, 0) << e.err;
    const std::string want = run_greedy(gguf, "Once upon a time");
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(run_greedy(hf, "Once upon a time"), want) << synth::family_name(f);
    EXPECT_EQ(run_greedy(exported, "Once upon a time"), want) << synth::family_name(f);
  }
}

TEST(MoeRun, BatchEqualsEachPromptAlone) {
  const std::string model = synth_file(synth::Family::kQwen3Moe, false);
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Tom went to the park"};
  std::vector<std::string> args = {"batch", "--model", model, "--max-new-tokens", "24", "--temperature", "0",
                                   "--max-decode-sequences", "3", "--step-tokens", "5"};
  args.insert(args.end(), prompts.begin(), prompts.end());
  const Proc b = offgraph(args);
  ASSERT_EQ(b.code, 0) << b.err;
  std::vector<std::string> outs;
  std::stringstream ss(b.out);
  for (std::string l; std::getline(ss, l);) outs.push_back(l);
  ASSERT_EQ(outs.size(), prompts.size()) << b.out;
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(outs[i], run_greedy(model, prompts[i])) << "prompt " << i;
}

TEST(MoeRun, GptOssInspectAndBatchEqualsAlone) {
  const std::string model = synth_file(synth::Family::kGptOss, false);
  const Proc r = offgraph({"inspect", model});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"gpt-oss", "window 8", "window 0", "sinks", "yarn (factor 8, orig 256)",
                           "experts 8 used 4 ff_expert 32 unnormalised softmax-after-topk router-bias expert-bias "
                           "swiglu-oai"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  // Longer than the window (8): the rings wrap while sessions decode side by side.
  const std::vector<std::string> prompts = {"Once upon a time there was a little girl named Lily", "The cat",
                                            "Lily and Tom went to the park to play with a big red ball"};
  std::vector<std::string> args = {"batch", "--model", model, "--max-new-tokens", "16", "--temperature", "0",
                                   "--max-decode-sequences", "3", "--step-tokens", "5"};
  args.insert(args.end(), prompts.begin(), prompts.end());
  const Proc b = offgraph(args);
  ASSERT_EQ(b.code, 0) << b.err;
  std::vector<std::string> outs;
  std::stringstream ss(b.out);
  for (std::string l; std::getline(ss, l);) outs.push_back(l);
  ASSERT_EQ(outs.size(), prompts.size()) << b.out;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Proc a = offgraph({"run", "--model", model, "--prompt", prompts[i], "--max-new-tokens", "16",
                             "--temperature", "0"});
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(outs[i], batch_escaped(a.out)) << "prompt " << i;
  }
}

}  // namespace
}  // namespace og::e2e
