// The LLaVA-style tower (model/vision_llava.h) against its plain twin
// (naive_vision_llava.h): the CLIP ViT read at the penultimate layer, the
// class token dropped or kept, the MLP projector; HF config and mmproj files.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "format/gguf.h"
#include "kernels/kernel_table.h"
#include "model/vision_llava.h"
#include "model_test_util.h"
#include "naive_vision_llava.h"
#include "vision_mmproj_writers.h"
#include "vision_towers_fixture.h"

namespace og {
namespace {

using test::MemorySource;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<float> clip_pixels(const ClipTowerConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  return test::random_values(rng, 3 * c.image_size * c.image_size, -1.5f, 1.5f);
}

TEST(VisionLlava, EqualsThePlainTwinOnEveryIsa) {
  // LLaVA 1.5's reading (quick GELU, the penultimate layer, the class token
  // dropped: 16 rows), and every layer with GELU and the class token kept (17).
  ClipTowerConfig full = test::clip_tiny_config();
  full.quick_gelu = false;
  full.feature_layers = 3;
  full.keep_class = true;
  for (const ClipTowerConfig& c : {test::clip_tiny_config(), full}) {
    MemorySource src;
    test::add_llava_tower(src, c, 5);
    const std::vector<float> pixels = clip_pixels(c, 9);
    const std::vector<double> want = test::naive_llava_tower(c, src, pixels);
    const LlavaVisionTower tower(c, bind_llava_vision(c, src));
    EXPECT_EQ(tower.text_hidden(), 24);
    const kernels::Isa was = kernels::set_active_isa(kernels::available_isas().front());
    for (kernels::Isa isa : kernels::available_isas()) {
      kernels::set_active_isa(isa);
      const std::vector<float> got = tower.encode(pixels);
      ASSERT_EQ(got.size(), static_cast<size_t>(c.n_tokens() * 24)) << kernels::isa_str(isa);
      EXPECT_LT(test::max_rel_err(got, std::vector<float>(want.begin(), want.end())), 2e-5)
          << kernels::isa_str(isa) << " tokens " << c.n_tokens();
    }
    kernels::set_active_isa(was);
  }
}

TEST(VisionLlava, TheFeatureLayerMatters) {
  // Reading after 2 layers and after 3 gives other rows (the cut is real),
  // and the "model." prefix of newer saves binds the same tower.
  const ClipTowerConfig c = test::clip_tiny_config();
  MemorySource src, prefixed;
  test::add_llava_tower(src, c, 5);
  test::add_llava_tower(prefixed, c, 5, "model.");
  const std::vector<float> pixels = clip_pixels(c, 9);
  const std::vector<float> two = LlavaVisionTower(c, bind_llava_vision(c, src)).encode(pixels);
  EXPECT_TRUE(LlavaVisionTower(c, bind_llava_vision(c, prefixed)).encode(pixels) == two);
  ClipTowerConfig last = c;
  last.feature_layers = 3;
  EXPECT_GT(test::max_rel_err(LlavaVisionTower(last, bind_llava_vision(last, src)).encode(pixels), two), 1e-3);
}

TEST(VisionLlava, ConfigFromTheHfConfig) {
  // llava-hf/llava-1.5-7b-hf's shape: hidden_act and layer_norm_eps left to CLIP's defaults.
  nlohmann::json j = nlohmann::json::parse(R"({
    "model_type": "llava", "vision_feature_layer": -2, "vision_feature_select_strategy": "default",
    "projector_hidden_act": "gelu", "image_token_index": 32000,
    "text_config": {"model_type": "llama"},
    "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024, "image_size": 336,
                      "intermediate_size": 4096, "num_attention_heads": 16, "num_hidden_layers": 24,
                      "patch_size": 14, "projection_dim": 768}})");
  const ClipTowerConfig c = llava_vision_config(j, "config.json");
  EXPECT_EQ(c.feature_layers, 23);
  EXPECT_EQ(c.n_patches(), 576);
  EXPECT_EQ(c.n_tokens(), 576);
  EXPECT_TRUE(c.quick_gelu);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-5f);
  EXPECT_EQ(c.head_dim(), 64);
  j["vision_feature_select_strategy"] = "full";
  EXPECT_EQ(llava_vision_config(j, "config.json").n_tokens(), 577);
  j["vision_feature_select_strategy"] = "pooled";
  EXPECT_NE(error_of([&] { llava_vision_config(j, "config.json"); }).find("vision_feature_select_strategy is \"pooled\""),
            std::string::npos);
  j["vision_feature_select_strategy"] = "default";
  j["vision_feature_layer"] = nlohmann::json::array({-2, -5});
  EXPECT_NE(error_of([&] { llava_vision_config(j, "config.json"); }).find("must be one integer"), std::string::npos);
  j["vision_feature_layer"] = -30;
  EXPECT_NE(error_of([&] { llava_vision_config(j, "config.json"); }).find("vision_feature_layer -30 is outside"),
            std::string::npos);
  j["vision_feature_layer"] = -2;
  j["vision_config"]["hidden_act"] = "relu";
  EXPECT_NE(error_of([&] { llava_vision_config(j, "config.json"); }).find("hidden_act is \"relu\""),
            std::string::npos);
}

TEST(VisionLlava, AnMmprojGgufGivesTheHfTowersRowsBitForBit) {
  const ClipTowerConfig c = test::clip_tiny_config();
  MemorySource hf;
  test::add_llava_tower(hf, c, 21);
  const std::vector<float> pixels = clip_pixels(c, 4);
  const std::vector<float> want = LlavaVisionTower(c, bind_llava_vision(c, hf)).encode(pixels);
  for (bool legacy : {false, true}) {
    const std::vector<uint8_t> bytes = test::llava_mmproj_of(hf, c, legacy);
    const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
    const ClipTowerConfig g = llava_mmproj_config(*f);
    EXPECT_EQ(g.n_layers, 2);
    EXPECT_EQ(g.feature_layers, 2);
    EXPECT_FALSE(g.post_norm);
    EXPECT_TRUE(g.quick_gelu);
    const std::vector<float> got = LlavaVisionTower(g, bind_llava_mmproj(g, *f)).encode(pixels);
    EXPECT_TRUE(got == want) << (legacy ? "fc1 as ffn_down" : "fc1 as ffn_up");
  }
}

TEST(VisionLlava, BadPixelsAndTensorsAreClearErrors) {
  const ClipTowerConfig c = test::clip_tiny_config();
  MemorySource src;
  test::add_llava_tower(src, c, 1);
  const LlavaVisionTower tower(c, bind_llava_vision(c, src));
  EXPECT_NE(error_of([&] { tower.encode(std::vector<float>(10)); }).find("expected 28x28 RGB pixels (2352 values)"),
            std::string::npos);
  MemorySource empty;
  EXPECT_NE(error_of([&] { bind_llava_vision(c, empty); }).find("not a LLaVA checkpoint"), std::string::npos);
  ClipTowerConfig wide = c;
  wide.image_size = 35;
  EXPECT_NE(error_of([&] { bind_llava_vision(wide, src); })
                .find("position_embedding.weight has shape [17, 32], expected [26, 32]"),
            std::string::npos);
}

}  // namespace
}  // namespace og
