// The runtime side of model/vision_encoder.h, for any tower kind (Gemma 3,
// Gemma 4, LLaVA): a decoded image -> the pixels the tower asks for
// (src/vision's preprocess_image at the tower's size and normalization) ->
// rows and the image's hash, the TowerImage a Session appends. A loader
// holding a VisionEncoder plugs it into VisionModel::encoder with one line:
//   vm->encoder = [enc](const vision::Image& im) { return encode_image(*enc, im); };
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "model/vision_encoder.h"
#include "runtime/image_input.h"
#include "vision/image.h"
#include "vision/preprocess.h"

namespace og {

// vision::PreprocessConfig of a tower's VisionPixels (size, resampling, mean/std).
vision::PreprocessConfig preprocess_config(const VisionPixels& px);

// Preprocessed pixels [3, height, width] -> the tower's rows, hashed over a
// tag naming the projector and the size, and the pixel floats' bytes (as
// encode_image(VisionTower) does for Gemma 3's fixed size).
TowerImage encode_pixels(const VisionEncoder& enc, std::span<const float> pixels, int64_t width, int64_t height);

// A decoded image (RGB or RGBA) -> pixels_for(its size) -> preprocess -> rows.
TowerImage encode_image(const VisionEncoder& enc, const vision::Image& image);

// The image processor's settings an HF directory holds, for
// load_vision_encoder: preprocessor_config.json, else processor_config.json's
// "image_processor" object (newer transformers saves them there); null when
// neither. og::Error naming the file when it is not a JSON object.
nlohmann::json read_image_processor_settings(const std::string& dir);

struct VisionModel;
// A VisionModel's tower fields from an encoder of any kind: projection_width,
// summary, tokens_per_image (the most, for Gemma 4), preprocess (what a
// square image gets) and encoder (decoded image -> rows). The caller still
// sets the path, what the matrices view (keep_alive), tokens and family facts.
void use_encoder(VisionModel& v, std::shared_ptr<const VisionEncoder> enc);

}  // namespace og
