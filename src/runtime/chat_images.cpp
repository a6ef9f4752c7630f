// A chat request's images into a session's prompt (chat_images.h).
#include "runtime/chat_images.h"

#include <set>

#include "base/error.h"
#include "chat/request_error.h"

namespace og {

ImageMarkup image_markup_of(const VisionModel& v, const Tokenizer& tok) {
  ImageMarkup m;
  OG_CHECK(v.tokens.placeholder >= 0, "image: the vision tower has no placeholder token");
  m.placeholder = v.tokens.placeholder;
  m.placeholder_text = tok.piece(v.tokens.placeholder);
  const std::string begin = v.tokens.begin >= 0 ? tok.piece(v.tokens.begin) : "";
  const std::string end = v.tokens.end >= 0 ? tok.piece(v.tokens.end) : "";
  // Gemma 3's processor takes the begin token as its image token; Gemma 4's
  // and LLaVA's templates write the placeholder itself, which becomes
  // begin + placeholders + end (no newlines: processing_gemma4.py).
  m.marker = m.placeholder_text;
  m.open = begin;
  m.close = end;
  if (v.projector == "gemma3") {
    m.marker = begin;
    m.open = "\n\n" + begin;
    m.close = end + "\n\n";
  }
  return m;
}

std::shared_ptr<const TowerImage> ImageCache::get(std::string_view bytes, const VisionModel& v) {
  const Sha256Digest key = Sha256::of(bytes);
  auto it = images_.find(key);
  if (it != images_.end()) return it->second;
  auto im = std::make_shared<const TowerImage>(v.encode(bytes));
  images_.emplace(key, im);
  return im;
}

void ImageCache::keep_only(std::span<const std::string* const> keep) {
  std::set<Sha256Digest> wanted;
  for (const std::string* b : keep) wanted.insert(Sha256::of(*b));
  for (auto it = images_.begin(); it != images_.end();) it = wanted.count(it->first) ? std::next(it) : images_.erase(it);
}

std::vector<std::shared_ptr<const TowerImage>> encode_chat_images(const ChatRequest& r, const VisionModel* v,
                                                                  ImageCache* cache) {
  std::vector<std::shared_ptr<const TowerImage>> out;
  for (size_t i = 0; i < r.messages.size(); ++i) {
    const std::vector<ChatContentPart>& parts = r.messages[i].parts;
    for (size_t j = 0; j < parts.size(); ++j) {
      if (!parts[j].is_image()) continue;
      const std::string at = "messages[" + std::to_string(i) + "].content[" + std::to_string(j) + "]";
      if (!v) throw ChatRequestError("'" + at + "' is an image and " + kNoVisionTower, at, "unsupported_parameter");
      try {
        out.push_back(cache ? cache->get(parts[j].image, *v)
                            : std::make_shared<const TowerImage>(v->encode(parts[j].image)));
      } catch (const ChatRequestError&) {
        throw;
      } catch (const Error& e) {
        throw ChatRequestError("'" + at + "': " + e.what(), at);
      }
    }
  }
  return out;
}

ImagePrompt image_prompt_of(std::span<const ChatSegment> segments, const Tokenizer& tok, const VisionModel& v,
                            std::span<const std::shared_ptr<const TowerImage>> images, bool first) {
  std::vector<int64_t> rows;
  for (const auto& im : images) rows.push_back(im->n_rows());
  const ImageRuns runs = encode_with_images(tok, segments, image_markup_of(v, tok), rows, first);
  ImagePrompt p;
  p.tokens = runs.tokens;
  p.placeholder = v.tokens.placeholder;
  p.bidirectional = v.bidirectional;
  for (size_t i = 0; i < images.size(); ++i) p.images.push_back({runs.starts[i], *images[i]});
  return p;
}

ImageChatTurn plan_image_chat_turn(const ChatRequest& r, const ChatSetup& setup, const Tokenizer& tok,
                                   const Session& s, const VisionModel* v, ImageCache* cache) {
  ImageChatTurn t;
  t.turn.plan = plan_chat(r, setup);
  const std::vector<std::shared_ptr<const TowerImage>> images = encode_chat_images(r, v, cache);
  if (images.empty()) {
    t.prompt.tokens = encode_chat(tok, t.turn.plan.segments, true);
  } else {
    t.prompt = image_prompt_of(t.turn.plan.segments, tok, *v, images);
  }
  t.turn.ids = t.prompt.tokens;
  const std::vector<ImageSpan> history_images = s.image_spans();
  t.turn.keep = shared_prompt_prefix(s.history(), history_images, t.turn.ids, t.prompt.spans());
  return t;
}

}  // namespace og
