// Image spans of a history: validation, cuts, common prefixes and the block
// hash's extra keys.
#include "runtime/image_span.h"

#include <algorithm>

#include "base/error.h"

namespace og {

void check_image_spans(std::span<const ImageSpan> images, int64_t n, const char* what) {
  int64_t prev_end = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const ImageSpan& s = images[i];
    OG_CHECK(s.length >= 1, what, ": image ", i, " has length ", s.length, " (at least 1)");
    OG_CHECK(s.begin >= prev_end, what, ": image ", i, " at position ", s.begin,
             " overlaps or precedes the image before it (ends at ", prev_end, ")");
    OG_CHECK(s.end() <= n, what, ": image ", i, " spans positions [", s.begin, ", ", s.end(),
             ") past the ", n, " positions of the sequence");
    prev_end = s.end();
  }
}

const ImageSpan* image_split_at(std::span<const ImageSpan> images, int64_t p) {
  for (const ImageSpan& s : images)
    if (s.begin < p && p < s.end()) return &s;
  return nullptr;
}

namespace {

// Whether `s` of one history is matched in `other` within the first k positions.
bool matched(const ImageSpan& s, std::span<const ImageSpan> other, int64_t k) {
  if (s.end() > k) return false;
  return std::find(other.begin(), other.end(), s) != other.end();
}

}  // namespace

int64_t common_image_prefix(int64_t k, std::span<const ImageSpan> a, std::span<const ImageSpan> b) {
  int64_t cut = k;
  for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
    for (const ImageSpan& s : x) {
      if (s.begin >= cut) break;  // sorted: the rest start later
      if (!matched(s, y, k)) cut = s.begin;
    }
  return cut;
}

std::vector<ImageSpan> images_before(std::span<const ImageSpan> images, int64_t n) {
  std::vector<ImageSpan> out;
  for (const ImageSpan& s : images)
    if (s.begin < n) out.push_back(s);
  return out;
}

void image_block_keys(std::span<const ImageSpan> images, int64_t b, int64_t e, std::vector<std::string>* out) {
  for (const ImageSpan& s : images)
    if (s.begin < e && s.end() > b) out->push_back(to_hex(s.hash));
}

}  // namespace og
