// gemma4 through the built binary: the per-layer table stays in the mapped
// file (peak RSS of a run far below the file size), `inspect` shows the
// layer -> cache map, and run/chat work on the synthetic model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

namespace fs = std::filesystem;

std::string tiny_gemma4() {
  static const std::string path = [] {
    const std::string p = scratch_dir() + "/gemma4-tiny.gguf";
    synth::write_gguf(synth::tiny_spec(synth::Family::kGemma4), p);
    return p;
  }();
  return path;
}

// E2B's structure (35 layers, 4 sliding : 1 full, 20 sharing, head sizes
// 256/512, per-layer inputs 256 wide) with a narrow stream and 2 heads, so
// the per-layer table (16384 x 8960 in f16, 294 MB) is most of the file, as
// in E2B (the real shape's file takes minutes to write: benchmarks only).
TEST(Gemma4Run, PerLayerTableStaysInTheMappedFile) {
  synth::SynthSpec s = synth::gemma4_e2b_spec();
  s.d_model = 64;
  s.n_heads = 2;
  s.d_ff = 64;
  s.vocab = 16384;
  s.weight_dtype = DType::F16;
  const std::string path = scratch_dir() + "/gemma4-e2b-structure.gguf";
  synth::write_gguf(s, path);
  const int64_t file_bytes = static_cast<int64_t>(fs::file_size(path));
  const int64_t table_bytes = s.vocab * s.n_layers * s.d_per_layer * 2;
  ASSERT_GT(table_bytes, file_bytes * 9 / 10);
  for (const bool mmap : {false, true}) {
    std::vector<std::string> args = {"run", "--model", path, "--prompt", "Once upon a time", "--max-new-tokens", "8",
                                     "--temperature", "0"};
    if (mmap) args.push_back("--mmap");
    const Proc r = offgraph(args);
    ASSERT_EQ(r.code, 0) << r.err;
    // Only the rows of the step's tokens are read: the run holds far less than
    // the file minus most of the table.
    EXPECT_LT(r.max_rss_kb * 1024, file_bytes - table_bytes * 3 / 4)
        << (mmap ? "--mmap" : "huge-page copy") << ": peak RSS " << r.max_rss_kb << " KiB, file " << file_bytes;
  }
  fs::remove(path);
}

TEST(Gemma4Run, InspectShowsTheLayerToCacheMap) {
  const Proc r = offgraph({"inspect", tiny_gemma4(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "gemma4");
  const nlohmann::json& caches = j["kv"]["caches"];
  ASSERT_EQ(caches.size(), 5u) << r.out;
  EXPECT_EQ(caches[4]["layers"], nlohmann::json::array({4, 9}));
  EXPECT_EQ(caches[3]["layers"], nlohmann::json::array({3, 5, 6, 7, 8}));
  EXPECT_EQ(caches[4]["head_dim_k"], 32);
  EXPECT_EQ(caches[3]["window"], 8);
  // K and V at f16 per position: 4 sliding caches of 1 x 16 and one full of 1 x 32.
  EXPECT_EQ(j["kv"]["bytes_per_position_f16"], (4 * 32 + 64) * 2);
  const Proc t = offgraph({"inspect", tiny_gemma4()});
  EXPECT_NE(t.out.find("layers 3,5,6,7,8"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("per_layer_input=8"), std::string::npos) << t.out;
  // The HF checkpoint's vision tensor is skipped, and inspect says so.
  const std::string hf = scratch_dir() + "/gemma4-tiny-hf";
  synth::write_hf(synth::tiny_spec(synth::Family::kGemma4), hf);
  const Proc h = offgraph({"inspect", hf});
  ASSERT_EQ(h.code, 0) << h.err;
  EXPECT_NE(h.out.find("note:          1 tensors outside the text model (vision/audio towers) are ignored"),
            std::string::npos)
      << h.out;
  EXPECT_NE(h.out.find("layers 3,5,6,7,8"), std::string::npos) << h.out;
}

TEST(Gemma4Run, RunAndChatWithRingOverridesAndQuantizedKv) {
  const Proc r = offgraph({"run", "--model", tiny_gemma4(), "--prompt", "Once upon a time", "--max-new-tokens", "24",
                           "--temperature", "0", "--kv-storage-dtype", "q8_0", "--kv-windows", "4,0",
                           "--prefill-chunk-size", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Proc c = offgraph({"chat", "--model", tiny_gemma4(), "--max-new-tokens", "12", "--temperature", "0"},
                          "Hello there\nAnd again\n/undo\nOnce more\n/quit\n");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(count(c.err, "[error"), 0u) << c.err;
}

}  // namespace
}  // namespace og::e2e
