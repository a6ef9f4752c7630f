// Gemma 3's vision tower (model/vision_tower.h) against its plain twin
// (naive_vision_tower.h) on tiny random towers in memory under the HF names,
// the pooling rule, the config's reading, and bad inputs.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "kernels/kernel_table.h"
#include "model/vision_tower.h"
#include "model_test_util.h"
#include "naive_vision_tower.h"
#include "vision_tower_fixture.h"

namespace og {
namespace {

using test::MemorySource;
using test::add_tower;
using test::random_values;
using test::tiny_config;

double max_rel(const std::vector<float>& a, const std::vector<double>& b) {
  std::vector<float> bf(b.begin(), b.end());
  return test::max_rel_err(a, bf);
}

TEST(VisionTower, EqualsThePlainTwinOnEveryIsa) {
  const VisionTowerConfig c = tiny_config();
  MemorySource src;
  add_tower(src, c, 7);
  std::mt19937 rng(3);
  const std::vector<float> pixels = random_values(rng, 3 * c.image_size * c.image_size, -1.0f, 1.0f);
  const std::vector<double> want = test::naive_vision_tower(c, src, pixels);
  const VisionTower tower(c, bind_gemma3_vision(c, src));
  const kernels::Isa was = kernels::set_active_isa(kernels::available_isas().front());
  for (kernels::Isa isa : kernels::available_isas()) {
    kernels::set_active_isa(isa);
    const std::vector<float> got = tower.encode(pixels);
    ASSERT_EQ(got.size(), static_cast<size_t>(9 * 24)) << kernels::isa_str(isa);
    EXPECT_LT(max_rel(got, want), 2e-5) << kernels::isa_str(isa);
  }
  kernels::set_active_isa(was);
}

TEST(VisionTower, ModelPrefixAndOneTokenPerImage) {
  // transformers v5 saves under "model."; a 28x28 image in 14x14 patches
  // pooled 2x2 to a single token.
  VisionTowerConfig c = tiny_config();
  c.image_size = 28;
  c.mm_tokens_per_image = 1;
  MemorySource src;
  add_tower(src, c, 11, "model.");
  EXPECT_EQ(gemma3_vision_prefix(src), "model.");
  std::mt19937 rng(5);
  const std::vector<float> pixels = random_values(rng, 3 * 28 * 28, -1.0f, 1.0f);
  const VisionTower tower(c, bind_gemma3_vision(c, src));
  const std::vector<float> got = tower.encode(pixels);
  ASSERT_EQ(got.size(), static_cast<size_t>(24));
  EXPECT_LT(max_rel(got, test::naive_vision_tower(c, src, pixels, "model.")), 2e-5);
}

TEST(VisionTower, EachTokenPoolsItsOwnSquareOfPatches) {
  // One non-zero patch lights exactly the token whose 2x2 square holds it
  // (a zero vector stays zero through the RMSNorm and the projection).
  const VisionTowerConfig c = tiny_config();
  MemorySource src;
  add_tower(src, c, 9);
  const VisionTower tower(c, bind_gemma3_vision(c, src));
  const int64_t g = c.patches_per_side(), d = c.hidden, th = c.text_hidden;
  for (int64_t py = 0; py < g; ++py)
    for (int64_t px = 0; px < g; ++px) {
      std::vector<float> patches(static_cast<size_t>(c.n_patches() * d), 0.0f);
      for (int64_t e = 0; e < d; ++e) patches[(py * g + px) * d + e] = 1.0f + 0.1f * static_cast<float>(e);
      const std::vector<float> out = tower.project(patches);
      ASSERT_EQ(out.size(), static_cast<size_t>(9 * th));
      const int64_t lit = (py / 2) * 3 + px / 2;
      for (int64_t t = 0; t < 9; ++t) {
        double mag = 0;
        for (int64_t o = 0; o < th; ++o) mag += std::fabs(out[t * th + o]);
        EXPECT_EQ(mag > 0, t == lit) << "patch " << py << "," << px << " token " << t;
      }
    }
}

TEST(VisionTower, ConfigFromTheHfConfig) {
  const nlohmann::json j = nlohmann::json::parse(R"({
    "model_type": "gemma3", "mm_tokens_per_image": 256,
    "text_config": {"hidden_size": 2560, "rms_norm_eps": 1e-6},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16,
                      "num_hidden_layers": 27, "patch_size": 14, "layer_norm_eps": 1e-6}})");
  const VisionTowerConfig c = gemma3_vision_config(j, "config.json");
  EXPECT_EQ(c.hidden, 1152);
  EXPECT_EQ(c.intermediate, 4304);
  EXPECT_EQ(c.n_layers, 27);
  EXPECT_EQ(c.n_heads, 16);
  EXPECT_EQ(c.head_dim(), 72);
  EXPECT_EQ(c.n_patches(), 4096);
  EXPECT_EQ(c.tokens_per_side(), 16);
  EXPECT_EQ(c.text_hidden, 2560);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(VisionTower, BadConfigsAreClearErrors) {
  nlohmann::json j = nlohmann::json::parse(R"({"text_config": {"hidden_size": 24},
    "vision_config": {"hidden_size": 32, "image_size": 84, "intermediate_size": 48,
                      "num_attention_heads": 4, "num_hidden_layers": 2, "patch_size": 14}})");
  // Absent, mm_tokens_per_image is transformers' default of 256 (16x16, which a 6x6 grid cannot pool to).
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("mm_tokens_per_image 256 is not"),
            std::string::npos);
  EXPECT_NE(error_of([&] { gemma3_vision_config(nlohmann::json::object(), "config.json"); }).find("vision_config is missing"),
            std::string::npos);
  j["mm_tokens_per_image"] = 9;
  EXPECT_EQ(gemma3_vision_config(j, "config.json").tokens_per_side(), 3);
  j["mm_tokens_per_image"] = 8;
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("mm_tokens_per_image 8 is not a square"),
            std::string::npos);
  j["mm_tokens_per_image"] = 16;  // a 4x4 token grid does not divide a 6x6 patch grid
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("6x6 patch grid"), std::string::npos);
  j["mm_tokens_per_image"] = 9;
  j["vision_config"]["patch_size"] = 16;
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("patch_size 16 does not divide"),
            std::string::npos);
  j["vision_config"].erase("patch_size");
  EXPECT_NE(error_of([&] { gemma3_vision_config(j, "config.json"); }).find("vision_config.patch_size is missing"),
            std::string::npos);
}

