// How an image reaches the tower's size besides the plain squash: CLIP's
// shortest-edge resize and centre crop (transformers' CLIPImageProcessor),
// LlavaImageProcessor's pad to square, llama.cpp's letterbox. Expected pixels
// worked out by hand in the comments from the references' rules.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "gray_pixels.h"
#include "vision/preprocess.h"

namespace og::vision {
namespace {

using testing::gray_image;
using testing::red;

TEST(ResizeFit, ShortestEdgeKeepsTheAspectAndTruncatesTheLongSide) {
  // transformers: new_long = int(edge * long / short); (width, height) order back.
  EXPECT_EQ(shortest_edge_size(100, 50, 336), (std::array<int, 2>{672, 336}));
  EXPECT_EQ(shortest_edge_size(50, 100, 336), (std::array<int, 2>{336, 672}));
  EXPECT_EQ(shortest_edge_size(3, 7, 2), (std::array<int, 2>{2, 4}));  // int(14 / 3) = 4
  EXPECT_EQ(shortest_edge_size(7, 3, 2), (std::array<int, 2>{4, 2}));
  EXPECT_EQ(shortest_edge_size(5, 5, 9), (std::array<int, 2>{9, 9}));
  // 336 x 336,000,000 pixels: refused, not allocated.
  EXPECT_THROW(shortest_edge_size(1, 1000000, 336), og::Error);
}

TEST(ResizeFit, CenterCropTakesTheFloorOfHalfTheExcess) {
  // (4 - 2) // 2 = 1 and (5 - 2) // 2 = 1: the window starts at the second pixel.
  EXPECT_EQ(red(center_crop(gray_image({10, 20, 30, 40}, 4, 1), 2, 1)), (std::vector<uint8_t>{20, 30}));
  EXPECT_EQ(red(center_crop(gray_image({10, 20, 30, 40, 50}, 5, 1), 2, 1)), (std::vector<uint8_t>{20, 30}));
  // Vertically the same: rows 1 and 2 of 4.
  EXPECT_EQ(red(center_crop(gray_image({1, 2, 3, 4}, 1, 4), 1, 2)), (std::vector<uint8_t>{2, 3}));
}

TEST(ResizeFit, CenterCropOfASmallerImagePadsWithZerosAtTheCeilingOfHalf) {
  // transformers pads to 4 with ceil(3 / 2) = 2 zeros before: 0 0 7 0.
  EXPECT_EQ(red(center_crop(gray_image({7}, 1, 1), 4, 1)), (std::vector<uint8_t>{0, 0, 7, 0}));
  EXPECT_EQ(red(center_crop(gray_image({7, 8}, 2, 1), 5, 1)), (std::vector<uint8_t>{0, 0, 7, 8, 0}));
  // Wider and shorter than the crop: cropped across, padded down (ceil(1 / 2) = 1 row of zeros first).
  EXPECT_EQ(red(center_crop(gray_image({1, 2, 3, 4, 5, 6, 7, 8}, 4, 2), 2, 3)),
            (std::vector<uint8_t>{0, 0, 2, 3, 6, 7}));
}

TEST(ResizeFit, PadToSquareCentresOnTheColourFloorFirst) {
  const std::array<uint8_t, 3> c{122, 116, 104};
  // 2 wide, 1 high: the row at (2 - 1) // 2 = 0, the colour below.
  const Image a = pad_to_square(gray_image({5, 6}, 2, 1), c);
  ASSERT_EQ(a.width, 2);
  ASSERT_EQ(a.height, 2);
  EXPECT_EQ(a.pixels, (std::vector<uint8_t>{5, 5, 5, 6, 6, 6, 122, 116, 104, 122, 116, 104}));
  // 1 wide, 3 high: the column at (3 - 1) // 2 = 1.
  EXPECT_EQ(red(pad_to_square(gray_image({1, 2, 3}, 1, 3), c)), (std::vector<uint8_t>{122, 1, 122, 122, 2, 122, 122, 3, 122}));
  const Image sq = gray_image({9}, 1, 1);
  EXPECT_EQ(pad_to_square(sq, c).pixels, sq.pixels);
}

TEST(ResizeFit, LetterboxFitsInsideAndCentresOnTheColour) {
  const std::array<uint8_t, 3> c{122, 116, 104};
  // 4 x 2 into 2 x 2: scale min(0.5, 1) = 0.5, 2 x ceil(1) = 1, at y (2 - 1) / 2 = 0.
  // The row resized as Resize.BilinearDownscaleWidensTheFilter: 50, 160.
  const Image a = letterbox(gray_image({0, 70, 140, 210, 0, 70, 140, 210}, 4, 2), 2, 2, Resample::bilinear, c);
  EXPECT_EQ(red(a), (std::vector<uint8_t>{50, 160, 122, 122}));
  EXPECT_EQ(a.pixels[7], 116);
  // 3 x 2 into 3 x 3: scale 1, unchanged, the spare row below (offset (3 - 2) / 2 = 0).
  EXPECT_EQ(red(letterbox(gray_image({1, 2, 3, 4, 5, 6}, 3, 2), 3, 3, Resample::bicubic, c)),
            (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 122, 122, 122}));
  // 1 x 4 into 4 x 4: scale 1, the column at x (4 - 1) / 2 = 1.
  EXPECT_EQ(red(letterbox(gray_image({1, 2, 3, 4}, 1, 4), 4, 4, Resample::bicubic, c)),
            (std::vector<uint8_t>{122, 1, 122, 122, 122, 2, 122, 122, 122, 3, 122, 122, 122, 4, 122, 122}));
}

TEST(ResizeFit, PreprocessResizesTheShortEdgeThenCrops) {
  // 2 x 1 {0, 200}, shortest edge 2: 4 x 2 (int(2 * 2 / 1)); horizontally
  // 0, 50, 150, 200 (Resize.BilinearUpscale), one source row so both rows
  // equal; the crop to 2 x 2 starts at x = 1: 50, 150.
  PreprocessConfig c;
  c.width = c.height = 2;
  c.shortest_edge = 2;
  c.mean = {0.0f, 0.0f, 0.0f};
  c.std = {1.0f, 1.0f, 1.0f};
  const std::vector<float> out = preprocess_image(gray_image({0, 200}, 2, 1), c);
  ASSERT_EQ(out.size(), 12u);
  const float lo = static_cast<float>(50 * (1.0 / 255.0)), hi = static_cast<float>(150 * (1.0 / 255.0));
  for (int ch = 0; ch < 3; ++ch)
    EXPECT_EQ(std::vector<float>(out.begin() + ch * 4, out.begin() + ch * 4 + 4),
              (std::vector<float>{lo, hi, lo, hi}));
  // Squashed instead (no shortest edge): 2 x 1 -> 2 x 2, the original columns.
  c.shortest_edge = 0;
  EXPECT_FLOAT_EQ(preprocess_image(gray_image({0, 200}, 2, 1), c)[1], static_cast<float>(200 * (1.0 / 255.0)));
}

TEST(ResizeFit, PreprocessPadsToSquareBeforeTheResize) {
  // 2 x 1 {0, 200} padded to 2 x 2 with 100 below, then resized to 1 x 1
  // bilinear: horizontally 100 and 100; vertically (100 + 100) / 2 = 100.
  PreprocessConfig c;
  c.width = c.height = 1;
  c.pad_square = true;
  c.pad_color = {100, 100, 100};
  c.mean = {0.0f, 0.0f, 0.0f};
  c.std = {1.0f, 1.0f, 1.0f};
  c.rescale = 1.0;
  EXPECT_EQ(preprocess_image(gray_image({0, 200}, 2, 1), c)[0], 100.0f);
  // Letterboxed into 2 x 2 instead: 2 x 1 kept, the pad colour below.
  c.pad_square = false;
  c.letterbox = true;
  c.width = c.height = 2;
  EXPECT_EQ(preprocess_image(gray_image({0, 200}, 2, 1), c).at(2), 100.0f);
  EXPECT_EQ(preprocess_image(gray_image({0, 200}, 2, 1), c).at(1), 200.0f);
}

TEST(ResizeFit, ClipConfigIsShortestEdgeAndCrop) {
  const PreprocessConfig c = clip_config();
  EXPECT_EQ(c.shortest_edge, 336);
  EXPECT_EQ(c.width, 336);
  EXPECT_FALSE(c.pad_square);
  EXPECT_FALSE(c.letterbox);
  // A wide picture keeps its aspect: 672 x 336 before the crop, so 336^2 out.
  Image wide = gray_image(std::vector<uint8_t>(20 * 10, 9), 20, 10);
  EXPECT_EQ(preprocess_image(wide, c).size(), size_t{3} * 336 * 336);
}

}  // namespace
}  // namespace og::vision
