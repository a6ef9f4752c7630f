// A chat message's content as parts (issue 48): text and images in the order
// the user gave them. An image part holds the encoded image's bytes as they
// came (PNG, JPEG, WebP or GIF, told apart later by their magic bytes); the
// edges turn what they receive into bytes (a data: URL decoded here, a file
// read by the command line, bytes from the C API) and nothing in src/chat/
// decodes pixels. render_forms (chat_request.h) gives a Jinja template a
// message with images as the list of parts transformers' processors give it
// ({"type": "image"} and {"type": "text", "text": ...}), so the template
// writes its image marker where each image goes (Gemma 3: <start_of_image>).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace og {

struct ChatContentPart {
  enum class Kind { kText, kImage };
  Kind kind = Kind::kText;
  std::string text;   // kText
  std::string image;  // kImage: the encoded image's bytes

  static ChatContentPart of_text(std::string t) { return {Kind::kText, std::move(t), {}}; }
  static ChatContentPart of_image(std::string bytes) { return {Kind::kImage, {}, std::move(bytes)}; }
  bool is_image() const { return kind == Kind::kImage; }
};

// At most this many bytes in one encoded image (a data: URL's payload, a file
// given to --image, bytes given to the C API): 32 MiB. Decoding bounds the
// pixels separately (vision/image.h DecodeLimits).
inline constexpr size_t kMaxImageBytes = size_t{32} << 20;
// At most this many images in one request.
inline constexpr size_t kMaxImagesPerRequest = 64;

// An OpenAI image_url's "url" as image bytes: a data: URL with a base64
// payload ("data:image/png;base64,..."; the media type is not trusted: the
// bytes' magic decides) is decoded; an http(s) URL is refused ("image URLs
// are not fetched; send a data: URL"), as is anything else. A
// ChatRequestError naming `field` (e.g. "messages[0].content[1].image_url.url").
std::string image_bytes_from_url(std::string_view url, const std::string& field);

// Standard base64 (RFC 4648 alphabet, '=' padding optional, no whitespace)
// to bytes; false on any other character or a dangling final character.
bool decode_base64(std::string_view in, std::string* out);

// One content part in OpenAI's shape: {"type": "text", "text": ...},
// {"type": "image_url", "image_url": {"url": ...}} (or "image_url": "<url>"),
// or {"type": "image", "image": "<data: URL>"} as transformers' chat
// messages name it. `where` names the part ("messages[0].content[1]") in a
// ChatRequestError; other keys are ignored (OpenAI's "detail" among them).
ChatContentPart content_part_from_json(const nlohmann::ordered_json& part, const std::string& where);

// The text parts joined (what a format that renders no images would see).
std::string parts_text(const std::vector<ChatContentPart>& parts);
// How many image parts.
size_t count_images(const std::vector<ChatContentPart>& parts);

}  // namespace og
