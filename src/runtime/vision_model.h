// A vision tower loaded next to the text model (docs/vision.md "Loading a
// tower"): the tower, the preprocessing its images need, the image token ids
// of the text model's tokenizer and template, and one call from image bytes to
// the rows a Session takes (decode -> preprocess -> tower). Front ends (run
// --image, chat /image, serve's image_url, the C API) hold one through
// LoadedModel::vision and call encode(); load_model (run_setup.h) builds it
// from --mmproj (llama.cpp's mmproj GGUF) or from an HF directory whose
// config.json has a vision_config.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "format/model_source.h"
#include "model/model.h"
#include "model/vision_tower.h"
#include "runtime/image_input.h"
#include "tokenizer/tokenizer.h"
#include "vision/image.h"
#include "vision/preprocess.h"

namespace og {

// The tokens a template puts around and into an image, looked up in the
// tokenizer by their text (Gemma 3: <start_of_image>, <image_soft_token>,
// <end_of_image>). The placeholder fills the image's positions in history.
struct ImageTokenIds {
  int32_t begin = -1;        // before the image's soft tokens (-1: the family has none)
  int32_t placeholder = -1;  // each image position (Session::append_image's placeholder)
  int32_t end = -1;          // after them (-1: none)
};

struct VisionModel {
  // Keeps alive what the tower's matrices view (the mmproj GGUF's mapping or
  // the HF directory's safetensors). Declared first, so destroyed last.
  std::shared_ptr<const void> keep_alive;
  // Gemma 3's tower (projector "gemma3"); null for a tower of another kind,
  // which sets `encoder` instead (Gemma 4's variable-size encoder, LLaVA's).
  std::shared_ptr<const VisionTower> tower;
  // A decoded image -> its rows, for kinds without a fixed-size `tower`
  // (they preprocess as they need); null: preprocess with `preprocess`, then `tower`.
  std::function<TowerImage(const vision::Image&)> encoder;
  vision::PreprocessConfig preprocess;  // image size, resample, mean/std for this tower
  ImageTokenIds tokens;
  int64_t tokens_per_image = 0;         // rows encode() returns (Gemma 3: 256; at most this for variable kinds)
  int64_t projection_width = 0;         // the rows' width = the text model's d_model
  bool bidirectional = false;           // the family's FamilySpec::image_spans_bidirectional
  std::string projector = "gemma3";     // llama.cpp's clip.projector_type name
  std::string path;                     // the mmproj file or the HF directory it came from
  std::string summary;                  // describe()'s text

  int64_t width() const { return projection_width; }
  // Image bytes (PNG, JPEG, WebP, GIF) -> decode under `limits` -> preprocess
  // -> tower: tokens_per_image rows of width() and the image's hash.
  // og::Error ("image: ...") on a bad image; nothing is kept between calls.
  TowerImage encode(std::string_view image_bytes, const vision::DecodeLimits& limits = {}) const;
  // The same from an already decoded image.
  TowerImage encode(const vision::Image& image) const;
  // One line for inspect and run's banner: "gemma3 vision tower: 896x896
  // pixels, patch 14, 27 layers, width 1152, 16 heads, 256 tokens per image,
  // projection width 2560".
  const std::string& describe() const { return summary; }
};

// The tower for `text` (whose source is `text_src` and tokenizer `tok`):
// from `mmproj` when not empty (llama.cpp's mmproj GGUF), else from the text
// source when it is an HF directory whose config.json has a vision_config;
// null when neither (a text-only model). og::Error with one line naming the
// file: mmproj missing or not GGUF, not a clip file, an unsupported projector
// type (named), a projection width other than the text model's hidden size,
// a text family without images, image tokens missing from the tokenizer.
std::shared_ptr<const VisionModel> load_vision_model(const std::string& mmproj, const ModelSource& text_src,
                                                     const Model& text, const Tokenizer& tok);

}  // namespace og
