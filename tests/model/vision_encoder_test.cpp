// load_vision_encoder (model/vision_encoder.h): an mmproj's projector type or
// an HF config's model_type picks the tower, and each tower answers the one
// interface (pixels wanted, rows per image, rows equal to the tower's own).
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "format/gguf.h"
#include "model/vision_encoder.h"
#include "model/vision_tower.h"
#include "model_test_util.h"
#include "vision_mmproj_writers.h"
#include "vision_tower_fixture.h"
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

std::vector<float> random_pixels(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  return test::random_values(rng, n, -1.0f, 1.0f);
}

TEST(VisionEncoder, AGemma4MmprojLoadsTheGemma4Tower) {
  Gemma4VisionConfig c = test::gemma4_tiny_config();
  c.max_soft_tokens = 280;  // what an mmproj-loaded tower assumes (the processor's default)
  MemorySource hf;
  test::add_gemma4_tower(hf, c, 3);
  const std::vector<uint8_t> bytes = test::gemma4_mmproj_of(hf, c);
  const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
  const std::unique_ptr<VisionEncoder> enc = load_vision_encoder(*f);
  EXPECT_EQ(enc->projector(), "gemma4v");
  EXPECT_EQ(enc->width(), 24);
  EXPECT_EQ(enc->max_tokens(), 280);
  // A 90 x 60 picture keeps its aspect within 280 tokens of 8 x 8 pixels.
  const VisionPixels px = enc->pixels_for(90, 60);
  EXPECT_TRUE(px.bicubic);
  EXPECT_EQ(px.width % 8, 0);
  EXPECT_EQ(px.height % 8, 0);
  EXPECT_LE(enc->tokens_for(px.width, px.height), 280);
  const std::vector<float> pixels = random_pixels(3 * 16 * 24, 5);
  const Gemma4VisionTower own(c, bind_gemma4_vision(c, hf));
  EXPECT_LT(test::max_rel_err(enc->encode(pixels, 24, 16), own.encode(pixels, 16, 24)), 1e-5);
  EXPECT_NE(enc->describe().find("gemma4v vision tower: patch 4, 2 layers, width 32, 4 heads, at most 280 tokens"),
            std::string::npos);
  // Files that name the type under clip.projector_type load the same tower.
  const std::vector<uint8_t> plain = test::gemma4_mmproj_of(hf, c, "gemma4v", "clip.projector_type");
  const auto g = GgufFile::parse(plain.data(), plain.size(), "mmproj.gguf");
  EXPECT_EQ(mmproj_projector_type(*g), "gemma4v");
  EXPECT_TRUE(load_vision_encoder(*g)->encode(pixels, 24, 16) == enc->encode(pixels, 24, 16));
}

TEST(VisionEncoder, AnMlpMmprojAndALlavaConfigLoadTheLlavaTower) {
  const ClipTowerConfig c = test::clip_tiny_config();
  MemorySource hf;
  test::add_llava_tower(hf, c, 8);
  const std::vector<uint8_t> bytes = test::llava_mmproj_of(hf, c, false);
  const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
  const std::unique_ptr<VisionEncoder> from_file = load_vision_encoder(*f);
  EXPECT_EQ(from_file->projector(), "mlp");
  EXPECT_EQ(from_file->max_tokens(), 16);
  const VisionPixels px = from_file->pixels_for(1000, 10);
  EXPECT_EQ(px.width, 28);
  EXPECT_EQ(px.height, 28);
  EXPECT_TRUE(px.bicubic);
  EXPECT_FLOAT_EQ(px.mean[0], 0.48145466f);
  EXPECT_TRUE(px.letterbox);  // llama.cpp's rule for an mlp file (vision_llava_pixels.h)
  const nlohmann::json j = nlohmann::json::parse(R"({"model_type": "llava", "vision_config": {
      "hidden_size": 32, "image_size": 28, "intermediate_size": 48, "num_attention_heads": 4,
      "num_hidden_layers": 3, "patch_size": 7, "layer_norm_eps": 0.05}})");
  const std::unique_ptr<VisionEncoder> from_hf = load_vision_encoder(j, "config.json", hf);
  const std::vector<float> pixels = random_pixels(3 * 28 * 28, 2);
  EXPECT_TRUE(from_hf->encode(pixels, 28, 28) == from_file->encode(pixels, 28, 28));
  EXPECT_NE(error_of([&] { from_hf->encode(pixels, 14, 56); }).find("the tower takes 28x28"), std::string::npos);
}

