// JPEG through libjpeg-turbo with its default (PIL's) decoding choices: the
// accurate integer IDCT and fancy upsampling. libjpeg reports errors through
// error_exit, which must not return: ours longjmps back into run_jpeg, which
// owns no object with a destructor (see decode_png.cpp). Corrupt-data warnings
// (a truncated file decodes as grey otherwise) are errors here, as in PIL.
#include <cstdio>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <jerror.h>

#include <csetjmp>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "vision/decoders.h"
#include "vision/exif.h"

namespace og::vision::detail {
namespace {

struct JpegJob {
  jpeg_decompress_struct cinfo;  // first: the error manager finds the job from it
  jpeg_error_mgr err;
  jpeg_progress_mgr progress;
  jmp_buf jump;
  const DecodeLimits* limits = nullptr;
  Image image;
  int orientation = 1;
  int64_t width = 0, height = 0;
  bool over_limits = false;
  char message[JMSG_LENGTH_MAX] = {};
};

JpegJob* job_of(j_common_ptr c) { return reinterpret_cast<JpegJob*>(c->client_data); }

[[noreturn]] void on_error(j_common_ptr c) {
  JpegJob* job = job_of(c);
  c->err->format_message(c, job->message);
  std::longjmp(job->jump, 1);
}

void on_message(j_common_ptr c, int level) {
  // level < 0: a warning, i.e. corrupt or truncated data; > 0: trace output.
  if (level >= 0 || c->err->msg_code == JWRN_EXTRANEOUS_DATA) return;
  on_error(c);
}

void on_progress(j_common_ptr c) {
  auto* d = reinterpret_cast<j_decompress_ptr>(c);
  if (d->input_scan_number > job_of(c)->limits->max_jpeg_scans) {
    std::snprintf(job_of(c)->message, JMSG_LENGTH_MAX, "more than %d scans", job_of(c)->limits->max_jpeg_scans);
    std::longjmp(job_of(c)->jump, 1);
  }
}

bool run_jpeg(JpegJob* job, const uint8_t* data, size_t size) {
  j_decompress_ptr d = &job->cinfo;
  if (setjmp(job->jump)) return false;
  jpeg_mem_src(d, data, static_cast<unsigned long>(size));
  jpeg_save_markers(d, JPEG_APP0 + 1, 0xffff);
  jpeg_read_header(d, TRUE);
  job->width = d->image_width;
  job->height = d->image_height;
  const DecodeLimits& l = *job->limits;
  if (job->width <= 0 || job->height <= 0 || job->width > l.max_side || job->height > l.max_side ||
      job->width * job->height > l.max_pixels) {
    job->over_limits = true;
    return false;
  }
  if (d->jpeg_color_space != JCS_GRAYSCALE && d->jpeg_color_space != JCS_YCbCr && d->jpeg_color_space != JCS_RGB) {
    std::snprintf(job->message, sizeof job->message, "CMYK/YCCK (Adobe) JPEGs are not supported");
    return false;
  }
  for (jpeg_saved_marker_ptr m = d->marker_list; m != nullptr; m = m->next) {
    const int o = exif_orientation(m->data, m->data_length);
    if (o != 1 || (m->data_length >= 4 && std::memcmp(m->data, "Exif", 4) == 0)) {
      job->orientation = o;
      break;  // the first Exif segment rules, as in PIL
    }
  }
  d->out_color_space = JCS_RGB;  // grayscale is replicated into R, G and B
  jpeg_start_decompress(d);
  if (d->output_components != 3) {
    std::snprintf(job->message, sizeof job->message, "unexpected pixel layout");
    return false;
  }
  if (!allocate_pixels(&job->image, static_cast<int>(d->output_width), static_cast<int>(d->output_height), 3)) {
    std::snprintf(job->message, sizeof job->message, "out of memory for the pixels");
    return false;
  }
  while (d->output_scanline < d->output_height) {
    JSAMPROW row = job->image.at(0, static_cast<int>(d->output_scanline));
    jpeg_read_scanlines(d, &row, 1);
  }
  jpeg_finish_decompress(d);
  return true;
}

}  // namespace

Image decode_jpeg(const uint8_t* data, size_t size, const DecodeLimits& limits, int* orientation) {
  auto job = std::make_unique<JpegJob>();
  job->limits = &limits;
  job->cinfo.err = jpeg_std_error(&job->err);
  job->err.error_exit = on_error;
  job->err.emit_message = on_message;
  // jpeg_create_decompress itself reports through error_exit (out of memory).
  if (setjmp(job->jump)) fail("image: jpeg: ", job->message);
  jpeg_create_decompress(&job->cinfo);
  job->cinfo.client_data = job.get();
  job->cinfo.mem->max_memory_to_use = kJpegMaxMemory;
  job->progress.progress_monitor = on_progress;
  job->cinfo.progress = &job->progress;
  const bool ok = run_jpeg(job.get(), data, size);
  jpeg_destroy_decompress(&job->cinfo);
  if (job->over_limits) check_dimensions("jpeg", job->width, job->height, limits);
  OG_CHECK(ok, "image: jpeg: ", job->message[0] ? job->message : "corrupt data");
  *orientation = job->orientation;
  return std::move(job->image);
}

}  // namespace og::vision::detail
