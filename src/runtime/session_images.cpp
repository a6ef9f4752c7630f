// Session: images in the history (docs/vision.md, "The seam"). An image is
// appended pending, forwarded whole in one step (its rows carry embeddings,
// and a bidirectional image's rows one span), kept or dropped whole by
// rewinds, and refilled from its kept embeddings when a ring lost it.
#include <algorithm>

#include "base/error.h"
#include "runtime/session.h"

namespace og {

std::vector<ImageSpan> Session::image_spans() const {
  std::vector<ImageSpan> out;
  out.reserve(images_.size());
  for (const SessionImage& im : images_) out.push_back(im.span);
  return out;
}

void Session::append_image(std::span<const float> embeddings, int64_t width, const Sha256Digest& hash,
                           int32_t placeholder, bool bidirectional) {
  OG_CHECK(!turn_, "cannot append an image during a turn");
  const int64_t size = static_cast<int64_t>(embeddings.size());
  OG_CHECK(width >= 1 && size >= width && size % width == 0, "an image's embeddings (", size,
           " values) are not whole rows of width ", width);
  const int64_t n = size / width;
  const int64_t max_write = cache_->policy().max_write;
  OG_CHECK(n <= max_write, "an image of ", n, " positions is longer than one step may write (max_write ",
           max_write, "): it is forwarded whole in one step");
  OG_CHECK(fits(n), "an image of ", n, " positions does not fit: ", position(), "/", capacity(),
           " positions used");
  SessionImage im;
  im.span = ImageSpan{position(), n, hash};
  im.embeddings.assign(embeddings.begin(), embeddings.end());
  im.bidirectional = bidirectional;
  history_.insert(history_.end(), static_cast<size_t>(n), placeholder);
  images_.push_back(std::move(im));
}

const SessionImage* Session::image_split_at(int64_t p) const {
  for (const SessionImage& im : images_)
    if (im.span.begin < p && p < im.span.end()) return &im;
  return nullptr;
}

void Session::drop_images_from(int64_t length) {
  while (!images_.empty() && images_.back().span.end() > length) images_.pop_back();
}

int64_t Session::push_rows(Batch& batch, int64_t from, int64_t n, bool want_logits) const {
  if (images_.empty()) {  // text only: the plain rows
    for (int64_t i = 0; i < n; ++i) batch.rows.push_back({history_[from + i], seq_, from + i, want_logits});
    return n;
  }
  if (const SessionImage* im = image_split_at(from + n); im != nullptr)
    n = im->span.begin > from ? im->span.begin - from : im->span.end() - from;
  auto next = std::find_if(images_.begin(), images_.end(), [&](const SessionImage& im) { return im.span.end() > from; });
  for (int64_t p = from; p < from + n; ++p) {
    BatchRow row{history_[p], seq_, p, want_logits};
    if (next != images_.end() && p >= next->span.end()) ++next;
    if (next != images_.end() && p >= next->span.begin) {
      const int64_t w = static_cast<int64_t>(next->embeddings.size()) / next->span.length;
      row.embedding = std::span(next->embeddings).subspan(static_cast<size_t>((p - next->span.begin) * w),
                                                          static_cast<size_t>(w));
      if (next->bidirectional) row.span_end = next->span.end();
    }
    batch.rows.push_back(row);
  }
  return n;
}

}  // namespace og
