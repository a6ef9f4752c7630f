// libFuzzer target: decode_image over arbitrary bytes (PNG, JPEG, WebP, GIF by
// magic), then preprocessing of whatever decoded to a small size with both
// resampling filters and alpha rules, and the EXIF parser on the raw bytes.
// Limits are lowered so that a valid huge header cannot exhaust the fuzzer's
// memory; the refusal paths are the same code.
#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "vision/exif.h"
#include "vision/image.h"
#include "vision/preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int o = og::vision::exif_orientation(data, size);
  if (o < 1 || o > 8) __builtin_trap();
  og::vision::DecodeLimits limits;
  limits.max_side = 4096;
  limits.max_pixels = 1 << 20;
  limits.max_jpeg_scans = 64;
  og::vision::Image img;
  try {
    img = og::vision::decode_image(data, size, limits);
  } catch (const og::Error&) {
    return 0;
  }
  if (img.width <= 0 || img.height <= 0 || (img.channels != 3 && img.channels != 4) ||
      img.pixels.size() != static_cast<size_t>(img.width) * img.height * img.channels)
    __builtin_trap();
  og::vision::PreprocessConfig c;
  c.width = 7;
  c.height = 5;
  c.resample = size % 2 ? og::vision::Resample::bicubic : og::vision::Resample::bilinear;
  c.alpha = size % 3 ? og::vision::AlphaRule::drop : og::vision::AlphaRule::over_white;
  const std::vector<float> out = og::vision::preprocess_image(og::vision::apply_orientation(img, 1 + size % 8), c);
  if (out.size() != 3u * 7 * 5) __builtin_trap();
  for (float v : out)
    if (!(v >= -1.0f && v <= 1.0f)) __builtin_trap();
  return 0;
}
