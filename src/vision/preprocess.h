// Image preprocessing for vision towers, as Hugging Face's (PIL-based) image
// processors do it: convert to RGB, resize to the model's size with PIL's
// resampling, rescale by 1/255, normalize with the model's mean and std.
// Output layout: planar float32 [3, height, width] (channel-major: all of R,
// then G, then B; rows top to bottom), what a patch-embedding conv reads.
#pragma once

#include <array>
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
};

// Gemma 3's SigLIP processor (Gemma3ImageProcessor): 896x896, bilinear,
// mean = std = 0.5.
PreprocessConfig gemma3_siglip_config();
// CLIP (LLaVA 1.5's tower): size x size (336), bicubic, OpenAI CLIP's mean/std.
// Squashed to the square, like Gemma's; CLIP's shortest-edge resize + centre
// crop is not done yet.
PreprocessConfig clip_config(int size = 336);

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