TEST(VisionTower, MissingOrMisshapenTensorsAndWrongPixelsAreClearErrors) {
  const VisionTowerConfig c = tiny_config();
  MemorySource empty;
  EXPECT_NE(error_of([&] { bind_gemma3_vision(c, empty); }).find("patch_embedding.weight is missing"),
            std::string::npos);

  // A tower with one layer fewer than the config says: layer 1's first tensor is named.
  VisionTowerConfig one = c;
  one.n_layers = 1;
  MemorySource short_src;
  add_tower(short_src, one, 1);
  EXPECT_NE(error_of([&] { bind_gemma3_vision(c, short_src); })
                .find("vision tensor vision_tower.vision_model.encoder.layers.1.layer_norm1.weight is missing"),
            std::string::npos);

  // Written for another width: the shape is named with the expected one.
  VisionTowerConfig wide = c;
  wide.hidden = 40;
  MemorySource wide_src;
  add_tower(wide_src, wide, 1);
  EXPECT_NE(error_of([&] { bind_gemma3_vision(c, wide_src); }).find("has shape [40, 3, 14, 14], expected [32, 3, 14, 14]"),
            std::string::npos);

  MemorySource src;
  add_tower(src, c, 2);
  const VisionTower tower(c, bind_gemma3_vision(c, src));
  const std::vector<float> small(3 * 28 * 28, 0.0f);
  EXPECT_NE(error_of([&] { tower.encode(small); }).find("expected 84x84 RGB pixels (21168 values), got 2352"),
            std::string::npos);
}

}  // namespace
}  // namespace og