TEST(VisionEncoder, Gemma4TakesItsProcessorsTokenBudget) {
  const Gemma4VisionConfig c = test::gemma4_tiny_config();
  MemorySource hf;
  test::add_gemma4_tower(hf, c, 3);
  const nlohmann::json j = nlohmann::json::parse(R"({"model_type": "gemma4", "text_config": {"hidden_size": 24},
      "vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "patch_size": 4,
      "pooling_kernel_size": 2, "position_embedding_size": 16, "rms_norm_eps": 0.05,
      "standardize": true, "use_clipped_linears": true}})");
  EXPECT_EQ(load_vision_encoder(j, "config.json", hf)->max_tokens(), 280);
  EXPECT_EQ(load_vision_encoder(j, "config.json", hf, {{"max_soft_tokens", 70}})->max_tokens(), 70);
  EXPECT_NE(error_of([&] { load_vision_encoder(j, "config.json", hf, {{"max_soft_tokens", 100}}); })
                .find("max_soft_tokens is 100; Gemma 4's processor takes 70, 140, 280, 560 or 1120"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_vision_encoder(j, "config.json", hf, {{"max_soft_tokens", "many"}}); })
                .find("max_soft_tokens is \"many\""),
            std::string::npos);
}

TEST(VisionEncoder, AGemma3ConfigLoadsGemma3sTower) {
  const VisionTowerConfig c = test::tiny_config();
  MemorySource hf;
  test::add_tower(hf, c, 4);
  const nlohmann::json j = nlohmann::json::parse(R"({"model_type": "gemma3", "mm_tokens_per_image": 9,
      "text_config": {"hidden_size": 24}, "vision_config": {"hidden_size": 32, "image_size": 84,
      "intermediate_size": 48, "num_attention_heads": 4, "num_hidden_layers": 2, "patch_size": 14,
      "layer_norm_eps": 0.05}})");
  const std::unique_ptr<VisionEncoder> enc = load_vision_encoder(j, "config.json", hf);
  EXPECT_EQ(enc->projector(), "gemma3");
  EXPECT_EQ(enc->max_tokens(), 9);
  EXPECT_EQ(enc->pixels_for(5, 5).width, 84);
  EXPECT_FALSE(enc->pixels_for(5, 5).bicubic);
  const std::vector<float> pixels = random_pixels(3 * 84 * 84, 6);
  EXPECT_TRUE(enc->encode(pixels, 84, 84) == VisionTower(c, bind_gemma3_vision(c, hf)).encode(pixels));
}

TEST(VisionEncoder, UnknownKindsAreRefusedByName) {
  const ClipTowerConfig c = test::clip_tiny_config();
  MemorySource hf;
  test::add_llava_tower(hf, c, 8);
  const std::vector<uint8_t> bytes = test::llava_mmproj_of(hf, c, false, "qwen2vl_merger");
  const auto f = GgufFile::parse(bytes.data(), bytes.size(), "mmproj.gguf");
  EXPECT_NE(error_of([&] { load_vision_encoder(*f); })
                .find("clip.projector_type is \"qwen2vl_merger\"; supported: gemma3, gemma4v, mlp"),
            std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(R"({"model_type": "qwen2_vl"})");
  EXPECT_NE(error_of([&] { load_vision_encoder(j, "config.json", hf); }).find("model_type \"qwen2_vl\" has no vision"),
            std::string::npos);
}

}  // namespace
}  // namespace og
