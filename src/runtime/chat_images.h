// A chat request's images into the prompt a session takes (docs/vision.md,
// "Images in a prompt"): each image part's bytes through the model's vision
// tower (runtime/vision_model.h), the template's markers expanded into runs
// of placeholders (image_input.h encode_with_images), the rows placed at
// their runs. Used by run --image, chat /image and the C API's chat.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "chat/chat_request.h"
#include "runtime/chat_turn.h"
#include "runtime/image_input.h"
#include "runtime/vision_model.h"

namespace og {

// The markup of `v`'s images in prompts. "gemma3": the template writes the
// begin token ("<start_of_image>"), which becomes "\n\n" + begin +
// placeholders + end + "\n\n", as transformers' Gemma3Processor writes it;
// other kinds (Gemma 4, LLaVA): the template writes the placeholder
// ("<|image|>", "<image>"), which becomes begin + placeholders + end (each
// absent when the kind has none), one placeholder per row of that image.
ImageMarkup image_markup_of(const VisionModel& v, const Tokenizer& tok);

// Encoded images by the SHA-256 of their bytes, so that a conversation's
// later turns do not run the tower again over images it already holds.
class ImageCache {
 public:
  // The image of `bytes`, encoded through `v` on first use (og::Error
  // "image: ..." on a bad image, nothing kept then).
  std::shared_ptr<const TowerImage> get(std::string_view bytes, const VisionModel& v);
  // Drops every image not among `keep` (the bytes of the request's images).
  void keep_only(std::span<const std::string* const> keep);
  size_t size() const { return images_.size(); }

 private:
  std::map<Sha256Digest, std::shared_ptr<const TowerImage>> images_;
};

// The words of the refusal of images by a model without a tower.
inline constexpr const char* kNoVisionTower = "this model has no vision tower (pass --mmproj FILE)";

// The request's images in marker order (chat_images), encoded through `v`
// (from `cache` when it holds them; null: none). A ChatRequestError naming
// the image's part ("messages[0].content[1]"): with v null (kNoVisionTower),
// or an image that does not decode ("image: png: truncated data").
std::vector<std::shared_ptr<const TowerImage>> encode_chat_images(const ChatRequest& r, const VisionModel* v,
                                                                  ImageCache* cache = nullptr);

// The rendered segments' prompt with `images` at their runs (first: the
// prompt starts the conversation, encode_chat's BOS rule). og::Error when
// the template places another number of images.
ImagePrompt image_prompt_of(std::span<const ChatSegment> segments, const Tokenizer& tok, const VisionModel& v,
                            std::span<const std::shared_ptr<const TowerImage>> images, bool first = true);

// A chat turn's prompt with images on a session (runtime/chat_turn.h's
// plan_chat_turn with the request's images encoded and placed): the turn's
// plan, ids and kept prefix (shared_prompt_prefix over the images: never
// ending inside one, nor covering an image the history holds elsewhere or
// with another hash), and the prompt with its images. Changes nothing but
// `cache`; ChatRequestError as plan_chat and encode_chat_images, og::Error
// for a template that places another number of images than it was given.
struct ImageChatTurn {
  ChatTurnPrompt turn;
  ImagePrompt prompt;
};
ImageChatTurn plan_image_chat_turn(const ChatRequest& r, const ChatSetup& setup, const Tokenizer& tok,
                                   const Session& s, const VisionModel* v, ImageCache* cache);

}  // namespace og
