// PIL's resampling (Pillow's src/libImaging/Resample.c, re-derived here):
// per output pixel a window of input pixels weighted by the filter at
// (input centre - output centre) / filterscale, where filterscale = max(1,
// in/out) widens the filter when downscaling (antialiasing). Weights are
// normalised to sum 1, then held as 22-bit fixed point for 8-bit images; the
// horizontal pass runs first and its result is rounded to 8 bits.
#include "vision/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/error.h"

namespace og::vision {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double bilinear(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {
  constexpr double a = -0.5;  // PIL's (and Keys') choice
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// For each output index: the first input index, the window length, and
// `ksize` fixed-point weights.
struct Coeffs {
  int ksize = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;
};

Coeffs coefficients(int in_size, int out_size, Resample kind) {
  const double support0 = kind == Resample::bilinear ? 1.0 : 2.0;
  double (*filter)(double) = kind == Resample::bilinear ? bilinear : bicubic;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support0 * filterscale;
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.weights.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> k(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    // (int) truncates toward zero, as the C cast in Pillow does.
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    const double ss = 1.0 / filterscale;  // multiplied, not divided: Pillow's rounding
    double sum = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = filter((x + xmin - center + 0.5) * ss);
      sum += k[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double w = sum != 0.0 ? k[x] / sum : k[x];
      const double fixed = w * (1 << kPrecisionBits);
      c.weights[static_cast<size_t>(xx) * c.ksize + x] =
          static_cast<int32_t>(w < 0 ? std::trunc(fixed - 0.5) : std::trunc(fixed + 0.5));
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

uint8_t clip8(int64_t acc) {
  const int64_t v = acc >> kPrecisionBits;  // arithmetic: floor
  return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
}

// One pass along x (horizontal) or y (vertical) of an RGB image.
Image resample_pass(const Image& in, int out_size, bool horizontal, Resample kind) {
  const int in_size = horizontal ? in.width : in.height;
  const Coeffs c = coefficients(in_size, out_size, kind);
  Image out;
  out.width = horizontal ? out_size : in.width;
  out.height = horizontal ? in.height : out_size;
  out.channels = 3;
  out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      const int o = horizontal ? x : y;
      const int32_t* w = &c.weights[static_cast<size_t>(o) * c.ksize];
      int64_t acc[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
      for (int i = 0; i < c.count[o]; ++i) {
        const uint8_t* p = horizontal ? in.at(c.first[o] + i, y) : in.at(x, c.first[o] + i);
        for (int ch = 0; ch < 3; ++ch) acc[ch] += int64_t{p[ch]} * w[i];
      }
      uint8_t* q = out.at(x, y);
      for (int ch = 0; ch < 3; ++ch) q[ch] = clip8(acc[ch]);
    }
  }
  return out;
}

}  // namespace

PreprocessConfig gemma3_siglip_config() { return PreprocessConfig{}; }

PreprocessConfig clip_config(int size) {
  PreprocessConfig c;
  c.width = c.height = size;
  c.resample = Resample::bicubic;
  c.mean = {0.48145466f, 0.4578275f, 0.40821073f};
  c.std = {0.26862954f, 0.26130258f, 0.27577711f};
  return c;
}

Image to_rgb(const Image& in, AlphaRule rule) {
  OG_CHECK(in.channels == 3 || in.channels == 4, "image: ", in.channels, " channels (expected RGB or RGBA)");
  if (in.channels == 3) return in;
  Image out;
  out.width = in.width;
  out.height = in.height;
  out.channels = 3;
  const size_t n = static_cast<size_t>(in.width) * in.height;
  out.pixels.resize(n * 3);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &in.pixels[i * 4];
    for (int ch = 0; ch < 3; ++ch) {
      if (rule == AlphaRule::drop) {
        out.pixels[i * 3 + ch] = p[ch];
      } else {
        // PIL's paste blend: round((c * a + 255 * (255 - a)) / 255) in integers.
        const uint32_t t = uint32_t{p[ch]} * p[3] + 255u * (255u - p[3]) + 128u;
        out.pixels[i * 3 + ch] = static_cast<uint8_t>(((t >> 8) + t) >> 8);
      }
    }
  }
  return out;
}

Image resize_like_pil(const Image& rgb, int width, int height, Resample resample) {
  OG_CHECK(rgb.channels == 3, "image: resize needs RGB");
  OG_CHECK(width > 0 && height > 0 && rgb.width > 0 && rgb.height > 0, "image: resize to or from an empty size");
  // The horizontal pass first, over every row, then the vertical one; each
  // only when its size changes (Pillow skips an identity pass).
  Image out = rgb.width != width ? resample_pass(rgb, width, true, resample) : rgb;
  if (rgb.height != height) out = resample_pass(out, height, false, resample);
  return out;
}

std::vector<float> preprocess_image(const Image& image, const PreprocessConfig& config) {
  OG_CHECK(config.width > 0 && config.height > 0, "image: preprocess size must be positive");
  const Image rgb = resize_like_pil(to_rgb(image, config.alpha), config.width, config.height, config.resample);
  const size_t plane = static_cast<size_t>(config.width) * config.height;
  std::vector<float> out(plane * 3);
  for (size_t i = 0; i < plane; ++i) {
    for (int ch = 0; ch < 3; ++ch) {
      // transformers: rescale in float64 then cast to float32; normalize in float32.
      const float x = static_cast<float>(rgb.pixels[i * 3 + ch] * config.rescale);
      out[static_cast<size_t>(ch) * plane + i] = (x - config.mean[ch]) / config.std[ch];
    }
  }
  return out;
}

}  // namespace og::vision
