// Images into a session through a vision tower (docs/vision.md, "Images into
// a session"): preprocessed pixels -> the tower's rows and the hash that names
// them -> Session::append_image. Decoding and preprocessing (src/vision/) come
// before: this layer takes the planar floats they return.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "chat/chat_template.h"
#include "model/vision_tower.h"
#include "runtime/image_span.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

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

// --- A prompt with images (docs/vision.md, "Images in a prompt") ---

// How a model's rendered prompt holds an image. The chat template writes
// `marker` for each image part (Gemma 3's template: "<start_of_image>");
// before tokenization each marker in the template's own text becomes
// `open` + one `placeholder_text` per row of that image + `close`, as
// transformers' Gemma3Processor replaces it ("\n\n<start_of_image>",
// 256 x "<image_soft_token>", "<end_of_image>\n\n"), so that the text around
// the image tokenizes as the reference tokenizes it. Message text never
// holds a marker: request text is encoded as text (chat_template.h), so only
// the template's markers count.
struct ImageMarkup {
  std::string marker;
  std::string open, placeholder_text, close;
  int32_t placeholder = -1;  // the id of placeholder_text (each image position's id in history)
};

// The rendered prompt's ids with every marker expanded, image i (in the order
// the template writes them, the order of chat_images()) into rows[i]
// placeholders, and the first position of each image's run. og::Error (one
// line) unless the template wrote exactly rows.size() markers and the ids
// hold exactly those runs. `first` as encode_chat's.
struct ImageRuns {
  std::vector<int32_t> tokens;
  std::vector<int64_t> starts;
};
ImageRuns encode_with_images(const Tokenizer& tok, std::span<const ChatSegment> segments, const ImageMarkup& markup,
                             std::span<const int64_t> rows, bool first = true);

// An image of a prompt: its rows and hash, and where its run begins.
struct PromptImage {
  int64_t position = 0;
  TowerImage image;
};

// A prompt with images: the ids (each image's positions hold `placeholder`)
// and the images at their positions, sorted and disjoint. The front ends
// build it (render, encode_with_images, one tower encode per image) and a
// Session takes it through append_image_prompt.
struct ImagePrompt {
  std::vector<int32_t> tokens;
  std::vector<PromptImage> images;
  int32_t placeholder = -1;
  bool bidirectional = false;  // the family's FamilySpec::image_spans_bidirectional
  std::vector<ImageSpan> spans() const;  // the images' spans (the prefix cache's keys)
};

// og::Error (one line) unless the images lie in the ids, sorted and disjoint,
// each with n_rows() rows of width d_model over a run of its placeholder.
void check_image_prompt(const ImagePrompt& p, int64_t d_model);

// Appends p.tokens[from, end) to the history without forwarding them, as
// append_pending does, each image whole through Session::append_image (a
// turn begun with an empty prompt, or prefill of nothing, then forwards
// them). `from` must not fall inside an image: the images before it are
// those the history already holds. Checks the whole prompt first
// (check_image_prompt) and that it fits; on any error the history is as
// before.
void append_image_prompt(Session& s, const ImagePrompt& p, int64_t from, int64_t d_model);

}  // namespace og
