// The per-format decoders behind decode_image (image.h); internal to src/vision/.
// Each checks `limits` from its header before allocating pixels and throws
// og::Error ("image: <format>: ...") on bad data.
#pragma once

#include "vision/image.h"

namespace og::vision::detail {

Image decode_png(const uint8_t* data, size_t size, const DecodeLimits& limits);
// Returns the pixels as stored; *orientation gets the EXIF orientation (1..8).
Image decode_jpeg(const uint8_t* data, size_t size, const DecodeLimits& limits, int* orientation);
Image decode_webp(const uint8_t* data, size_t size, const DecodeLimits& limits);
Image decode_gif(const uint8_t* data, size_t size, const DecodeLimits& limits);

// Sizes image.pixels for width x height x channels; false when memory ran out
// (never throws, so the libpng/libjpeg paths can call it between their setjmp
// and longjmp).
bool allocate_pixels(Image* image, int width, int height, int channels) noexcept;

}  // namespace og::vision::detail
