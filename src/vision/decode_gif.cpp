// GIF's first frame through giflib's record-level API (not DGifSlurp, which
// would decode every frame of a many-frame bomb). The frame is drawn on the
// logical screen, whose other pixels take the background colour; the
// transparent index (Graphic Control Extension) gives alpha 0 over the
// palette colour of that index, which PIL's convert("RGB") shows.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "vision/decoders.h"

namespace og::vision::detail {
namespace {

struct Reader {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

int on_read(GifFileType* gif, GifByteType* out, int n) {
  auto* r = static_cast<Reader*>(gif->UserData);
  const size_t take = std::min(static_cast<size_t>(n < 0 ? 0 : n), r->size - r->pos);
  std::memcpy(out, r->data + r->pos, take);
  r->pos += take;
  return static_cast<int>(take);  // short: giflib reports D_GIF_ERR_READ_FAILED
}

struct GifCloser {
  GifFileType* gif;
  ~GifCloser() {
    int err = 0;
    if (gif) DGifCloseFile(gif, &err);
  }
};

[[noreturn]] void gif_fail(int code) {
  const char* text = GifErrorString(code);
  fail("image: gif: ", code == D_GIF_ERR_READ_FAILED ? "truncated data" : (text ? text : "corrupt data"));
}

// The colour of palette index i (a grey ramp when the file has no palette).
void colour(const ColorMapObject* map, int i, uint8_t* rgb) {
  if (map != nullptr && i < map->ColorCount) {
    rgb[0] = map->Colors[i].Red;
    rgb[1] = map->Colors[i].Green;
    rgb[2] = map->Colors[i].Blue;
  } else {
    rgb[0] = rgb[1] = rgb[2] = static_cast<uint8_t>(i);
  }
}

// Reads the frame's rows (interlaced GIFs store them in four passes) into
// `indices`, width x height palette indices.
void read_rows(GifFileType* gif, int width, int height, std::vector<GifPixelType>& indices) {
  static const int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
  const bool interlaced = gif->Image.Interlace;
  for (int pass = 0; pass < (interlaced ? 4 : 1); ++pass)
    for (int y = interlaced ? kStart[pass] : 0; y < height; y += interlaced ? kStep[pass] : 1)
      if (DGifGetLine(gif, indices.data() + static_cast<size_t>(y) * width, width) != GIF_OK) gif_fail(gif->Error);
}

}  // namespace

Image decode_gif(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  Reader reader{data, size, 0};
  int err = 0;
  GifCloser g{DGifOpen(&reader, on_read, &err)};
  if (g.gif == nullptr) gif_fail(err);
  GifFileType* gif = g.gif;
  check_dimensions("gif", gif->SWidth, gif->SHeight, limits);
  int transparent = -1;
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(gif, &type) != GIF_OK) gif_fail(gif->Error);
    OG_CHECK(type != TERMINATE_RECORD_TYPE, "image: gif: no image in the file");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(gif, &code, &ext) != GIF_OK) gif_fail(gif->Error);
      GraphicsControlBlock gcb;
      if (code == GRAPHICS_EXT_FUNC_CODE && ext != nullptr && DGifExtensionToGCB(ext[0], ext + 1, &gcb) == GIF_OK)
        transparent = gcb.TransparentColor;
      while (ext != nullptr)
        if (DGifGetExtensionNext(gif, &ext) != GIF_OK) gif_fail(gif->Error);
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif) != GIF_OK) gif_fail(gif->Error);
    break;
  }
  const GifImageDesc& desc = gif->Image;
  check_dimensions("gif", desc.Width, desc.Height, limits);
  std::vector<GifPixelType> indices(static_cast<size_t>(desc.Width) * desc.Height);
  read_rows(gif, desc.Width, desc.Height, indices);

  const ColorMapObject* map = desc.ColorMap != nullptr ? desc.ColorMap : gif->SColorMap;
  Image img;
  const int channels = transparent >= 0 ? 4 : 3;
  OG_CHECK(allocate_pixels(&img, gif->SWidth, gif->SHeight, channels), "image: gif: out of memory for the pixels");
  uint8_t background[3];
  colour(gif->SColorMap, gif->SBackGroundColor, background);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      uint8_t* p = img.at(x, y);
      std::memcpy(p, background, 3);
      if (channels == 4) p[3] = 255;
    }
  // The frame may reach past the screen: only its visible part is drawn.
  for (int y = 0; y < desc.Height; ++y) {
    const int sy = desc.Top + y;
    if (sy < 0 || sy >= img.height) continue;
    for (int x = 0; x < desc.Width; ++x) {
      const int sx = desc.Left + x;
      if (sx < 0 || sx >= img.width) continue;
      const int i = indices[static_cast<size_t>(y) * desc.Width + x];
      uint8_t* p = img.at(sx, sy);
      colour(map, i, p);
      if (channels == 4) p[3] = i == transparent ? 0 : 255;
    }
  }
  return img;
}

}  // namespace og::vision::detail
