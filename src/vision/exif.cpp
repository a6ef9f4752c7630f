// The small part of EXIF (a TIFF structure) that orientation needs: the byte
// order mark, the offset of IFD0 and its 12-byte entries. Every read is
// bounds-checked against the segment; anything odd means "upright".
#include "vision/exif.h"

#include <cstring>

namespace og::vision {
namespace {

struct TiffReader {
  const uint8_t* p;
  size_t n;
  bool big_endian;

  bool u16(size_t off, uint32_t* v) const {
    if (off > n || n - off < 2) return false;
    *v = big_endian ? (p[off] << 8 | p[off + 1]) : (p[off] | p[off + 1] << 8);
    return true;
  }
  bool u32(size_t off, uint32_t* v) const {
    if (off > n || n - off < 4) return false;
    const uint8_t* b = p + off;
    *v = big_endian ? (uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3])
                    : (uint32_t(b[3]) << 24 | uint32_t(b[2]) << 16 | uint32_t(b[1]) << 8 | b[0]);
    return true;
  }
};

constexpr uint32_t kOrientationTag = 0x0112;
constexpr uint32_t kTypeShort = 3;

}  // namespace

int exif_orientation(const uint8_t* app1, size_t size) {
  static const uint8_t kExif[6] = {'E', 'x', 'i', 'f', 0, 0};
  if (app1 == nullptr || size < 6 + 8 || std::memcmp(app1, kExif, 6) != 0) return 1;
  TiffReader t{app1 + 6, size - 6, false};
  if (t.p[0] == 'M' && t.p[1] == 'M') {
    t.big_endian = true;
  } else if (!(t.p[0] == 'I' && t.p[1] == 'I')) {
    return 1;
  }
  uint32_t magic = 0, ifd0 = 0, count = 0;
  if (!t.u16(2, &magic) || magic != 42 || !t.u32(4, &ifd0) || !t.u16(ifd0, &count)) return 1;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t entry = size_t{ifd0} + 2 + size_t{i} * 12;
    uint32_t tag = 0, type = 0, n = 0, value = 0;
    if (!t.u16(entry, &tag) || !t.u16(entry + 2, &type) || !t.u32(entry + 4, &n)) return 1;
    if (tag != kOrientationTag) continue;
    // A SHORT with count 1 sits in the first two bytes of the value field.
    if (type != kTypeShort || n != 1 || !t.u16(entry + 8, &value)) return 1;
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  }
  return 1;
}

Image apply_orientation(const Image& in, int o) {
  if (o < 2 || o > 8) return in;
  const int w = in.width, h = in.height, c = in.channels;
  const bool swap = o >= 5;  // 5..8 exchange width and height
  Image out;
  out.width = swap ? h : w;
  out.height = swap ? w : h;
  out.channels = c;
  out.pixels.resize(in.pixels.size());
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      int sx = x, sy = y;
      switch (o) {
        case 2: sx = w - 1 - x; break;
        case 3: sx = w - 1 - x; sy = h - 1 - y; break;
        case 4: sy = h - 1 - y; break;
        case 5: sx = y; sy = x; break;
        case 6: sx = y; sy = h - 1 - x; break;
        case 7: sx = w - 1 - y; sy = h - 1 - x; break;
        case 8: sx = w - 1 - y; sy = x; break;
      }
      std::memcpy(out.at(x, y), in.at(sx, sy), c);
    }
  }
  return out;
}

}  // namespace og::vision
