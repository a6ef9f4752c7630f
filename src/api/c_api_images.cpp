// Images in the C API (offgraph.h og_chat_image, og_session_append_image):
// a chat request's images become image parts of its user messages, each
// checked and encoded through the model's tower (into the session's
// ImageCache) before anything changes; a plain image goes into the history
// pending, as the model's chat template would place it.
#include "api/c_api_images.h"

#include <algorithm>

#include "base/error.h"
#include "chat/content_part.h"
#include "model/config.h"

namespace og::capi {

namespace {

const VisionModel* vision_of(const og_session* session) { return session->core->run.loaded.vision.get(); }

std::string bytes_of(const og_chat_image& im, size_t k) {
  const std::string at = "images[" + std::to_string(k) + "]";
  if (!im.data || im.size == 0) api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, "' has no bytes (data NULL or size 0)");
  if (im.size > kMaxImageBytes)
    api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, "' is ", im.size, " bytes; an image is at most ", kMaxImageBytes >> 20,
             " MiB");
  return std::string(reinterpret_cast<const char*>(im.data), im.size);
}

TowerImage encode_or_fail(og_session* session, const std::string& bytes, const std::string& at) {
  const VisionModel* v = vision_of(session);
  if (!v) api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, "' is an image and ", kNoVisionTower);
  try {
    return *session->images.get(bytes, *v);
  } catch (const Error& e) {
    api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, "': ", e.what());
  }
}

// A UTF-8 continuation byte: an offset there would split a character.
bool splits_character(const std::string& text, size_t at) {
  return at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80;
}

}  // namespace

void add_chat_images(og_session* session, const og_chat_request& q, ChatRequest& r) {
  if (q.n_images == 0) return;
  if (!q.images) api_fail(OG_ERR_INVALID_ARGUMENT, "'images' is NULL with n_images ", q.n_images);
  if (q.n_images > kMaxImagesPerRequest)
    api_fail(OG_ERR_INVALID_ARGUMENT, "'images' holds ", q.n_images, " images; at most ", kMaxImagesPerRequest);
  std::vector<std::vector<size_t>> by_message(r.messages.size());
  for (size_t k = 0; k < q.n_images; ++k) {
    const og_chat_image& im = q.images[k];
    const std::string at = "images[" + std::to_string(k) + "]";
    if (im.message >= r.messages.size())
      api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, ".message' is ", im.message, ": the request has ", r.messages.size(),
               " messages");
    const ChatRequestMessage& m = r.messages[im.message];
    if (m.role != "user")
      api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, ".message' is ", im.message, ", a ", m.role,
               " message: images go in user messages");
    if (splits_character(m.content.value_or(""), im.offset))
      api_fail(OG_ERR_INVALID_ARGUMENT, "'", at, ".offset' is ", im.offset, ": inside a UTF-8 character");
    encode_or_fail(session, bytes_of(im, k), at);  // a bad image is refused before anything changes
    by_message[im.message].push_back(k);
  }
  for (size_t i = 0; i < r.messages.size(); ++i) {
    if (by_message[i].empty()) continue;
    ChatRequestMessage& m = r.messages[i];
    const std::string text = m.content.value_or("");
    std::vector<size_t>& ks = by_message[i];
    auto place = [&](size_t k) { return std::min(q.images[k].offset, text.size()); };
    std::stable_sort(ks.begin(), ks.end(), [&](size_t a, size_t b) { return place(a) < place(b); });
    size_t done = 0;
    for (size_t k : ks) {
      if (place(k) > done) m.parts.push_back(ChatContentPart::of_text(text.substr(done, place(k) - done)));
      done = place(k);
      m.parts.push_back(ChatContentPart::of_image(bytes_of(q.images[k], k)));
    }
    if (done < text.size()) m.parts.push_back(ChatContentPart::of_text(text.substr(done)));
    m.content.reset();
  }
}

void copy_history(const Session& from, Session& to) {
  const std::vector<int32_t>& h = from.history();
  if (h.empty()) return;
  const std::span<const int32_t> ids(h);
  int64_t at = 0;
  for (const SessionImage& im : from.images()) {
    to.append_pending(ids.subspan(at, im.span.begin - at));
    const int64_t width = static_cast<int64_t>(im.embeddings.size()) / im.span.length;
    to.append_image(im.embeddings, width, im.span.hash, h[im.span.begin], im.bidirectional);
    at = im.span.end();
  }
  to.append_pending(ids.subspan(at));
  to.prefill({});
}

void append_image_held(og_session* session, const uint8_t* data, size_t size) {
  no_stream(session);
  og_chat_image im{0, 0, data, size};
  const std::string bytes = bytes_of(im, 0);
  const TowerImage image = encode_or_fail(session, bytes, "image");
  const VisionModel& v = *vision_of(session);
  const Tokenizer& tok = session->core->tok();
  const ImageMarkup mk = image_markup_of(v, tok);
  // The marker's expansion around the image, as a template's marker becomes.
  ImagePrompt p;
  p.tokens = tok.encode(mk.open, false, true);
  const int64_t at = static_cast<int64_t>(p.tokens.size());
  p.tokens.insert(p.tokens.end(), static_cast<size_t>(image.n_rows()), mk.placeholder);
  const std::vector<int32_t> close = tok.encode(mk.close, false, true);
  p.tokens.insert(p.tokens.end(), close.begin(), close.end());
  p.placeholder = mk.placeholder;
  p.bidirectional = v.bidirectional;
  p.images.push_back({at, image});
  Session& s = *session->s;
  if (!s.fits(static_cast<int64_t>(p.tokens.size())))
    api_fail(OG_ERR_CAPACITY, "the image takes ", p.tokens.size(), " positions and the session has ",
             s.capacity() - s.position(), " left (raise kv_max_capacity)");
  const int64_t mark = s.position();
  append_image_prompt(s, p, 0, session->core->run.loaded.model->config().d_model);
  session->undo_marks.push_back(mark);
}

}  // namespace og::capi

using namespace og;
using namespace og::capi;

extern "C" og_status og_session_append_image(og_session* session, const uint8_t* data, size_t size) {
  return guarded([&] {
    SessionUse use(session);
    append_image_held(session, data, size);
  });
}
