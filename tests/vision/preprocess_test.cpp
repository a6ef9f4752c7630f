// Preprocessing against hand-computed pixels (PIL's weights worked out by
// hand in the comments) and against values Pillow 9.4 produced for generated
// images (Image.resize on mode RGB), normalisation, layout and alpha rules.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "gray_pixels.h"
#include "vision/preprocess.h"

namespace og::vision {
namespace {

using testing::gray_image;
using testing::red;

TEST(Resize, BilinearDownscaleWidensTheFilter) {
  // 4 -> 2: scale 2, support 2, taps at distance 0.25/0.25/0.75 (x 1/2):
  // weights 3/7, 3/7, 1/7. out0 = (0*3 + 70*3 + 140) / 7 = 50,
  // out1 = (70 + 140*3 + 210*3) / 7 = 160. Naive sampling would give 35, 175.
  EXPECT_EQ(red(resize_like_pil(gray_image({0, 70, 140, 210}, 4, 1), 2, 1, Resample::bilinear)),
            (std::vector<uint8_t>{50, 160}));
}

TEST(Resize, BicubicDownscale) {
  // a = -0.5, taps at 0.25, 0.25, 0.75, 1.25 (x 1/2): 0.8671875, 0.8671875,
  // 0.2265625, -0.0703125, sum 1.890625: out0 = 41.07 -> 41, out1 = 168.93 -> 169.
  EXPECT_EQ(red(resize_like_pil(gray_image({0, 70, 140, 210}, 4, 1), 2, 1, Resample::bicubic)),
            (std::vector<uint8_t>{41, 169}));
}

TEST(Resize, BilinearUpscale) {
  // 2 -> 4: centres 0.25, 0.75, 1.25, 1.75: 1 | 3/4,1/4 | 1/4,3/4 | 1.
  EXPECT_EQ(red(resize_like_pil(gray_image({0, 200}, 2, 1), 4, 1, Resample::bilinear)),
            (std::vector<uint8_t>{0, 50, 150, 200}));
}

TEST(Resize, TwoPassesRoundThroughEightBits) {
  // Rows first: 15.5 -> 16 and 50.5 -> 51; then (16 + 51) / 2 = 33.5 -> 34.
  // Without PIL's 8-bit intermediate it would be 33 (131 / 4 = 32.75).
  EXPECT_EQ(red(resize_like_pil(gray_image({10, 21, 40, 61}, 2, 2), 1, 1, Resample::bilinear)),
            (std::vector<uint8_t>{34}));
}

Image pattern(int w, int h) {
  Image img;
  img.width = w;
  img.height = h;
  img.channels = 3;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) img.pixels.push_back(static_cast<uint8_t>((x * 37 + y * 101 + c * 53 + x * y * 7) % 256));
  return img;
}

// Pillow 9.4.0: Image.new("RGB", (w, h)) filled with pattern(), .resize((ow, oh), filter).
TEST(Resize, MatchesPillowOnGeneratedImages) {
  EXPECT_EQ(resize_like_pil(pattern(13, 7), 5, 3, Resample::bilinear).pixels,
            (std::vector<uint8_t>{116, 140, 150, 128, 143, 137, 134, 132, 113, 124, 139, 129, 127, 151, 127,
                                  138, 129, 135, 124, 119, 104, 138, 142, 132, 145, 137, 132, 146, 138, 113,
                                  151, 120, 136, 133, 109, 114, 134, 121, 116, 133, 123, 137, 102, 151, 125}));
  EXPECT_EQ(resize_like_pil(pattern(13, 7), 5, 3, Resample::bicubic).pixels,
            (std::vector<uint8_t>{112, 140, 151, 131, 144, 142, 133, 135, 108, 122, 136, 132, 128, 153, 128,
                                  141, 129, 136, 120, 117, 99,  139, 144, 131, 148, 139, 133, 147, 134, 112,
                                  152, 121, 141, 130, 107, 111, 137, 118, 118, 133, 121, 136, 97,  156, 125}));
  EXPECT_EQ(resize_like_pil(pattern(3, 2), 7, 5, Resample::bicubic).pixels,
            (std::vector<uint8_t>{0,   39,  92,  0,   46,  99,  8,   61,  112, 26,  79,  132, 45,  98,  162,
                                  60,  113, 189, 67,  120, 200, 6,   56,  109, 10,  63,  116, 25,  78,  132,
                                  44,  97,  150, 63,  116, 162, 78,  131, 169, 86,  139, 173, 49,  100, 153,
                                  54,  107, 161, 71,  124, 185, 91,  144, 197, 112, 165, 162, 128, 181, 118,
                                  136, 189, 102, 91,  143, 196, 98,  151, 206, 116, 169, 238, 138, 191, 244,
                                  160, 213, 161, 178, 231, 67,  185, 238, 30,  107, 160, 213, 115, 168, 223,
                                  133, 186, 255, 156, 209, 255, 178, 231, 161, 196, 249, 47,  204, 255, 3}));
  EXPECT_EQ(resize_like_pil(pattern(3, 2), 7, 5, Resample::bilinear).pixels,
            (std::vector<uint8_t>{0,   53,  106, 5,   58,  111, 21,  74,  127, 37,  90,  143, 53,  106, 159,
                                  69,  122, 175, 74,  127, 180, 10,  63,  116, 15,  68,  121, 31,  84,  137,
                                  48,  101, 154, 64,  117, 159, 80,  133, 164, 85,  138, 166, 51,  104, 157,
                                  56,  109, 162, 74,  127, 180, 91,  144, 197, 109, 162, 160, 126, 179, 122,
                                  132, 185, 110, 91,  144, 197, 97,  150, 203, 116, 169, 222, 134, 187, 240,
                                  153, 206, 160, 172, 225, 80,  178, 231, 53,  101, 154, 207, 107, 160, 213,
                                  126, 179, 232, 145, 198, 251, 164, 217, 160, 183, 236, 69,  189, 242, 39}));
}

TEST(Resize, SameSizeIsACopy) {
  const Image p = pattern(5, 4);
  EXPECT_EQ(resize_like_pil(p, 5, 4, Resample::bicubic).pixels, p.pixels);
}

TEST(Preprocess, PlanarLayoutAndGemmaNormalisation) {
  Image img;
  img.width = 2;
  img.height = 1;
  img.channels = 3;
  img.pixels = {255, 0, 128, 0, 255, 64};
  PreprocessConfig c = gemma3_siglip_config();
  EXPECT_EQ(c.width, 896);
  EXPECT_EQ(c.resample, Resample::bilinear);
  c.width = 2;
  c.height = 1;
  const std::vector<float> out = preprocess_image(img, c);
  ASSERT_EQ(out.size(), 6u);
  // [R plane | G plane | B plane]; (v / 255 - 0.5) / 0.5.
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], -1.0f);
  EXPECT_FLOAT_EQ(out[2], -1.0f);
  EXPECT_FLOAT_EQ(out[3], 1.0f);
  EXPECT_NEAR(out[4], 0.00392157f, 1e-6);
  EXPECT_NEAR(out[5], -0.49803922f, 1e-6);
}

