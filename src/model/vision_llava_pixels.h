// What pixels a LLaVA tower takes (docs/vision.md "LLaVA's preprocessing"):
// from an HF checkpoint, its image processor's settings as transformers'
// CLIPImageProcessor / LlavaImageProcessor apply them; from llama.cpp's mlp
// mmproj, which states only mean and std, llama.cpp's own rule for it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "model/vision_encoder.h"

namespace og {

// `processor`: preprocessor_config.json's object (null: none, then LLaVA
// 1.5's CLIPImageProcessor: shortest edge and crop image_size, bicubic, OpenAI
// CLIP's mean/std). Keys read: image_processor_type (CLIPImageProcessor,
// LlavaImageProcessor, their Fast names, which are followed as the slow ones),
// do_resize, size (an integer or {shortest_edge} or {height, width}),
// resample (2, 3), do_center_crop, crop_size, do_rescale, rescale_factor,
// do_normalize, image_mean, image_std, and LlavaImageProcessor's do_pad.
// The image that reaches the tower must be image_size square: a crop_size or
// size that cannot give it is an og::Error naming `file` and the key.
VisionPixels llava_hf_pixels(int64_t image_size, const nlohmann::json& processor, const std::string& file);

// llama.cpp's fixed-size preprocessing of an mlp projector without
// resolution candidates: fit inside image_size square keeping the aspect
// (bicubic), centred on (122, 116, 104); mean/std from clip.vision.image_mean
// and image_std (OpenAI CLIP's where absent).
VisionPixels llava_mmproj_pixels(int64_t image_size, const GgufFile& f);

}  // namespace og
