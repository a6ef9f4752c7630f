// Log-softmax of one logits row, the chosen token's value and the top-k.
#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace og {

TokenEvent token_event(std::span<const float> logits, int32_t id, bool logprobs, int top) {
  TokenEvent ev;
  ev.id = id;
  if ((!logprobs && top <= 0) || logits.empty()) return ev;
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  const double log_z = mx + std::log(sum);
  auto lp = [&](int32_t t) { return static_cast<float>(logits[t] - log_z); };
  ev.logprob = lp(id);
  if (top > 0) {
    const int k = std::min<int>(top, static_cast<int>(logits.size()));
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int i = 0; i < k; ++i) ev.top.push_back({ids[i], lp(ids[i])});
  }
  return ev;
}

}  // namespace og
