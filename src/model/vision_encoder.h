// One interface over every vision tower (Gemma 3's SigLIP, Gemma 4's encoder,
// the LLaVA-style CLIP + MLP), and the loaders that pick the tower from an
// mmproj GGUF's projector type or an HF config's model_type
// (docs/vision.md "Towers by projector type"). The model layer knows no
// image decoding: a tower says what pixels it wants (VisionPixels) and the
// runtime turns a decoded image into them with src/vision's preprocess_image.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/tensor_source.h"

namespace og {

// The pixels a tower takes for one image: planar [3, height, width] floats,
// resized with `bicubic` (else bilinear) PIL resampling, rescaled by
// `rescale`, then (x - mean) / std per channel (vision::PreprocessConfig's
// fields, which say what pad_square, shortest_edge and letterbox do).
struct VisionPixels {
  int64_t width = 0, height = 0;
  bool bicubic = false;
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f};
  std::array<float, 3> std{0.5f, 0.5f, 0.5f};
  double rescale = 1.0 / 255.0;
  bool pad_square = false;     // LlavaImageProcessor's do_pad, before the resize
  int64_t shortest_edge = 0;   // > 0: CLIP's shortest-edge resize, then a centre crop to width x height
  bool letterbox = false;      // llama.cpp's fit-inside resize on pad_color
  std::array<uint8_t, 3> pad_color{0, 0, 0};
};

class VisionEncoder {
 public:
  virtual ~VisionEncoder() = default;
  // llama.cpp's clip.projector_type name: "gemma3", "gemma4v" or "mlp".
  virtual const std::string& projector() const = 0;
  // The rows' width: the text model's hidden size.
  virtual int64_t width() const = 0;
  // Rows per image: exact for fixed-size towers, the most for Gemma 4's.
  virtual int64_t max_tokens() const = 0;
  // The input size and normalization for an image of src_width x src_height
  // (fixed-size towers ignore the source size; Gemma 4 keeps its aspect).
  virtual VisionPixels pixels_for(int64_t src_width, int64_t src_height) const = 0;
  // Rows encode() returns for a width x height input.
  virtual int64_t tokens_for(int64_t width, int64_t height) const = 0;
  // pixels as pixels_for describes them -> [tokens_for(width, height), width()]
  // rows; og::Error on a size the tower cannot take.
  virtual std::vector<float> encode(std::span<const float> pixels, int64_t width, int64_t height) const = 0;
  // One line: "gemma4v vision tower: patch 16, 16 layers, width 768, 12 heads, at most 280 tokens per image,
  // projection width 1536".
  virtual std::string describe() const = 0;
};

// The projector type an mmproj file declares: clip.vision.projector_type
// (files with several modalities) or clip.projector_type; og::Error when neither.
std::string mmproj_projector_type(const GgufFile& f);

// The tower of an mmproj GGUF by its projector type (gemma3, gemma4v, mlp;
// another is refused by name). Its matrices view `f`, which must outlive it.
std::unique_ptr<VisionEncoder> load_vision_encoder(const GgufFile& f);
// The tower of an HF checkpoint by config.json's model_type (gemma3, gemma4,
// llava); `src` holds the tensors and must outlive the tower. `processor`:
// the image processor's settings when the checkpoint has them (an object;
// null: none), of which Gemma 4's max_soft_tokens is read (70, 140, 280, 560
// or 1120; 280 when absent), and LLaVA's CLIP settings (vision_llava_pixels.h).
std::unique_ptr<VisionEncoder> load_vision_encoder(const nlohmann::json& config, const std::string& file,
                                                   const TensorSource& src,
                                                   const nlohmann::json& processor = nullptr);

}  // namespace og
