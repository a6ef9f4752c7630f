// Decoding: each format round-trips pixels written by its own library, JPEG's
// EXIF orientation 1..8 is applied, and alpha, grayscale, palettes, 16-bit
// and interlacing come out as documented in src/vision/image.h.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "vision/exif.h"
#include "vision/image.h"
#include "writers.h"

namespace og::vision {
namespace {

using testing::Bytes;

std::vector<uint8_t> pattern(int w, int h, int channels) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * channels);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 37 + i / 7);
  return px;
}

TEST(ImageDetect, ByMagicBytes) {
  const Bytes png = testing::write_png(2, 2, 3, pattern(2, 2, 3));
  EXPECT_EQ(detect_format(png.data(), png.size()), ImageFormat::png);
  const Bytes jpg = testing::write_jpeg(8, 8, 3, pattern(8, 8, 3));
  EXPECT_EQ(detect_format(jpg.data(), jpg.size()), ImageFormat::jpeg);
  const Bytes webp = testing::write_webp(2, 2, 3, pattern(2, 2, 3));
  EXPECT_EQ(detect_format(webp.data(), webp.size()), ImageFormat::webp);
  const Bytes gif = testing::write_gif(2, 2, {0, 1, 1, 0}, {0, 0, 0, 255, 255, 255});
  EXPECT_EQ(detect_format(gif.data(), gif.size()), ImageFormat::gif);
  const uint8_t bmp[] = {'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(detect_format(bmp, sizeof bmp), ImageFormat::unknown);
}

TEST(ImageDecode, PngRgbAndRgbaExact) {
  for (int ch : {3, 4}) {
    for (bool interlaced : {false, true}) {
      const auto px = pattern(9, 7, ch);
      const Image img = decode_image(testing::write_png(9, 7, ch, px, 8, interlaced));
      EXPECT_EQ(img.width, 9);
      EXPECT_EQ(img.height, 7);
      EXPECT_EQ(img.channels, ch);
      EXPECT_EQ(img.pixels, px) << "channels " << ch << " interlaced " << interlaced;
    }
  }
}

TEST(ImageDecode, PngGrayExpandsToRgbAndKeepsAlpha) {
  const std::vector<uint8_t> gray = {0, 50, 100, 255};
  const Image g = decode_image(testing::write_png(2, 2, 1, gray));
  ASSERT_EQ(g.channels, 3);
  EXPECT_EQ(g.pixels, (std::vector<uint8_t>{0, 0, 0, 50, 50, 50, 100, 100, 100, 255, 255, 255}));
  const Image ga = decode_image(testing::write_png(2, 1, 2, {10, 200, 20, 0}));
  ASSERT_EQ(ga.channels, 4);
  EXPECT_EQ(ga.pixels, (std::vector<uint8_t>{10, 10, 10, 200, 20, 20, 20, 0}));
}

TEST(ImageDecode, Png16BitKeepsTheHighByte) {
  const auto px = pattern(3, 2, 3);
  const Image img = decode_image(testing::write_png(3, 2, 3, px, 16));
  EXPECT_EQ(img.pixels, px);
}

TEST(ImageDecode, PngPaletteWithTransparency) {
  const Image img = decode_image(testing::write_png_palette(3, 1, {0, 1, 2}, {255, 0, 0, 0, 255, 0, 0, 0, 255}, {0, 128}));
  ASSERT_EQ(img.channels, 4);
  EXPECT_EQ(img.pixels, (std::vector<uint8_t>{255, 0, 0, 0, 0, 255, 0, 128, 0, 0, 255, 255}));
}

TEST(ImageDecode, WebpLosslessExact) {
  const auto rgb = pattern(5, 4, 3);
  const Image a = decode_image(testing::write_webp(5, 4, 3, rgb));
  EXPECT_EQ(a.channels, 3);
  EXPECT_EQ(a.pixels, rgb);
  auto rgba = pattern(5, 4, 4);
  for (size_t i = 3; i < rgba.size(); i += 4) rgba[i] = static_cast<uint8_t>(rgba[i] | 1);  // no alpha 0
  const Image b = decode_image(testing::write_webp(5, 4, 4, rgba));
  EXPECT_EQ(b.channels, 4);
  EXPECT_EQ(b.pixels, rgba);
}

TEST(ImageDecode, GifFirstFramePaletteAndTransparency) {
  const std::vector<uint8_t> pal = {10, 20, 30, 40, 50, 60, 70, 80, 90, 200, 210, 220};
  const std::vector<uint8_t> idx = {0, 1, 2, 3, 2, 1};
  const Image a = decode_image(testing::write_gif(3, 2, idx, pal));
  ASSERT_EQ(a.channels, 3);
  EXPECT_EQ(a.pixels, (std::vector<uint8_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 200, 210, 220, 70, 80, 90, 40, 50, 60}));
  const Image t = decode_image(testing::write_gif(3, 2, idx, pal, /*transparent=*/2));
  ASSERT_EQ(t.channels, 4);
  EXPECT_EQ(t.pixels[2 * 4 + 3], 0);      // index 2: transparent, its palette colour kept
  EXPECT_EQ(t.pixels[2 * 4 + 0], 70);
  EXPECT_EQ(t.pixels[0 * 4 + 3], 255);
}

