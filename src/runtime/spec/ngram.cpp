// Prompt lookup: a backwards scan for the latest earlier occurrence of the
// sequence's suffix (O(length × n) per call, negligible beside a forward).
#include "runtime/spec/ngram.h"

#include <algorithm>

#include "base/error.h"

namespace og {

NgramProposer::NgramProposer(int ngram_max, int ngram_min) : ngram_max_(ngram_max), ngram_min_(ngram_min) {
  OG_CHECK(ngram_min >= 1 && ngram_min <= ngram_max, "prompt lookup: the n-gram sizes must satisfy 1 <= min <= max (got ",
           ngram_min, " and ", ngram_max, ")");
}

Draft NgramProposer::propose(std::span<const int32_t> history, int64_t max_tokens) {
  Draft d;
  const int64_t len = static_cast<int64_t>(history.size());
  if (max_tokens < 1) return d;
  for (int64_t n = std::min<int64_t>(ngram_max_, len - 1); n >= ngram_min_; --n) {
    const auto suffix = history.subspan(static_cast<size_t>(len - n));
    // An occurrence starting at j must be followed by at least one token before the suffix itself.
    for (int64_t j = len - n - 1; j >= 0; --j) {
      if (!std::equal(suffix.begin(), suffix.end(), history.begin() + j)) continue;
      const int64_t from = j + n, to = std::min(len, from + max_tokens);
      d.tokens.assign(history.begin() + from, history.begin() + to);
      return d;
    }
  }
  return d;
}

}  // namespace og
