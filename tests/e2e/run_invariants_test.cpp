// Exactness invariants of `offgraph run` on synthetic sliding-window models
// (mistral: a window on every layer; gemma3: 5 local : 1 global): a long greedy
// generation is the same text whatever the cache kind (ring `sequence` or the
// `reference` oracle), the prefill chunk size and the layout (GGUF or HF), and a
// window override changes the text the same way for both kinds.
#include <gtest/gtest.h>

#include <map>

#include "e2e_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

struct Models {
  std::string gguf, hf;
};

Models write_models(synth::Family fam) {
  synth::SynthSpec spec = synth::tiny_spec(fam);
  const std::string base = scratch_dir() + "/inv_" + synth::family_name(fam);
  synth::write_gguf(spec, base + ".gguf");
  synth::write_hf(spec, base + "_hf");
  return {base + ".gguf", base + "_hf"};
}

// 150 greedy tokens after a prompt longer than the windows (so both prefill and
// decode wrap the rings).
Proc run(const std::string& model, const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"run",      "--model", model, "--prompt", "Once upon a time there was a cat who sat",
                                "--chat",   "0",       "--max-new-tokens", "150"};
  a.insert(a.end(), extra.begin(), extra.end());
  return offgraph(a);
}

TEST(RunInvariants, CacheKindChunkingAndLayoutDoNotChangeGreedyOutput) {
  for (synth::Family fam : {synth::Family::kMistral, synth::Family::kGemma3}) {
    const synth::SynthSpec spec = synth::tiny_spec(fam);
    ASSERT_GT(spec.window, 0);
    ASSERT_LT(spec.window, 16);
    const Models m = write_models(fam);
    // window override ("" = the model's) -> the output every setting must give
    std::map<std::string, std::string> expected;
    for (const std::string windows : {"", "0", "3,11"}) {
      for (const std::string kind : {"reference", "sequence"}) {
        for (const std::string chunk : {"512", "5", "1"}) {
          std::vector<std::string> extra = {"--kv-cache", kind, "--prefill-chunk-size", chunk};
          if (!windows.empty()) extra.insert(extra.end(), {"--kv-windows", windows});
          const std::string what = std::string(synth::family_name(fam)) + " windows=" + windows + " " + kind +
                                   " chunk=" + chunk;
          const Proc p = run(m.gguf, extra);
          ASSERT_EQ(p.code, 0) << what << "\n" << p.err;
          ASSERT_FALSE(p.out.empty()) << what;
          if (kind == "sequence" && windows != "0") {
            EXPECT_NE(p.err.find("ring("), std::string::npos) << p.err;
          }
          auto [it, first] = expected.emplace(windows, p.out);
          if (!first) {
            EXPECT_EQ(p.out, it->second) << what;
          }
        }
      }
      std::vector<std::string> extra = {"--prefill-chunk-size", "4"};
      if (!windows.empty()) extra.insert(extra.end(), {"--kv-windows", windows});
      const Proc hf = run(m.hf, extra);
      ASSERT_EQ(hf.code, 0) << hf.err;
      EXPECT_EQ(hf.out, expected[windows]) << synth::family_name(fam) << " HF layout, windows=" << windows;
    }
    // The overrides are really applied: attending to everything, or to narrower
    // windows, changes what the model says.
    EXPECT_NE(expected[""], expected["0"]) << synth::family_name(fam);
    EXPECT_NE(expected[""], expected["3,11"]) << synth::family_name(fam);
  }
}

// Reduced-precision cache storage runs every dtype on a ring model and stays
// close: the first tokens match f32.
TEST(RunInvariants, StorageDtypesOnRingLayers) {
  const Models m = write_models(synth::Family::kGemma3);
  const Proc f32 = run(m.gguf, {"--kv-storage-dtype", "f32", "--prefill-chunk-size", "3"});
  ASSERT_EQ(f32.code, 0) << f32.err;
  for (const char* dt : {"f16", "bf16", "q8_0"}) {
    const Proc p = run(m.gguf, {"--kv-storage-dtype", dt, "--prefill-chunk-size", "3"});
    ASSERT_EQ(p.code, 0) << dt << "\n" << p.err;
    EXPECT_NE(p.err.find(std::string("kv_dtype=") + dt), std::string::npos);
    EXPECT_EQ(p.out.substr(0, 8), f32.out.substr(0, 8)) << dt;
  }
}

}  // namespace
}  // namespace og::e2e
