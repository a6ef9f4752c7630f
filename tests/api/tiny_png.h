// A PNG written by the test itself (8-bit RGB, stored deflate blocks, so no
// compressor is needed): the images of the image tests, never files from
// elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace og::test {

inline uint32_t png_crc(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

inline std::string png_be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

inline std::string png_chunk(const std::string& type, const std::string& data) {
  return png_be32(static_cast<uint32_t>(data.size())) + type + data + png_be32(png_crc(type + data));
}

// A w x h RGB picture whose pixel (x, y) is rgb(x, y) (3 bytes).
inline std::string tiny_png(int w, int h, const std::function<uint32_t(int, int)>& rgb) {
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw += '\0';  // filter: none
    for (int x = 0; x < w; ++x) {
      const uint32_t c = rgb(x, y);
      raw += static_cast<char>(c >> 16);
      raw += static_cast<char>(c >> 8);
      raw += static_cast<char>(c);
    }
  }
  // zlib stream of stored blocks (at most 65535 bytes each) and its Adler-32.
  std::string z = "\x78\x01";
  for (size_t at = 0; at < raw.size() || at == 0; at += 65535) {
    const size_t n = std::min<size_t>(65535, raw.size() - at);
    z += static_cast<char>(at + n >= raw.size() ? 1 : 0);
    z += static_cast<char>(n & 0xff);
    z += static_cast<char>(n >> 8);
    z += static_cast<char>(~n & 0xff);
    z += static_cast<char>((~n >> 8) & 0xff);
    z += raw.substr(at, n);
    if (raw.empty()) break;
  }
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  z += png_be32((b << 16) | a);
  std::string ihdr = png_be32(static_cast<uint32_t>(w)) + png_be32(static_cast<uint32_t>(h));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) + png_chunk("IDAT", z) + png_chunk("IEND", "");
}

}  // namespace og::test
