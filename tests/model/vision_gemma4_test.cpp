// Gemma 4's vision tower (model/vision_gemma4.h) against its plain twin
// (naive_vision_gemma4.h) on tiny random towers under the HF names and as an
// mmproj GGUF, the processor's resize rule, the config, and bad inputs.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "format/gguf.h"
#include "kernels/kernel_table.h"
#include "model/mmproj_gguf_gemma4.h"
#include "model/vision_encoder.h"
#include "model/vision_gemma4.h"
#include "model_test_util.h"
#include "naive_vision_gemma4.h"
#include "vision_mmproj_writers.h"
#include "vision_towers_fixture.h"

namespace og {
namespace {

using test::MemorySource;

double rel(const std::vector<float>& a, const std::vector<double>& b) {
  return test::max_rel_err(a, std::vector<float>(b.begin(), b.end()));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<float> pixels_of(int64_t h, int64_t w, uint32_t seed) {
  std::mt19937 rng(seed);
  return test::random_values(rng, 3 * h * w, -1.0f, 1.0f);
}

// A 16 x 24 input: a 4 x 6 patch grid (24 patches: a full block of queries and
// a partial one), pooled 2 x 2 to 2 x 3 tokens; 4 heads over 2 kv heads.
TEST(VisionGemma4, EqualsThePlainTwinOnEveryIsa) {
  Gemma4VisionConfig plain = test::gemma4_tiny_config();
  plain.standardize = false;
  plain.clipped_linears = false;
  for (const Gemma4VisionConfig& c : {test::gemma4_tiny_config(), plain}) {
    MemorySource src;
    test::add_gemma4_tower(src, c, 7, "model.", c.clipped_linears);
    const std::vector<float> pixels = pixels_of(16, 24, 3);
    const std::vector<double> want = test::naive_gemma4_tower(c, src, pixels, 16, 24);
    const Gemma4VisionTower tower(c, bind_gemma4_vision(c, src));
    EXPECT_EQ(tower.tokens_for(16, 24), 6);
    const kernels::Isa was = kernels::set_active_isa(kernels::available_isas().front());
    for (kernels::Isa isa : kernels::available_isas()) {
      kernels::set_active_isa(isa);
      const std::vector<float> got = tower.encode(pixels, 16, 24);
      ASSERT_EQ(got.size(), static_cast<size_t>(6 * 24)) << kernels::isa_str(isa);
      EXPECT_LT(rel(got, want), 2e-5) << kernels::isa_str(isa) << (c.clipped_linears ? " clamped" : " plain");
    }
    kernels::set_active_isa(was);
  }
}

TEST(VisionGemma4, TheClampsAndTheStandardizationChangeTheRows) {
  // The fixture's bounds and std tensors are not vacuous: reading them (as
  // use_clipped_linears / standardize say) gives other rows than ignoring them.
  const Gemma4VisionConfig c = test::gemma4_tiny_config();
  MemorySource src;
  test::add_gemma4_tower(src, c, 7);
  const std::vector<float> pixels = pixels_of(16, 24, 3);
  const std::vector<float> full = Gemma4VisionTower(c, bind_gemma4_vision(c, src)).encode(pixels, 16, 24);
  Gemma4VisionConfig no_clamps = c;
  no_clamps.clipped_linears = false;
  EXPECT_GT(test::max_rel_err(Gemma4VisionTower(no_clamps, bind_gemma4_vision(no_clamps, src)).encode(pixels, 16, 24),
                              full),
            1e-3);
  Gemma4VisionConfig no_std = c;
  no_std.standardize = false;
  EXPECT_GT(
      test::max_rel_err(Gemma4VisionTower(no_std, bind_gemma4_vision(no_std, src)).encode(pixels, 16, 24), full),
      1e-3);
}

TEST(VisionGemma4, AnMmprojGgufGivesTheHfTowersRows) {
  const Gemma4VisionConfig c = test::gemma4_tiny_config();
  MemorySource hf;
  test::add_gemma4_tower(hf, c, 13);
  const std::vector<float> pixels = pixels_of(24, 16, 17);  // portrait: 6 x 4 patches
  const std::vector<float> want = Gemma4VisionTower(c, bind_gemma4_vision(c, hf)).encode(pixels, 24, 16);
  const std::vector<uint8_t> bytes = test::gemma4_mmproj_of(hf, c);
  const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
  const Gemma4VisionConfig g = gemma4_mmproj_config(*f);
  EXPECT_EQ(g.head_dim, 8);
  EXPECT_EQ(g.n_kv_heads, 2);
  EXPECT_EQ(g.position_table, 16);
  EXPECT_EQ(g.pooling, 2);
  EXPECT_TRUE(g.standardize);
  EXPECT_EQ(g.rms_norm_eps, 0.05f);
  Gemma4VisionConfig g12 = g;
  g12.max_soft_tokens = c.max_soft_tokens;
  const std::vector<float> got = Gemma4VisionTower(g12, bind_gemma4_mmproj(g12, *f)).encode(pixels, 24, 16);
  // The conv-ordered patch weight sums its products in another order: equal to rounding.
  EXPECT_LT(test::max_rel_err(got, want), 1e-5);
}

TEST(VisionGemma4, TheMmprojWriterGivesAFileTheLoaderReadsBack) {
  EXPECT_EQ(gemma4_mmproj_name("model.vision_tower.encoder.layers.3.self_attn.q_proj.linear.weight", "model."),
            "v.blk.3.attn_q.weight");
  EXPECT_EQ(gemma4_mmproj_name("model.vision_tower.encoder.layers.0.mlp.down_proj.output_max", "model."),
            "v.blk.0.ffn_down.output_max");
  EXPECT_EQ(gemma4_mmproj_name("model.embed_vision.embedding_projection.weight", "model."),
            "mm.input_projection.weight");
  EXPECT_EQ(gemma4_mmproj_name("model.language_model.layers.0.mlp.up_proj.weight", "model."), "");
  EXPECT_EQ(gemma4_mmproj_name("model.audio_tower.layers.0.x", "model."), "");
  const Gemma4VisionConfig c = test::gemma4_tiny_config();
  MemorySource hf;
  test::add_gemma4_tower(hf, c, 23);
  hf.add("model.language_model.norm.weight", {4}, {1, 1, 1, 1});  // text tensors stay out
  const std::vector<float> pixels = pixels_of(16, 24, 8);
  const std::vector<float> want = Gemma4VisionTower(c, bind_gemma4_vision(c, hf)).encode(pixels, 16, 24);
  for (DType dt : {DType::F32, DType::F16}) {
    MmprojWriteOptions o;
    o.matrices = dt;
    GgufWriter w;
    add_gemma4_mmproj(c, hf, o, w);
    const std::vector<uint8_t> bytes = w.serialize();
    const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
    EXPECT_EQ(mmproj_projector_type(*f), "gemma4v");
    EXPECT_EQ(f->find("model.language_model.norm.weight"), nullptr);
    EXPECT_EQ(f->find("v.blk.1.attn_out.input_min")->shape, std::vector<int64_t>{1});
    Gemma4VisionConfig g = gemma4_mmproj_config(*f);
    g.max_soft_tokens = c.max_soft_tokens;
    const std::vector<float> got = Gemma4VisionTower(g, bind_gemma4_mmproj(g, *f)).encode(pixels, 16, 24);
    EXPECT_LT(test::max_rel_err(got, want), dt == DType::F32 ? 1e-5 : 2e-2) << (dt == DType::F32 ? "f32" : "f16");
  }
}

TEST(VisionGemma4, ImageSizeFollowsTheProcessor) {
  // transformers' get_aspect_ratio_preserving_size with patch 16, pooling 3,
  // 280 soft tokens (2520 patches); the values were computed with its formula.
  Gemma4VisionConfig c;
  c.patch_size = 16;
  c.pooling = 3;
  c.max_soft_tokens = 280;
  using HW = std::pair<int64_t, int64_t>;
  EXPECT_EQ(gemma4_image_size(c, 896, 896), HW(768, 768));
  EXPECT_EQ(gemma4_image_size(c, 500, 1000), HW(528, 1104));
  EXPECT_EQ(gemma4_image_size(c, 37, 91), HW(480, 1248));
  EXPECT_EQ(gemma4_image_size(c, 10, 5000), HW(48, 13440));  // a side rounds to 0: one row of 280 tokens
  EXPECT_EQ(gemma4_image_size(c, 3000, 20), HW(9792, 48));
  EXPECT_NE(error_of([&] { gemma4_image_size(c, 0, 10); }).find("has no patches"), std::string::npos);
}

TEST(VisionGemma4, ConfigFromTheHfConfig) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "model_type": "gemma4", "text_config": {"hidden_size": 1536},
    "vision_config": {"model_type": "gemma4_vision", "hidden_size": 768, "intermediate_size": 3072,
                      "num_hidden_layers": 16, "num_attention_heads": 12, "num_key_value_heads": 12,
                      "head_dim": 64, "patch_size": 16, "pooling_kernel_size": 3,
                      "position_embedding_size": 10240, "rms_norm_eps": 1e-6,
                      "rope_parameters": {"rope_type": "default", "rope_theta": 100.0},
                      "hidden_activation": "gelu_pytorch_tanh", "standardize": false,
                      "use_clipped_linears": false}})");
  const Gemma4VisionConfig c = gemma4_vision_config(j, "config.json");
  EXPECT_EQ(c.hidden, 768);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.n_kv_heads, 12);
  EXPECT_EQ(c.pooling, 3);
  EXPECT_EQ(c.position_table, 10240);
  EXPECT_EQ(c.text_hidden, 1536);
  EXPECT_FLOAT_EQ(c.rope_theta, 100.0f);
  EXPECT_EQ(c.max_patches(), 2520);
  j["vision_config"]["hidden_activation"] = "silu";
  EXPECT_NE(error_of([&] { gemma4_vision_config(j, "config.json"); }).find("hidden_activation is \"silu\""),
            std::string::npos);
  j["vision_config"]["hidden_activation"] = "gelu_pytorch_tanh";
  j["vision_config"]["head_dim"] = 66;
  EXPECT_NE(error_of([&] { gemma4_vision_config(j, "config.json"); }).find("head_dim 66 is not a multiple of 4"),
            std::string::npos);
  j["vision_config"].erase("hidden_size");
  EXPECT_NE(error_of([&] { gemma4_vision_config(j, "config.json"); }).find("vision_config.hidden_size is missing"),
            std::string::npos);
}