TEST(ImageDecode, GifInterlacedAndFrameOnALargerScreen) {
  std::vector<uint8_t> idx(4 * 11);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint8_t>(i % 4);
  const std::vector<uint8_t> pal = {0, 0, 0, 100, 100, 100, 200, 200, 200, 255, 0, 0};
  const Image a = decode_image(testing::write_gif(4, 11, idx, pal, -1, /*interlaced=*/true));
  for (int y = 0; y < 11; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_EQ(a.at(x, y)[0], pal[idx[y * 4 + x] * 3]) << x << "," << y;
  // A 1x1 frame at (1, 1) on a 3x2 screen whose background is index 3.
  const Image b = decode_image(testing::write_gif(1, 1, {1}, pal, -1, false, 3, 2, 1, 1, /*background=*/3));
  ASSERT_EQ(b.width, 3);
  ASSERT_EQ(b.height, 2);
  EXPECT_EQ(b.at(1, 1)[0], 100);
  EXPECT_EQ(b.at(0, 0)[0], 255);
  EXPECT_EQ(b.at(2, 1)[1], 0);
}

TEST(ImageDecode, JpegCloseToItsSource) {
  // Quality 100, 4:4:4, solid 8x8 blocks: within a few levels of the source.
  std::vector<uint8_t> px(16 * 8 * 3);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 16; ++x) {
      uint8_t* p = &px[(y * 16 + x) * 3];
      p[0] = x < 8 ? 200 : 30;
      p[1] = x < 8 ? 40 : 160;
      p[2] = 90;
    }
  const Image img = decode_image(testing::write_jpeg(16, 8, 3, px));
  ASSERT_EQ(img.channels, 3);
  for (size_t i = 0; i < px.size(); ++i) EXPECT_NEAR(img.pixels[i], px[i], 3) << i;
  const Image gray = decode_image(testing::write_jpeg(8, 8, 1, std::vector<uint8_t>(64, 77)));
  ASSERT_EQ(gray.channels, 3);
  EXPECT_NEAR(gray.at(3, 3)[0], 77, 1);
  EXPECT_EQ(gray.at(3, 3)[0], gray.at(3, 3)[2]);
}

// A 3x2 grid of solid 8x8 blocks, colours a..f:   a b c
//                                                  d e f
const uint8_t kBlock[6][3] = {{250, 0, 0}, {0, 250, 0}, {0, 0, 250}, {250, 250, 0}, {0, 250, 250}, {250, 0, 250}};

std::vector<uint8_t> grid_pixels() {
  std::vector<uint8_t> px(24 * 16 * 3);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 24; ++x) std::memcpy(&px[(y * 24 + x) * 3], kBlock[(y / 8) * 3 + x / 8], 3);
  return px;
}

// Which block (0..5 = a..f) the centre of grid cell (col, row) shows.
int block_at(const Image& img, int col, int row) {
  const uint8_t* p = img.at(col * 8 + 4, row * 8 + 4);
  for (int b = 0; b < 6; ++b)
    if (std::abs(p[0] - kBlock[b][0]) < 20 && std::abs(p[1] - kBlock[b][1]) < 20 && std::abs(p[2] - kBlock[b][2]) < 20)
      return b;
  return -1;
}

TEST(ImageDecode, JpegExifOrientationOneToEight) {
  // The upright view of the stored grid for each orientation, by EXIF's
  // definition of where the stored 0th row and column are shown.
  const char* expected[9] = {"", "abc/def", "cba/fed", "fed/cba", "def/abc", "ad/be/cf", "da/eb/fc", "fc/eb/da", "cf/be/ad"};
  for (int o = 1; o <= 8; ++o) {
    for (bool be : {false, true}) {
      const Image img = decode_image(testing::write_jpeg(24, 16, 3, grid_pixels(), o, be));
      std::string seen;
      for (int row = 0; row < img.height / 8; ++row) {
        if (row) seen += '/';
        for (int col = 0; col < img.width / 8; ++col) seen += static_cast<char>('a' + block_at(img, col, row));
      }
      EXPECT_EQ(seen, expected[o]) << "orientation " << o << (be ? " MM" : " II");
    }
  }
}

TEST(Exif, MalformedBlocksMeanUpright) {
  EXPECT_EQ(exif_orientation(nullptr, 0), 1);
  const uint8_t not_exif[] = {'X', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0};
  EXPECT_EQ(exif_orientation(not_exif, sizeof not_exif), 1);
  // IFD0 offset pointing past the end.
  const uint8_t far[] = {'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 0xff, 0xff, 0, 0};
  EXPECT_EQ(exif_orientation(far, sizeof far), 1);
  // An entry count larger than the block.
  const uint8_t many[] = {'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0, 0xff, 0xff};
  EXPECT_EQ(exif_orientation(many, sizeof many), 1);
}

TEST(Exif, ApplyOrientationOnExactPixels) {
  Image in;
  in.width = 3;
  in.height = 2;
  in.channels = 3;
  for (int i = 0; i < 6; ++i) in.pixels.insert(in.pixels.end(), {uint8_t('a' + i), 0, 0});
  const char* expected[9] = {"", "abcdef", "cbafed", "fedcba", "defabc", "adbecf", "daebfc", "fcebda", "cfbead"};
  for (int o = 1; o <= 8; ++o) {
    const Image out = apply_orientation(in, o);
    std::string s;
    for (size_t i = 0; i < out.pixels.size(); i += 3) s += static_cast<char>(out.pixels[i]);
    EXPECT_EQ(s, expected[o]) << o;
    EXPECT_EQ(out.width, o >= 5 ? 2 : 3);
  }
}

}  // namespace
}  // namespace og::vision
