// An HF checkpoint's preprocessor_config.json (the image processor's
// settings): the one reader of it, for the vision model's preprocessing
// (runtime/vision_model.cpp) and the mmproj export's mean/std
// (model/mmproj_gguf.cpp). Fields the file leaves out stay unset.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace og {

struct HfImageProcessor {
  std::string path;                             // the file, for messages
  std::optional<std::array<float, 3>> mean, std;  // image_mean, image_std
  std::optional<double> rescale;                // rescale_factor
  std::optional<int64_t> resample;              // PIL's filter id (2 bilinear, 3 bicubic)
  std::optional<int64_t> height, width;         // size.height, size.width
};

// <dir>/preprocessor_config.json, nullopt when the directory has none.
// og::Error naming the file and the field for a malformed one.
std::optional<HfImageProcessor> read_hf_image_processor(const std::string& dir);

}  // namespace og
