// Decoded images and the bounded decoder of untrusted image bytes (PNG, JPEG,
// WebP, GIF's first frame), the input of a vision tower's preprocessing
// (preprocess.h). The format is found by its magic bytes, never by a name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace og::vision {

enum class ImageFormat { unknown, png, jpeg, webp, gif };

// "png", "jpeg", "webp", "gif", "unknown".
const char* format_name(ImageFormat f);

// The format named by the first bytes (unknown when none matches).
ImageFormat detect_format(const uint8_t* data, size_t size);

// 8-bit pixels, interleaved, rows top to bottom without padding:
// channels 3 = RGB, 4 = RGBA (straight, not premultiplied alpha).
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // width * height * channels bytes

  uint8_t* at(int x, int y) { return pixels.data() + (static_cast<size_t>(y) * width + x) * channels; }
  const uint8_t* at(int x, int y) const {
    return pixels.data() + (static_cast<size_t>(y) * width + x) * channels;
  }
};

// Bounds checked from the header, before any pixel buffer is allocated
// (decompression bombs). A decode holds at most max_pixels * 4 bytes of
// pixels (256 MiB at the default) plus the library's own state (libjpeg's is
// capped at kJpegMaxMemory).
struct DecodeLimits {
  int max_side = 16384;                  // pixels per side
  int64_t max_pixels = 64LL << 20;       // width * height (64 Mpixel)
  int max_jpeg_scans = 500;              // progressive JPEG scans (CPU bound)
};
inline constexpr int64_t kJpegMaxMemory = 768LL << 20;  // libjpeg's working memory

// Decodes `data` into RGB or RGBA (alpha only when the image has one), with a
// JPEG's EXIF orientation applied. Grayscale comes out as RGB, palettes
// expanded, 16-bit samples reduced to their high byte. Throws og::Error with
// one line ("image: ...") on an unknown format, truncated or corrupt data,
// dimensions over `limits`, or a feature refused (CMYK JPEG, animated WebP).
Image decode_image(const uint8_t* data, size_t size, const DecodeLimits& limits = {});
Image decode_image(const std::vector<uint8_t>& bytes, const DecodeLimits& limits = {});

// Throws og::Error when width x height breaks `limits` (or is not positive).
void check_dimensions(const char* format, int64_t width, int64_t height, const DecodeLimits& limits);

}  // namespace og::vision
