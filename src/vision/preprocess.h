// Image preprocessing for vision towers, as Hugging Face's (PIL-based) image
// processors do it: convert to RGB, (LLaVA) pad to a square, resize with PIL's
// resampling (straight to the model's size, or CLIP's shortest edge then a
// centre crop, or llama.cpp's letterbox), rescale by 1/255, normalize with the
// model's mean and std (docs/vision.md "Preprocessing").
// Output layout: planar float32 [3, height, width] (channel-major: all of R,
// then G, then B; rows top to bottom), what a patch-embedding conv reads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "vision/image.h"

namespace og::vision {

// PIL's Image.Resampling.BILINEAR (2) and BICUBIC (3), with PIL's
// antialiasing: downscaling widens the filter by the scale factor.
enum class Resample { bilinear, bicubic };

// What becomes of an alpha channel when converting to RGB.
// drop: PIL's convert("RGB"), which transformers' convert_to_rgb and
// llama.cpp's loader (stb_image, 3 channels) both do. over_white: composite
// over white (vLLM's RGBA -> RGB, Idefics).
enum class AlphaRule { drop, over_white };

struct PreprocessConfig {
  int width = 896;
  int height = 896;
  Resample resample = Resample::bilinear;
  double rescale = 1.0 / 255.0;
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f};
  std::array<float, 3> std{0.5f, 0.5f, 0.5f};
  AlphaRule alpha = AlphaRule::drop;
  // How the image reaches width x height (the default squashes it there).
  // LlavaImageProcessor's do_pad: first pad to a square of the longer side
  // on pad_color, the image centred (pad_to_square).
  bool pad_square = false;
  // CLIPImageProcessor's size.shortest_edge (> 0): resize keeping the aspect
  // so the shorter side is this, then centre_crop to width x height.
  int shortest_edge = 0;
  // llama.cpp's fixed-size preprocessing of an mmproj tower: fit inside
  // width x height keeping the aspect, centred on pad_color (letterbox).
  bool letterbox = false;
  std::array<uint8_t, 3> pad_color{0, 0, 0};
};

// Gemma 3's SigLIP processor (Gemma3ImageProcessor): 896x896, bilinear,
// mean = std = 0.5.
PreprocessConfig gemma3_siglip_config();
// CLIPImageProcessor as LLaVA 1.5 configures it: shortest edge `size` (336),
// bicubic, centre crop to size x size, OpenAI CLIP's mean/std.
PreprocessConfig clip_config(int size = 336);

// The largest image a resize may produce on the way (CLIP's shortest-edge
// resize of a 1 x 10000 image would be 336 x 3360000): 64 Mpixel.
inline constexpr int64_t kMaxResizedPixels = int64_t{1} << 26;

// transformers' get_resize_output_image_size(default_to_square=False): the
// shorter side becomes `shortest_edge`, the longer int(edge * long / short).
// Returns {width, height}.
std::array<int, 2> shortest_edge_size(int width, int height, int shortest_edge);
// transformers' center_crop: the window at floor((in - out) / 2) on each
// axis; where the image is smaller it is zero-padded, placed at
// ceil((out - in) / 2), as transformers does.
Image center_crop(const Image& rgb, int width, int height);
// LlavaImageProcessor.pad_to_square: a square of the longer side filled with
// `color`, the image at floor((side - its size) / 2). Square images unchanged.
Image pad_to_square(const Image& rgb, std::array<uint8_t, 3> color);
// llama.cpp's resize with padding (PAD_CEIL): scale = min(w_out / w, h_out / h)
// in float, the image resized to min(ceil(w * scale), w_out) x (same for h),
// drawn at ((w_out - w') / 2, (h_out - h') / 2) on `color`. The same size: a copy.
Image letterbox(const Image& rgb, int width, int height, Resample resample, std::array<uint8_t, 3> color);

// RGB (3 channels) from RGB or RGBA under `rule`.
Image to_rgb(const Image& in, AlphaRule rule);

// PIL's Image.resize(size, resample) on an 8-bit RGB image: a horizontal then
// a vertical pass of separable convolution with fixed-point (22-bit)
// coefficients and an 8-bit intermediate, exactly as Pillow's Resample.c.
// The same size returns a copy.
Image resize_like_pil(const Image& rgb, int width, int height, Resample resample);

// decode_image's result -> planar [3, config.height, config.width] floats.
std::vector<float> preprocess_image(const Image& image, const PreprocessConfig& config);

}  // namespace og::vision