TEST(VisionGemma4, BadSizesTensorsAndFilesAreClearErrors) {
  const Gemma4VisionConfig c = test::gemma4_tiny_config();
  MemorySource src;
  test::add_gemma4_tower(src, c, 2);
  const Gemma4VisionTower tower(c, bind_gemma4_vision(c, src));
  EXPECT_NE(error_of([&] { tower.encode(pixels_of(12, 16, 1), 12, 16); }).find("multiples of 8"), std::string::npos);
  EXPECT_NE(error_of([&] { tower.encode(pixels_of(16, 16, 1), 16, 24); }).find("got 768 values"), std::string::npos);
  // 8 x 8 patches = 64 > 48 (12 soft tokens of 2 x 2).
  EXPECT_NE(error_of([&] { tower.encode(pixels_of(32, 32, 1), 32, 32); }).find("64 patches is more than the 48"),
            std::string::npos);
  MemorySource empty;
  EXPECT_NE(error_of([&] { bind_gemma4_vision(c, empty); }).find("not a Gemma 4 checkpoint"), std::string::npos);
  Gemma4VisionConfig wide = c;
  wide.head_dim = 12;
  EXPECT_NE(error_of([&] { bind_gemma4_vision(wide, src); }).find("self_attn.q_norm.weight has shape [8], expected [12]"),
            std::string::npos);
  std::vector<uint8_t> bytes = test::gemma4_mmproj_of(src, c);
  auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
  Gemma4VisionConfig three = gemma4_mmproj_config(*f);
  three.n_layers = 3;
  EXPECT_NE(error_of([&] { bind_gemma4_mmproj(three, *f); }).find("vision tensor v.blk.2.ln1.weight is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace og
