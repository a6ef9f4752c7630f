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
  c.shortest_edge = size;
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

namespace {

Image blank(int width, int height, std::array<uint8_t, 3> color) {
  Image out;
  out.width = width;
  out.height = height;
  out.channels = 3;
  out.pixels.resize(static_cast<size_t>(width) * height * 3);
  for (size_t i = 0; i < out.pixels.size(); i += 3) std::copy(color.begin(), color.end(), out.pixels.begin() + i);
  return out;
}

// Copies `src` into `dst` with its top-left corner at (x0, y0); what falls
// outside `dst` is dropped.
void draw(Image& dst, const Image& src, int x0, int y0) {
  for (int y = std::max(0, -y0); y < src.height && y + y0 < dst.height; ++y) {
    const int x_begin = std::max(0, -x0), x_end = std::min(src.width, dst.width - x0);
    if (x_end > x_begin) std::copy_n(src.at(x_begin, y), (x_end - x_begin) * 3, dst.at(x_begin + x0, y + y0));
  }
}

int floor_half(int v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

void check_resized(int64_t width, int64_t height, const char* what) {
  OG_CHECK(width > 0 && height > 0 && width * height <= kMaxResizedPixels, "image: ", what, " would be ", width,
           "x", height, " pixels (at most ", kMaxResizedPixels, ")");
}

// The RGB image at config.width x config.height, before rescaling.
Image fit(const Image& image, const PreprocessConfig& config) {
  Image rgb = to_rgb(image, config.alpha);
  if (config.pad_square) rgb = pad_to_square(rgb, config.pad_color);
  if (config.letterbox) return letterbox(rgb, config.width, config.height, config.resample, config.pad_color);
  if (config.shortest_edge <= 0) return resize_like_pil(rgb, config.width, config.height, config.resample);
  const std::array<int, 2> wh = shortest_edge_size(rgb.width, rgb.height, config.shortest_edge);
  return center_crop(resize_like_pil(rgb, wh[0], wh[1], config.resample), config.width, config.height);
}

}  // namespace

std::array<int, 2> shortest_edge_size(int width, int height, int shortest_edge) {
  OG_CHECK(width > 0 && height > 0 && shortest_edge > 0, "image: shortest-edge resize of an empty size");
  const int64_t shorter = std::min(width, height), longer = std::max(width, height);
  // Python's int(edge * long / short): a float64 quotient truncated.
  const double l = static_cast<double>(int64_t{shortest_edge} * longer) / static_cast<double>(shorter);
  OG_CHECK(l * shortest_edge <= static_cast<double>(kMaxResizedPixels), "image: a ", width, "x", height,
           " image resized to shortest edge ", shortest_edge, " would exceed ", kMaxResizedPixels, " pixels");
  const int new_long = static_cast<int>(l);
  check_resized(new_long, shortest_edge, "the shortest-edge resize");
  return width <= height ? std::array<int, 2>{shortest_edge, new_long} : std::array<int, 2>{new_long, shortest_edge};
}

Image center_crop(const Image& rgb, int width, int height) {
  OG_CHECK(rgb.channels == 3, "image: centre crop needs RGB");
  check_resized(width, height, "the centre crop");
  Image out = blank(width, height, {0, 0, 0});
  draw(out, rgb, -floor_half(rgb.width - width), -floor_half(rgb.height - height));
  return out;
}

Image pad_to_square(const Image& rgb, std::array<uint8_t, 3> color) {
  OG_CHECK(rgb.channels == 3, "image: padding needs RGB");
  if (rgb.width == rgb.height) return rgb;
  const int side = std::max(rgb.width, rgb.height);
  check_resized(side, side, "the square padding");
  Image out = blank(side, side, color);
  draw(out, rgb, (side - rgb.width) / 2, (side - rgb.height) / 2);
  return out;
}

Image letterbox(const Image& rgb, int width, int height, Resample resample, std::array<uint8_t, 3> color) {
  OG_CHECK(rgb.channels == 3 && rgb.width > 0 && rgb.height > 0, "image: letterbox needs a non-empty RGB image");
  check_resized(width, height, "the letterbox");
  if (rgb.width == width && rgb.height == height) return rgb;
  // In float, as llama.cpp computes it, so that the rounding agrees.
  const float scale = std::min(static_cast<float>(width) / static_cast<float>(rgb.width),
                               static_cast<float>(height) / static_cast<float>(rgb.height));
  const int w = std::max(1, std::min(static_cast<int>(std::ceil(static_cast<float>(rgb.width) * scale)), width));
  const int h = std::max(1, std::min(static_cast<int>(std::ceil(static_cast<float>(rgb.height) * scale)), height));
  Image out = blank(width, height, color);
  draw(out, resize_like_pil(rgb, w, h, resample), (width - w) / 2, (height - h) / 2);
  return out;
}

std::vector<float> preprocess_image(const Image& image, const PreprocessConfig& config) {
  OG_CHECK(config.width > 0 && config.height > 0, "image: preprocess size must be positive");
  const Image rgb = fit(image, config);
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
