// Images into a session through a vision tower (image_input.h).
#include "runtime/image_input.h"

#include <string>

#include "base/error.h"

namespace og {

TowerImage encode_image(const VisionTower& tower, std::span<const float> pixels) {
  TowerImage im;
  im.rows = tower.encode(pixels);  // checks the pixel count first
  im.width = tower.config().text_hidden;
  Sha256 h;
  const std::string tag = "offgraph image v1 " + std::to_string(tower.config().image_size) + "\n";
  h.update(tag);
  h.update(pixels.data(), pixels.size() * sizeof(float));
  im.hash = h.finish();
  return im;
}

void append_tower_image(Session& s, const TowerImage& image, int64_t d_model, int32_t placeholder,
                        bool bidirectional) {
  OG_CHECK(image.width == d_model, "image: the vision tower's rows are ", image.width,
           " wide but the text model's hidden size is ", d_model, " (a tower of another model?)");
  s.append_image(image.rows, image.width, image.hash, placeholder, bidirectional);
}

namespace {

// Each marker in template text expanded, the i-th into rows[i] placeholders;
// returns how many markers there were (those past rows.size() are left).
size_t expand_markers(std::vector<ChatSegment>& segs, const ImageMarkup& m, std::span<const int64_t> rows) {
  size_t n = 0;
  for (ChatSegment& seg : segs) {
    if (!seg.is_template) continue;
    std::string out;
    size_t at = 0;
    for (size_t hit; (hit = seg.text.find(m.marker, at)) != std::string::npos; at = hit + m.marker.size()) {
      out.append(seg.text, at, hit - at);
      if (n < rows.size()) {
        out += m.open;
        for (int64_t i = 0; i < rows[n]; ++i) out += m.placeholder_text;
        out += m.close;
      } else {
        out += m.marker;
      }
      ++n;
    }
    if (at == 0) continue;
    out.append(seg.text, at, std::string::npos);
    seg.text = std::move(out);
  }
  return n;
}

}  // namespace

ImageRuns encode_with_images(const Tokenizer& tok, std::span<const ChatSegment> segments, const ImageMarkup& markup,
                             std::span<const int64_t> rows, bool first) {
  OG_CHECK(!markup.marker.empty() && markup.placeholder >= 0,
           "image: this model's image tokens are not known (its image marker and placeholder)");
  for (int64_t r : rows) OG_CHECK(r > 0, "image: an image of ", r, " rows");
  std::vector<ChatSegment> segs(segments.begin(), segments.end());
  const size_t markers = expand_markers(segs, markup, rows);
  OG_CHECK(markers == rows.size(), "image: the chat template wrote ", markers, " image marker",
           markers == 1 ? "" : "s", " ('", markup.marker, "') for ", rows.size(), " image",
           rows.size() == 1 ? "" : "s", ": it does not place images given as content parts (use a template that does)");
  ImageRuns r;
  r.tokens = encode_chat(tok, segs, first);
  const int64_t n = static_cast<int64_t>(r.tokens.size());
  size_t k = 0;  // the next image
  for (int64_t i = 0; i < n;) {
    if (r.tokens[i] != markup.placeholder) {
      ++i;
      continue;
    }
    int64_t e = i;
    while (e < n && r.tokens[e] == markup.placeholder) ++e;
    // Images with nothing between them make one run: it splits by their rows.
    while (i < e && k < rows.size() && i + rows[k] <= e) {
      r.starts.push_back(i);
      i += rows[k++];
    }
    OG_CHECK(i == e, "image: the prompt holds a run of '", markup.placeholder_text,
             "' tokens that is not the images' (the template writes them itself?)");
  }
  OG_CHECK(k == rows.size(), "image: the prompt holds ", k, " image runs for ", rows.size(), " images");
  return r;
}

std::vector<ImageSpan> ImagePrompt::spans() const {
  std::vector<ImageSpan> out;
  for (const PromptImage& im : images) out.push_back({im.position, im.image.n_rows(), im.image.hash});
  return out;
}

void check_image_prompt(const ImagePrompt& p, int64_t d_model) {
  const int64_t n = static_cast<int64_t>(p.tokens.size());
  check_image_spans(p.spans(), n, "image prompt");
  for (const PromptImage& im : p.images) {
    OG_CHECK(im.image.width == d_model, "image: the vision tower's rows are ", im.image.width,
             " wide but the text model's hidden size is ", d_model, " (a tower of another model?)");
    OG_CHECK(static_cast<int64_t>(im.image.rows.size()) == im.image.n_rows() * d_model,
             "image: the rows are not a whole number of width ", d_model);
    for (int64_t q = im.position; q < im.position + im.image.n_rows(); ++q)
      OG_CHECK(p.tokens[q] == p.placeholder, "image: position ", q, " of the image at ", im.position,
               " does not hold the placeholder id ", p.placeholder);
  }
}

void append_image_prompt(Session& s, const ImagePrompt& p, int64_t from, int64_t d_model) {
  check_image_prompt(p, d_model);
  const int64_t n = static_cast<int64_t>(p.tokens.size());
  OG_CHECK(from >= 0 && from <= n, "image prompt: start ", from, " outside [0, ", n, "]");
  const std::vector<ImageSpan> spans = p.spans();
  if (const ImageSpan* cut = image_split_at(spans, from))
    fail("image prompt: start ", from, " is inside the image at [", cut->begin, ", ", cut->end(), ")");
  OG_CHECK(s.fits(n - from), "a prompt of ", n - from, " tokens does not fit: ", s.position(), "/", s.capacity(),
           " positions used");
  const int64_t old_len = s.position();
  try {
    int64_t at = from;
    for (const PromptImage& im : p.images) {
      if (im.position < from) continue;
      s.append_pending(std::span<const int32_t>(p.tokens).subspan(at, im.position - at));
      append_tower_image(s, im.image, d_model, p.placeholder, p.bidirectional);
      at = im.position + im.image.n_rows();
    }
    s.append_pending(std::span<const int32_t>(p.tokens).subspan(at));
  } catch (...) {
    s.rewind_to(old_len);
    throw;
  }
}

}  // namespace og
