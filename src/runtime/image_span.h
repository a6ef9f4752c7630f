// An image's place in a sequence's history (docs/vision.md, "The seam"):
// positions [begin, begin + length) hold its soft tokens (rows that carry
// embeddings, model.h BatchRow::embedding), named by `hash`, a 256-bit hash
// of the image's pixels and preprocessing that the caller computes. The
// token ids at those positions are placeholders: what makes two histories
// equal there is the image's hash, never the ids. A history's images are
// sorted by begin and never overlap.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/sha256.h"

namespace og {

struct ImageSpan {
  int64_t begin = 0;
  int64_t length = 0;
  Sha256Digest hash{};
  int64_t end() const { return begin + length; }
  bool operator==(const ImageSpan&) const = default;
};

// og::Error (prefixed by `what`) unless every span has length >= 1, lies in
// positions [0, n), and the spans are sorted and disjoint.
void check_image_spans(std::span<const ImageSpan> images, int64_t n, const char* what);

// The image whose span holds `p` past its first position (begin < p < end):
// a cut at p would split it. nullptr when none does.
const ImageSpan* image_split_at(std::span<const ImageSpan> images, int64_t p);

// The longest prefix, at most k positions, over which two histories whose
// ids agree on [0, k) are the same: an image that starts before the cut must
// be in both with the same place, length and hash and end by the cut, else
// the prefix ends where that image begins.
int64_t common_image_prefix(int64_t k, std::span<const ImageSpan> a, std::span<const ImageSpan> b);

// The images that start before n, for a history cut to n positions (a span
// that n splits included: callers cut at image boundaries).
std::vector<ImageSpan> images_before(std::span<const ImageSpan> images, int64_t n);

// The extra keys of the block holding positions [b, e) (the prefix cache's
// block hash, as vLLM's multimodal extra keys): the hex hash of each image
// that overlaps it, in order; appended to *out.
void image_block_keys(std::span<const ImageSpan> images, int64_t b, int64_t e, std::vector<std::string>* out);

}  // namespace og
