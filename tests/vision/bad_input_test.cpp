// Bad images: every one is an og::Error with one line starting "image: ",
// never a crash, an abort or a silently wrong image; huge declared sizes are
// refused from the header alone.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "vision/image.h"
#include "writers.h"

namespace og::vision {
namespace {

using testing::Bytes;

std::string error_of(const Bytes& b, const DecodeLimits& limits = {}) {
  try {
    decode_image(b.data(), b.size(), limits);
  } catch (const og::Error& e) {
    return e.what();
  }
  return "";
}

std::vector<uint8_t> noise(int w, int h, int channels) {
  std::vector<uint8_t> px(static_cast<size_t>(w) * h * channels);
  uint32_t s = 12345;
  for (auto& v : px) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(s >> 24);
  }
  return px;
}

std::vector<std::pair<const char*, Bytes>> one_of_each() {
  std::vector<uint8_t> idx(32 * 32);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint8_t>((i * 7 + i / 32) % 4);
  return {{"png", testing::write_png(32, 32, 3, noise(32, 32, 3))},
          {"jpeg", testing::write_jpeg(32, 32, 3, noise(32, 32, 3))},
          {"webp", testing::write_webp(32, 32, 3, noise(32, 32, 3))},
          {"gif", testing::write_gif(32, 32, idx, {0, 0, 0, 80, 80, 80, 160, 160, 160, 255, 255, 255})}};
}

TEST(ImageBadInput, EmptyAndWrongMagic) {
  EXPECT_EQ(error_of({}), "image: empty input (0 bytes)");
  EXPECT_NE(error_of({'B', 'M', 1, 2, 3, 4, 5, 6}).find("image: unknown format"), std::string::npos);
  // A PNG's bytes named anything still decode; a text file named .png does not.
  const std::string text = "not really a png";
  EXPECT_NE(error_of(Bytes(text.begin(), text.end())).find("unknown format"), std::string::npos);
}

TEST(ImageBadInput, TruncatedHalfOfEachFormat) {
  for (const auto& [name, full] : one_of_each()) {
    ASSERT_EQ(error_of(full), "") << name;
    const Bytes half(full.begin(), full.begin() + full.size() / 2);
    const std::string e = error_of(half);
    EXPECT_EQ(e.rfind(std::string("image: ") + name + ": ", 0), 0u) << name << ": '" << e << "'";
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
}

TEST(ImageBadInput, EveryPrefixFailsCleanlyOrDecodes) {
  for (const auto& [name, full] : one_of_each()) {
    int decoded = 0;
    for (size_t n = 1; n < full.size(); ++n) {
      try {
        const Image img = decode_image(full.data(), n);
        EXPECT_EQ(img.pixels.size(), size_t{32} * 32 * img.channels);
        ++decoded;
      } catch (const og::Error&) {
      }
    }
    // Only the last few bytes (a trailer or end chunk) may be missing.
    EXPECT_LE(decoded, 16) << name;
  }
}

TEST(ImageBadInput, CorruptPngData) {
  Bytes b = testing::write_png(32, 32, 3, noise(32, 32, 3));
  b[b.size() / 2] ^= 0x55;  // inside IDAT: its CRC no longer matches
  EXPECT_NE(error_of(b).find("image: png: "), std::string::npos);
}

Bytes be32(uint32_t v) { return {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)}; }

// A PNG signature and an IHDR of w x h, RGB 8-bit, with a valid CRC; then an
// IDAT header, as a bomb would have.
Bytes png_header(uint32_t w, uint32_t h) {
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
  Bytes chunk = {'I', 'H', 'D', 'R'};
  for (uint8_t v : be32(w)) chunk.push_back(v);
  for (uint8_t v : be32(h)) chunk.push_back(v);
  chunk.insert(chunk.end(), {8, 2, 0, 0, 0});
  b.insert(b.end(), chunk.begin(), chunk.end());
  for (uint8_t v : be32(testing::crc32(chunk.data(), chunk.size()))) b.push_back(v);
  b.insert(b.end(), {0, 0, 0x10, 0, 'I', 'D', 'A', 'T'});
  return b;
}

TEST(ImageBadInput, HugeDeclaredDimensionsFailFast) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of(png_header(100000, 100000)),
            "image: png: 100000x100000 is too large (at most 16384 pixels per side)");
  EXPECT_EQ(error_of(png_header(16000, 16000)),
            "image: png: 16000x16000 is too large (at most 67108864 pixels)");
  EXPECT_EQ(error_of(png_header(0, 5)), "image: png: empty image (0x5)");
  // GIF: the logical screen is 16 bits a side.
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, ';'};
  EXPECT_EQ(error_of(gif), "image: gif: 65535x65535 is too large (at most 16384 pixels per side)");
  // JPEG: a real file whose frame header is patched to 60000 x 60000.
  Bytes jpg = testing::write_jpeg(8, 8, 3, noise(8, 8, 3));
  bool patched = false;
  for (size_t i = 2; i + 9 < jpg.size() && !patched; ++i)
    if (jpg[i] == 0xff && jpg[i + 1] == 0xc0) {
      jpg[i + 5] = jpg[i + 7] = 0xea;
      jpg[i + 6] = jpg[i + 8] = 0x60;
      patched = true;
    }
  ASSERT_TRUE(patched);
  EXPECT_EQ(error_of(jpg), "image: jpeg: 60000x60000 is too large (at most 16384 pixels per side)");
  // WebP lossless: a 16384 x 16384 header (the format's largest) with no data.
  const Bytes webp = {'R', 'I', 'F', 'F', 18, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'L',
                      6, 0, 0, 0, 0x2f, 0xff, 0xff, 0xff, 0x0f, 0};
  EXPECT_EQ(error_of(webp), "image: webp: 16384x16384 is too large (at most 67108864 pixels)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ImageBadInput, LimitsAreTheCallersToSet) {
  DecodeLimits small;
  small.max_pixels = 100;
  for (const auto& [name, bytes] : one_of_each())
    EXPECT_NE(error_of(bytes, small).find("32x32 is too large (at most 100 pixels)"), std::string::npos) << name;
}

TEST(ImageBadInput, JpegRefusals) {
  EXPECT_EQ(error_of(testing::write_jpeg(8, 8, 4, noise(8, 8, 4))),
            "image: jpeg: CMYK/YCCK (Adobe) JPEGs are not supported");
  const Bytes progressive = testing::write_jpeg(32, 32, 3, noise(32, 32, 3), 0, false, true);
  EXPECT_EQ(error_of(progressive), "");
  DecodeLimits few;
  few.max_jpeg_scans = 2;
  EXPECT_EQ(error_of(progressive, few), "image: jpeg: more than 2 scans");
}

}  // namespace
}  // namespace og::vision
