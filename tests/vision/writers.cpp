#include "writers.h"

#include <gif_lib.h>
#include <png.h>
#include <webp/encode.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

namespace og::vision::testing {
namespace {

void png_append(png_structp png, png_bytep data, size_t n) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

}  // namespace

Bytes write_png(int w, int h, int channels, const std::vector<uint8_t>& px, int depth, bool interlaced) {
  static const int kType[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                               PNG_COLOR_TYPE_RGB_ALPHA};
  Bytes out;
  const int bps = depth / 8;
  std::vector<uint8_t> rows(static_cast<size_t>(w) * h * channels * bps);
  for (size_t i = 0; i < px.size(); ++i)
    for (int b = 0; b < bps; ++b) rows[i * bps + b] = px[i];  // v * 257 when 16-bit
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("write_png failed");
  }
  png_set_write_fn(png, &out, png_append, nullptr);
  png_set_IHDR(png, info, w, h, depth, kType[channels],
               interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const int passes = png_set_interlace_handling(png);
  for (int p = 0; p < passes; ++p)
    for (int y = 0; y < h; ++y) png_write_row(png, &rows[static_cast<size_t>(y) * w * channels * bps]);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

Bytes write_png_palette(int w, int h, const std::vector<uint8_t>& idx, const std::vector<uint8_t>& rgb_palette,
                        const std::vector<uint8_t>& alpha) {
  Bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("write_png_palette failed");
  }
  png_set_write_fn(png, &out, png_append, nullptr);
  png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> pal(rgb_palette.size() / 3);
  for (size_t i = 0; i < pal.size(); ++i) pal[i] = {rgb_palette[i * 3], rgb_palette[i * 3 + 1], rgb_palette[i * 3 + 2]};
  png_set_PLTE(png, info, pal.data(), static_cast<int>(pal.size()));
  if (!alpha.empty()) png_set_tRNS(png, info, alpha.data(), static_cast<int>(alpha.size()), nullptr);
  png_write_info(png, info);
  for (int y = 0; y < h; ++y) png_write_row(png, &idx[static_cast<size_t>(y) * w]);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

namespace {
// An APP1 payload: "Exif\0\0", a TIFF header and IFD0 with one entry.
Bytes exif_app1(int orientation, bool be) {
  Bytes b = {'E', 'x', 'i', 'f', 0, 0};
  auto u16 = [&](unsigned v) {
    if (be) b.insert(b.end(), {uint8_t(v >> 8), uint8_t(v)});
    else b.insert(b.end(), {uint8_t(v), uint8_t(v >> 8)});
  };
  auto u32 = [&](unsigned v) {
    if (be) b.insert(b.end(), {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)});
    else b.insert(b.end(), {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)});
  };
  b.push_back(be ? 'M' : 'I');
  b.push_back(be ? 'M' : 'I');
  u16(42);
  u32(8);        // IFD0 right after the header
  u16(2);        // two entries: an unrelated one first
  u16(0x010f);   // Make, ASCII, 4 bytes inline
  u16(2);
  u32(4);
  b.insert(b.end(), {'o', 'g', '!', 0});
  u16(0x0112);   // Orientation, SHORT, 1
  u16(3);
  u32(1);
  u16(static_cast<unsigned>(orientation));
  u16(0);
  u32(0);        // no next IFD
  return b;
}
}  // namespace

Bytes write_jpeg(int w, int h, int channels, const std::vector<uint8_t>& px, int orientation, bool big_endian,
                 bool progressive) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);  // the test's own valid input: libjpeg's exit on error is fine here
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = channels;
  c.in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 4 ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  for (int i = 0; i < c.num_components; ++i) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  if (progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  if (orientation > 0) {
    const Bytes app1 = exif_app1(orientation, big_endian);
    jpeg_write_marker(&c, JPEG_APP0 + 1, app1.data(), static_cast<unsigned>(app1.size()));
  }
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&px[static_cast<size_t>(c.next_scanline) * w * channels]);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  Bytes out(buf, buf + size);
  free(buf);
  return out;
}

Bytes write_webp(int w, int h, int channels, const std::vector<uint8_t>& px) {
  uint8_t* buf = nullptr;
  const size_t n = channels == 4 ? WebPEncodeLosslessRGBA(px.data(), w, h, w * 4, &buf)
                                 : WebPEncodeLosslessRGB(px.data(), w, h, w * 3, &buf);
  if (n == 0) throw std::runtime_error("write_webp failed");
  Bytes out(buf, buf + n);
  WebPFree(buf);
  return out;
}

namespace {
int gif_append(GifFileType* gif, const GifByteType* data, int n) {
  auto* out = static_cast<Bytes*>(gif->UserData);
  out->insert(out->end(), data, data + n);
  return n;
}
}  // namespace

Bytes write_gif(int w, int h, const std::vector<uint8_t>& idx, const std::vector<uint8_t>& rgb_palette,
                int transparent, bool interlaced, int screen_w, int screen_h, int left, int top, int background) {
  Bytes out;
  int err = 0;
  GifFileType* gif = EGifOpen(&out, gif_append, &err);
  if (gif == nullptr) throw std::runtime_error("EGifOpen failed");
  const int n = static_cast<int>(rgb_palette.size() / 3);
  int size = 2;
  while (size < n) size *= 2;
  ColorMapObject* map = GifMakeMapObject(size, nullptr);
  for (int i = 0; i < n; ++i) map->Colors[i] = {rgb_palette[i * 3], rgb_palette[i * 3 + 1], rgb_palette[i * 3 + 2]};
  EGifSetGifVersion(gif, true);
  bool ok = EGifPutScreenDesc(gif, screen_w ? screen_w : w, screen_h ? screen_h : h, 8, background, map) == GIF_OK;
  if (transparent >= 0) {
    GraphicsControlBlock gcb{};
    gcb.DisposalMode = DISPOSAL_UNSPECIFIED;
    gcb.TransparentColor = transparent;
    GifByteType ext[4];
    const size_t len = EGifGCBToExtension(&gcb, ext);
    ok = ok && EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, static_cast<int>(len), ext) == GIF_OK;
  }
  ok = ok && EGifPutImageDesc(gif, left, top, w, h, interlaced, nullptr) == GIF_OK;
  static const int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
  for (int pass = 0; pass < (interlaced ? 4 : 1); ++pass)
    for (int y = interlaced ? kStart[pass] : 0; y < h; y += interlaced ? kStep[pass] : 1)
      ok = ok && EGifPutLine(gif, const_cast<GifPixelType*>(&idx[static_cast<size_t>(y) * w]), w) == GIF_OK;
  ok = EGifCloseFile(gif, &err) == GIF_OK && ok;
  GifFreeMapObject(map);
  if (!ok) throw std::runtime_error("write_gif failed");
  return out;
}

uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

}  // namespace og::vision::testing
