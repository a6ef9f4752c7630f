// WebP (lossy, lossless, with or without alpha) through libwebp's simple
// decoding API, which returns errors as status codes. Animated WebP is
// refused (its first frame needs the demux library; not done yet).
#include <webp/decode.h>

#include "base/error.h"
#include "vision/decoders.h"

namespace og::vision::detail {

Image decode_webp(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  WebPBitstreamFeatures f;
  const VP8StatusCode st = WebPGetFeatures(data, size, &f);
  OG_CHECK(st == VP8_STATUS_OK, "image: webp: ",
           st == VP8_STATUS_NOT_ENOUGH_DATA ? "truncated data" : "corrupt header");
  check_dimensions("webp", f.width, f.height, limits);
  OG_CHECK(!f.has_animation, "image: webp: animated WebP is not supported");
  Image img;
  const int channels = f.has_alpha ? 4 : 3;
  OG_CHECK(allocate_pixels(&img, f.width, f.height, channels), "image: webp: out of memory for the pixels");
  const size_t stride = static_cast<size_t>(f.width) * channels;
  const uint8_t* out = f.has_alpha ? WebPDecodeRGBAInto(data, size, img.pixels.data(), img.pixels.size(), stride)
                                   : WebPDecodeRGBInto(data, size, img.pixels.data(), img.pixels.size(), stride);
  OG_CHECK(out != nullptr, "image: webp: truncated or corrupt data");
  return img;
}

}  // namespace og::vision::detail
