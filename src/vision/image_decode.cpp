// Format detection by magic bytes, the dimension bounds, and dispatch to the
// per-format decoders (decode_*.cpp).
#include <cstring>
#include <new>

#include "base/error.h"
#include "vision/decoders.h"
#include "vision/exif.h"
#include "vision/image.h"

namespace og::vision {

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::png: return "png";
    case ImageFormat::jpeg: return "jpeg";
    case ImageFormat::webp: return "webp";
    case ImageFormat::gif: return "gif";
    case ImageFormat::unknown: break;
  }
  return "unknown";
}

ImageFormat detect_format(const uint8_t* d, size_t n) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (n >= 8 && std::memcmp(d, kPng, 8) == 0) return ImageFormat::png;
  if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff) return ImageFormat::jpeg;
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return ImageFormat::webp;
  if (n >= 6 && (std::memcmp(d, "GIF87a", 6) == 0 || std::memcmp(d, "GIF89a", 6) == 0)) return ImageFormat::gif;
  return ImageFormat::unknown;
}

void check_dimensions(const char* format, int64_t width, int64_t height, const DecodeLimits& limits) {
  OG_CHECK(width > 0 && height > 0, "image: ", format, ": empty image (", width, "x", height, ")");
  OG_CHECK(width <= limits.max_side && height <= limits.max_side, "image: ", format, ": ", width, "x", height,
           " is too large (at most ", limits.max_side, " pixels per side)");
  OG_CHECK(width * height <= limits.max_pixels, "image: ", format, ": ", width, "x", height,
           " is too large (at most ", limits.max_pixels, " pixels)");
}

namespace detail {
bool allocate_pixels(Image* image, int width, int height, int channels) noexcept {
  try {
    image->width = width;
    image->height = height;
    image->channels = channels;
    image->pixels.assign(static_cast<size_t>(width) * height * channels, 0);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}
}  // namespace detail

Image decode_image(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  OG_CHECK(data != nullptr && size > 0, "image: empty input (0 bytes)");
  switch (detect_format(data, size)) {
    case ImageFormat::png: return detail::decode_png(data, size, limits);
    case ImageFormat::jpeg: {
      int orientation = 1;
      Image img = detail::decode_jpeg(data, size, limits, &orientation);
      return orientation == 1 ? img : apply_orientation(img, orientation);
    }
    case ImageFormat::webp: return detail::decode_webp(data, size, limits);
    case ImageFormat::gif: return detail::decode_gif(data, size, limits);
    case ImageFormat::unknown: break;
  }
  fail("image: unknown format (not PNG, JPEG, WebP or GIF by its first bytes)");
}

Image decode_image(const std::vector<uint8_t>& bytes, const DecodeLimits& limits) {
  return decode_image(bytes.data(), bytes.size(), limits);
}

}  // namespace og::vision
