// Test images written in memory with the same libraries the decoders use
// (libpng, libjpeg-turbo, libwebp, giflib): no image files from elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace og::vision::testing {

using Bytes = std::vector<uint8_t>;

// channels: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA; depth 8 or 16 (16: each
// sample written as v * 257, so its high byte is v).
Bytes write_png(int w, int h, int channels, const std::vector<uint8_t>& px, int depth = 8, bool interlaced = false);
// A palette PNG: px are indices into `rgb_palette` (3 bytes each); `alpha`
// (tRNS) gives the first entries' alpha.
Bytes write_png_palette(int w, int h, const std::vector<uint8_t>& idx, const std::vector<uint8_t>& rgb_palette,
                        const std::vector<uint8_t>& alpha);

// channels 1 (gray), 3 (RGB) or 4 (CMYK); quality 100, 4:4:4. orientation > 0
// writes an EXIF APP1 with that Orientation tag (big_endian: "MM" byte order,
// else "II"); progressive: libjpeg's simple progression (several scans).
Bytes write_jpeg(int w, int h, int channels, const std::vector<uint8_t>& px, int orientation = 0,
                 bool big_endian = false, bool progressive = false);

// Lossless WebP, channels 3 or 4.
Bytes write_webp(int w, int h, int channels, const std::vector<uint8_t>& px);

// A GIF of palette indices; transparent >= 0 writes a Graphic Control
// Extension; the frame sits at (left, top) on a screen_w x screen_h screen.
Bytes write_gif(int w, int h, const std::vector<uint8_t>& idx, const std::vector<uint8_t>& rgb_palette,
                int transparent = -1, bool interlaced = false, int screen_w = 0, int screen_h = 0, int left = 0,
                int top = 0, int background = 0);

// PNG's chunk CRC (ISO 3309), for hand-made headers.
uint32_t crc32(const uint8_t* p, size_t n);

}  // namespace og::vision::testing
