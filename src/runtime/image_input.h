// Images into a session through a vision tower (docs/vision.md, "Images into
// a session"): preprocessed pixels -> the tower's rows and the hash that names
// them -> Session::append_image. Decoding and preprocessing (src/vision/) come
// before: this layer takes the planar floats they return.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/sha256.h"
#include "model/vision_tower.h"
#include "runtime/session.h"

namespace og {

struct TowerImage {
  std::vector<float> rows;  // [n_rows, width], the seam's embedding rows
  int64_t width = 0;        // the tower's text hidden size
  Sha256Digest hash{};      // names the image in history and in the prefix cache's keys
  int64_t n_rows() const { return width > 0 ? static_cast<int64_t>(rows.size()) / width : 0; }
};

// Runs the tower on planar [3, image_size, image_size] pixels. The hash
// covers a tag, the input size and the pixel values' bytes: preprocessing is
// a function of the decoded image and its config, so equal pixels mean the
// same image under the same preprocessing. It does not cover the tower's
// weights (a prefix cache belongs to one model).
TowerImage encode_image(const VisionTower& tower, std::span<const float> pixels);

// Appends the image pending, as Session::append_image does. og::Error, with
// nothing changed, unless the rows are d_model wide (the text model's width).
void append_tower_image(Session& s, const TowerImage& image, int64_t d_model, int32_t placeholder,
                        bool bidirectional);

}  // namespace og
