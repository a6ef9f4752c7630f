// The scheduler's handling of a request's images (scheduler_images.h).
#include "runtime/scheduler_images.h"

#include <algorithm>

#include "runtime/image_input.h"

namespace og::sched_images {

namespace {

std::string image_name(size_t i) { return "image " + std::to_string(i); }

}  // namespace

std::string check(const RequestOptions& r, int64_t max_write, int64_t width) {
  if (r.images.empty()) return "";
  if (r.prompt_logprobs) return "prompt logprobs are not computed for a prompt with images";
  const int64_t n = static_cast<int64_t>(r.prompt.size());
  int64_t prev_end = 0;
  for (size_t i = 0; i < r.images.size(); ++i) {
    const RequestImage& im = r.images[i];
    if (!im.image || im.image->width < 1 || im.image->rows.empty() ||
        static_cast<int64_t>(im.image->rows.size()) % im.image->width != 0)
      return image_name(i) + " has no rows of a known width";
    if (width > 0 && im.image->width != width)
      return image_name(i) + "'s rows are " + std::to_string(im.image->width) + " wide, but the model's are " +
             std::to_string(width);
    const int64_t rows = im.image->n_rows();
    if (im.begin < prev_end || im.begin > n - rows)
      return image_name(i) + " at positions [" + std::to_string(im.begin) + ", " + std::to_string(im.begin + rows) +
             ") overlaps another or is not inside the prompt of " + std::to_string(n) + " tokens";
    if (rows > max_write)
      return image_name(i) + " of " + std::to_string(rows) + " positions is longer than one step may write (" +
             std::to_string(max_write) + ", the cache's max_write): an image is forwarded whole";
    for (int64_t p = im.begin; p < im.begin + rows; ++p)
      if (r.prompt[static_cast<size_t>(p)] != im.placeholder)
        return image_name(i) + "'s position " + std::to_string(p) + " holds token " +
               std::to_string(r.prompt[static_cast<size_t>(p)]) + ", not its placeholder " +
               std::to_string(im.placeholder);
    prev_end = im.begin + rows;
  }
  return "";
}

std::vector<ImageSpan> spans(const RequestOptions& r) {
  std::vector<ImageSpan> out;
  out.reserve(r.images.size());
  for (const RequestImage& im : r.images) out.push_back(ImageSpan{im.begin, im.image->n_rows(), im.image->hash});
  return out;
}

std::vector<SessionImage> head_images(const RequestOptions& r, int64_t head) {
  std::vector<SessionImage> out;
  for (const RequestImage& im : r.images) {
    if (im.begin >= head) break;
    SessionImage s;
    s.span = ImageSpan{im.begin, im.image->n_rows(), im.image->hash};
    s.embeddings = im.image->rows;
    s.bidirectional = im.bidirectional;
    out.push_back(std::move(s));
  }
  return out;
}

int64_t append_pending(Session& s, const RequestOptions& r, int64_t head) {
  int64_t at = head;
  const std::span<const int32_t> prompt(r.prompt);
  for (const RequestImage& im : r.images) {
    if (im.begin < head) continue;
    s.append_pending(prompt.subspan(static_cast<size_t>(at), static_cast<size_t>(im.begin - at)));
    s.append_image(im.image->rows, im.image->width, im.image->hash, im.placeholder, im.bidirectional);
    at = im.begin + im.image->n_rows();
  }
  return at;
}

int64_t image_rows_at(const RequestOptions& r, int64_t pos) {
  for (const RequestImage& im : r.images)
    if (im.begin == pos) return im.image->n_rows();
  return 0;
}

void cut_draft(Draft& d, const RequestOptions& r) {
  if (r.images.empty()) return;
  auto is_placeholder = [&r](int32_t id) {
    return std::any_of(r.images.begin(), r.images.end(), [id](const RequestImage& im) { return im.placeholder == id; });
  };
  const auto cut = std::find_if(d.tokens.begin(), d.tokens.end(), is_placeholder);
  const size_t keep = static_cast<size_t>(cut - d.tokens.begin());
  d.tokens.resize(keep);
  if (d.q.size() > keep) d.q.resize(keep);
}

}  // namespace og::sched_images