TEST(Preprocess, ClipMeanAndStd) {
  const PreprocessConfig c = clip_config();
  EXPECT_EQ(c.width, 336);
  EXPECT_EQ(c.resample, Resample::bicubic);
  Image black = gray_image({0}, 1, 1);
  PreprocessConfig one = c;
  one.width = one.height = 1;
  const std::vector<float> out = preprocess_image(black, one);
  EXPECT_NEAR(out[0], -0.48145466f / 0.26862954f, 1e-5);  // -1.7922625
  EXPECT_NEAR(out[1], -0.4578275f / 0.26130258f, 1e-5);
  EXPECT_NEAR(out[2], -0.40821073f / 0.27577711f, 1e-5);
}

TEST(Preprocess, GemmaSizeFromAnyInput) {
  const std::vector<float> out = preprocess_image(pattern(40, 30), gemma3_siglip_config());
  EXPECT_EQ(out.size(), size_t{3} * 896 * 896);
  for (float v : out) ASSERT_TRUE(v >= -1.0f && v <= 1.0f);
}

TEST(Preprocess, AlphaDroppedOrCompositedOverWhite) {
  Image rgba;
  rgba.width = 1;
  rgba.height = 1;
  rgba.channels = 4;
  rgba.pixels = {200, 100, 0, 128};
  EXPECT_EQ(to_rgb(rgba, AlphaRule::drop).pixels, (std::vector<uint8_t>{200, 100, 0}));
  // round((c * 128 + 255 * 127) / 255): 227.39, 177.20, 127.
  EXPECT_EQ(to_rgb(rgba, AlphaRule::over_white).pixels, (std::vector<uint8_t>{227, 177, 127}));
  rgba.pixels = {9, 9, 9, 0};
  EXPECT_EQ(to_rgb(rgba, AlphaRule::over_white).pixels, (std::vector<uint8_t>{255, 255, 255}));
}

TEST(Preprocess, BadConfigIsAnError) {
  PreprocessConfig c;
  c.width = 0;
  EXPECT_THROW(preprocess_image(pattern(2, 2), c), og::Error);
}

}  // namespace
}  // namespace og::vision
