// PNG through libpng's classic API. libpng reports errors by longjmp: every
// libpng call that can fail runs in run_png, which owns no object with a
// destructor (the decoded pixels live in the caller's PngJob), so the jump
// skips nothing and the error becomes an og::Error once back in C++ code.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "vision/decoders.h"

namespace og::vision::detail {
namespace {

struct PngJob {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  const DecodeLimits* limits = nullptr;
  Image image;
  int64_t width = 0, height = 0;
  bool over_limits = false;
  char message[256] = {};
};

void on_error(png_structp png, png_const_charp msg) {
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  std::snprintf(job->message, sizeof job->message, "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // ancillary trouble: ignored, as PIL does

void on_read(png_structp png, png_bytep out, size_t n) {
  auto* job = static_cast<PngJob*>(png_get_io_ptr(png));
  if (job->size - job->pos < n) png_error(png, "truncated data");
  std::memcpy(out, job->data + job->pos, n);
  job->pos += n;
}

bool over(const PngJob& job, int64_t w, int64_t h) {
  const DecodeLimits& l = *job.limits;
  return w <= 0 || h <= 0 || w > l.max_side || h > l.max_side || w * h > l.max_pixels;
}

bool run_png(PngJob* job, png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);  // our own bound, checked below, names the size
  png_set_chunk_malloc_max(png, 8 << 20);            // text and other ancillary chunks
  png_set_read_fn(png, job, on_read);
  png_read_info(png, info);
  job->width = png_get_image_width(png, info);
  job->height = png_get_image_height(png, info);
  if (over(*job, job->width, job->height)) {
    job->over_limits = true;
    return false;
  }
  const int color = png_get_color_type(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  png_set_strip_16(png);  // the high byte, as PIL reads 16-bit RGB(A)
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  if ((channels != 3 && channels != 4) || png_get_bit_depth(png, info) != 8) png_error(png, "unexpected pixel layout");
  if (!allocate_pixels(&job->image, static_cast<int>(job->width), static_cast<int>(job->height), channels))
    png_error(png, "out of memory for the pixels");
  // Each interlace pass fills in more pixels of the same rows.
  for (int p = 0; p < passes; ++p)
    for (int y = 0; y < job->image.height; ++y) png_read_row(png, job->image.at(0, y), nullptr);
  return true;
}

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

}  // namespace

Image decode_png(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  // IHDR must come first: its size is checked before libpng reads on (a
  // bomb's header alone is refused, whatever follows).
  if (size >= 24 && std::memcmp(data + 12, "IHDR", 4) == 0) check_dimensions("png", be32(data + 16), be32(data + 20), limits);
  PngJob job;
  job.data = data;
  job.size = size;
  job.limits = &limits;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
  OG_CHECK(png != nullptr, "image: png: cannot start libpng");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    fail("image: png: cannot start libpng");
  }
  const bool ok = run_png(&job, png, info);
  png_destroy_read_struct(&png, &info, nullptr);
  if (job.over_limits) check_dimensions("png", job.width, job.height, limits);
  OG_CHECK(ok, "image: png: ", job.message[0] ? job.message : "corrupt data");
  return std::move(job.image);
}

}  // namespace og::vision::detail
