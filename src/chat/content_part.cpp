// Content parts: data: URLs to bytes, OpenAI's part objects (content_part.h).
#include "chat/content_part.h"

#include <cctype>

#include "chat/request_error.h"

namespace og {

namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void refuse(const std::string& field, const std::string& message) {
  throw ChatRequestError("'" + field + "' " + message, field);
}

// The start of a URL for a message: at most 40 bytes, control bytes as '?'.
std::string url_text(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i)
    out += static_cast<unsigned char>(s[i]) < 0x20 ? '?' : s[i];
  return "'" + out + (s.size() > 40 ? "...'" : "'");
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

int base64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string url_of(const json& v, const std::string& at) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_object()) refuse(at, "must be an object with a 'url' or a URL string");
  const json* url = member(v, "url");
  if (!url) refuse(at + ".url", "is required");
  if (!url->is_string()) refuse(at + ".url", "must be a string");
  return url->get<std::string>();
}

}  // namespace

bool decode_base64(std::string_view in, std::string* out) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return false;
  out->clear();
  out->reserve(in.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    const int v = base64_value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

std::string image_bytes_from_url(std::string_view url, const std::string& field) {
  if (starts_with_nocase(url, "http://") || starts_with_nocase(url, "https://"))
    refuse(field, "is " + url_text(url) + ": image URLs are not fetched; send a data: URL");
  if (!starts_with_nocase(url, "data:"))
    refuse(field, "is " + url_text(url) + ": expected a data: URL (data:image/png;base64,...)");
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) refuse(field, "is a data: URL without a ',' before its data");
  const std::string_view head = url.substr(5, comma - 5);
  if (head.size() < 7 || !starts_with_nocase(head.substr(head.size() - 7), ";base64"))
    refuse(field, "is a data: URL whose data is not base64 (expected data:<type>;base64,...)");
  const std::string_view data = url.substr(comma + 1);
  if (data.size() / 4 * 3 > kMaxImageBytes)
    refuse(field, "holds an image of more than " + std::to_string(kMaxImageBytes >> 20) + " MiB");
  std::string bytes;
  if (!decode_base64(data, &bytes)) refuse(field, "is a data: URL whose base64 data is not valid");
  if (bytes.empty()) refuse(field, "is a data: URL with no data");
  return bytes;
}

ChatContentPart content_part_from_json(const json& part, const std::string& where) {
  if (!part.is_object()) refuse(where, "must be an object (a content part)");
  const json* type = member(part, "type");
  if (!type) refuse(where + ".type", "is required");
  if (!type->is_string()) refuse(where + ".type", "must be a string");
  const std::string t = type->get<std::string>();
  if (t == "text") {
    const json* text = member(part, "text");
    if (!text) refuse(where + ".text", "is required");
    if (!text->is_string()) refuse(where + ".text", "must be a string");
    return ChatContentPart::of_text(text->get<std::string>());
  }
  if (t == "image_url" || t == "image") {
    const json* v = member(part, t.c_str());
    if (!v) refuse(where + "." + t, "is required");
    const std::string at = where + "." + t;
    const std::string url = url_of(*v, at);
    return ChatContentPart::of_image(image_bytes_from_url(url, v->is_string() ? at : at + ".url"));
  }
  refuse(where + ".type", "is '" + t.substr(0, 40) + "': expected text, image_url or image");
}

std::string parts_text(const std::vector<ChatContentPart>& parts) {
  std::string out;
  for (const ChatContentPart& p : parts)
    if (!p.is_image()) out += p.text;
  return out;
}

size_t count_images(const std::vector<ChatContentPart>& parts) {
  size_t n = 0;
  for (const ChatContentPart& p : parts) n += p.is_image() ? 1 : 0;
  return n;
}

}  // namespace og
