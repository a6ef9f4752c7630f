// llava_hf_pixels / llava_mmproj_pixels (model/vision_llava_pixels.h): what
// an HF LLaVA checkpoint's image processor settings and llama.cpp's mlp
// mmproj make of an image before the tower.
#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "format/gguf.h"
#include "model/vision_llava_pixels.h"

namespace og {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

VisionPixels hf(const char* json, int64_t size = 336) {
  return llava_hf_pixels(size, nlohmann::json::parse(json), "p.json");
}

// llava-hf/llava-1.5-7b-hf's preprocessor_config.json.
constexpr const char* kLlava15 = R"({
  "crop_size": {"height": 336, "width": 336}, "do_center_crop": true, "do_convert_rgb": true,
  "do_normalize": true, "do_rescale": true, "do_resize": true,
  "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_processor_type": "CLIPImageProcessor",
  "image_std": [0.26862954, 0.26130258, 0.27577711], "processor_class": "LlavaProcessor",
  "resample": 3, "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 336}})";

TEST(LlavaPixels, Llava15IsShortestEdgeThenCentreCrop) {
  const VisionPixels p = hf(kLlava15);
  EXPECT_EQ(p.width, 336);
  EXPECT_EQ(p.height, 336);
  EXPECT_EQ(p.shortest_edge, 336);
  EXPECT_TRUE(p.bicubic);
  EXPECT_FALSE(p.pad_square);
  EXPECT_FALSE(p.letterbox);
  EXPECT_FLOAT_EQ(p.mean[2], 0.40821073f);
  EXPECT_FLOAT_EQ(p.std[0], 0.26862954f);
  EXPECT_DOUBLE_EQ(p.rescale, 0.00392156862745098);
  // No settings at all: the same (LLaVA 1.5's processor at the tower's size).
  const VisionPixels d = llava_hf_pixels(28, nullptr, "p.json");
  EXPECT_EQ(d.shortest_edge, 28);
  EXPECT_TRUE(d.bicubic);
  EXPECT_FLOAT_EQ(d.mean[0], 0.48145466f);
  // Older files: integers (size a shortest edge, crop_size a square).
  EXPECT_EQ(hf(R"({"size": 336, "crop_size": 336})").shortest_edge, 336);
}

TEST(LlavaPixels, LlavaImageProcessorPadsToSquareWithIntOfMeanTimes255) {
  const VisionPixels p =
      hf(R"({"image_processor_type": "LlavaImageProcessor", "do_pad": true, "size": {"shortest_edge": 336},
             "image_mean": [0.48145466, 0.4578275, 0.40821073]})");
  EXPECT_TRUE(p.pad_square);
  // int(0.48145466 * 255) = int(122.77), int(116.74), int(104.09).
  EXPECT_EQ(p.pad_color, (std::array<uint8_t, 3>{122, 116, 104}));
  EXPECT_EQ(hf(R"({"image_processor_type": "LlavaImageProcessor", "do_pad": true, "image_mean": [0.5, 0.5, 1.0]})")
                .pad_color,
            (std::array<uint8_t, 3>{127, 127, 255}));
  // CLIPImageProcessor has no do_pad: transformers ignores the key, so do we.
  EXPECT_FALSE(hf(R"({"image_processor_type": "CLIPImageProcessor", "do_pad": true})").pad_square);
  EXPECT_FALSE(hf(R"({"image_processor_type": "LlavaImageProcessor"})").pad_square);
}

TEST(LlavaPixels, SwitchesAndASquareSize) {
  const VisionPixels p = hf(R"({"do_rescale": false, "do_normalize": false, "resample": 2,
                                "size": {"height": 336, "width": 336}, "do_center_crop": false})");
  EXPECT_DOUBLE_EQ(p.rescale, 1.0);
  EXPECT_EQ(p.mean, (std::array<float, 3>{0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(p.std, (std::array<float, 3>{1.0f, 1.0f, 1.0f}));
  EXPECT_FALSE(p.bicubic);
  EXPECT_EQ(p.shortest_edge, 0);  // squashed to 336 x 336
}

TEST(LlavaPixels, SettingsTheTowerCannotTakeAreNamed) {
  EXPECT_NE(error_of([] { hf(R"({"crop_size": {"height": 224, "width": 224}})"); })
                .find("p.json: crop_size 224x224 is not the vision tower's image_size 336"),
            std::string::npos);
  EXPECT_NE(error_of([] { hf(R"({"size": {"height": 300, "width": 336}})"); }).find("size 300x336"),
            std::string::npos);
  EXPECT_NE(error_of([] { hf(R"({"do_center_crop": false})"); }).find("do_center_crop false"), std::string::npos);
  EXPECT_NE(error_of([] { hf(R"({"do_resize": false})"); }).find("do_resize false"), std::string::npos);
  EXPECT_NE(error_of([] { hf(R"({"resample": 1})"); }).find("resample 1 is not supported"), std::string::npos);
  EXPECT_NE(error_of([] { hf(R"({"image_processor_type": "SiglipImageProcessor"})"); })
                .find("image_processor_type SiglipImageProcessor is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] { hf(R"({"image_mean": [0.5, 0.5]})"); }).find("image_mean must be a list of 3"),
            std::string::npos);
  EXPECT_NE(error_of([] { hf(R"({"size": {"shortest_edge": 100000}})"); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([] { hf(R"({"image_std": [0.5, 0, 0.5]})"); }).find("image_std holds 0"), std::string::npos);
}

TEST(LlavaPixels, AnMmprojIsLetterboxedAsLlamaCppDoes) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("clip"));
  std::vector<GgufValue> mean, std;
  for (float x : {0.5f, 0.25f, 0.125f}) mean.push_back(GgufValue::make_f32(x));
  for (float x : {2.0f, 4.0f, 8.0f}) std.push_back(GgufValue::make_f32(x));
  w.set("clip.vision.image_mean", GgufValue::make_array(GgufType::F32, mean));
  w.set("clip.vision.image_std", GgufValue::make_array(GgufType::F32, std));
  const std::vector<uint8_t> bytes = w.serialize();
  const auto f = GgufFile::parse(bytes.data(), bytes.size(), "m.gguf");
  const VisionPixels p = llava_mmproj_pixels(28, *f);
  EXPECT_EQ(p.width, 28);
  EXPECT_TRUE(p.letterbox);
  EXPECT_TRUE(p.bicubic);
  EXPECT_EQ(p.shortest_edge, 0);
  EXPECT_EQ(p.pad_color, (std::array<uint8_t, 3>{122, 116, 104}));
  EXPECT_EQ(p.mean, (std::array<float, 3>{0.5f, 0.25f, 0.125f}));
  EXPECT_EQ(p.std, (std::array<float, 3>{2.0f, 4.0f, 8.0f}));
}

}  // namespace
}  // namespace og
