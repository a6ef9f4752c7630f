// Phi-3 (synthetic phi3 with longrope, original context 64) through the built
// binary: `inspect` shows the fused matrices and longrope, the run's context
// (--kv-max-capacity) picks the short or the long factors, and `batch` gives
// each prompt what `run` gives it alone at the same capacity.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

std::string longrope_file() {
  synth::SynthSpec s = synth::tiny_spec(synth::Family::kPhi3);
  s.longrope_original = 64;
  const std::string p = scratch_dir() + "/phi3-longrope.gguf";
  synth::write_gguf(s, p);
  return p;
}

std::string run_greedy(const std::string& model, const std::string& prompt, const std::string& capacity) {
  const Proc r = offgraph({"run", "--model", model, "--prompt", prompt, "--max-new-tokens", "16", "--temperature",
                           "0", "--kv-max-capacity", capacity});
  EXPECT_EQ(r.code, 0) << r.err;
  return r.out;
}

TEST(Phi3Run, InspectShowsFusedMatricesAndLongrope) {
  const std::string model = longrope_file();
  const Proc j = offgraph({"inspect", model, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json h = nlohmann::json::parse(j.out)["hparams"];
  EXPECT_EQ(h["rope_scaling"], "longrope") << j.out;
  EXPECT_EQ(h["rope_original_ctx"], 64) << j.out;
  const Proc t = offgraph({"inspect", model});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("qkv-fused gate-up-fused longrope (long beyond 64"), std::string::npos) << t.out;
}

TEST(Phi3Run, ContextPicksTheFactorsAndBatchEqualsAlone) {
  const std::string model = longrope_file();
  const std::string short_run = run_greedy(model, "Once upon a time", "64");
  const std::string long_run = run_greedy(model, "Once upon a time", "128");
  EXPECT_FALSE(short_run.empty());
  EXPECT_NE(short_run, long_run);  // short factors at 64 positions, long ones beyond
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Tom went to the park"};
  std::vector<std::string> args = {"batch", "--model", model, "--max-new-tokens", "16", "--temperature", "0",
                                   "--max-decode-sequences", "3", "--step-tokens", "5", "--kv-max-capacity", "128"};
  args.insert(args.end(), prompts.begin(), prompts.end());
  const Proc b = offgraph(args);
  ASSERT_EQ(b.code, 0) << b.err;
  std::vector<std::string> outs;
  std::stringstream ss(b.out);
  for (std::string l; std::getline(ss, l);) outs.push_back(l);
  ASSERT_EQ(outs.size(), prompts.size()) << b.out;
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(outs[i], run_greedy(model, prompts[i], "128")) << "prompt " << i;
}

}  // namespace
}  // namespace og::e2e
