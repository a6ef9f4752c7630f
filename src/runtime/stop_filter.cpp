// StopFilter: stop-string matching over streamed text with hold-back.
#include "runtime/stop_filter.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace og {

StopFilter::StopFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const auto& s : stops_) OG_CHECK(!s.empty(), "stop strings must not be empty");
}

void StopFilter::reset() {
  held_.clear();
  matched_ = -1;
}

const std::string& StopFilter::matched_string() const {
  OG_CHECK(matched_ >= 0, "StopFilter: no stop string matched");
  return stops_[matched_];
}

std::string StopFilter::push(std::string_view text) {
  if (matched()) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  // The earliest match wins (then the longest at that offset).
  size_t best = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t at = held_.find(stops_[i]);
    if (at == std::string::npos) continue;
    if (at < best || (at == best && stops_[i].size() > stops_[matched_].size())) {
      best = at;
      matched_ = static_cast<int>(i);
    }
  }
  if (matched()) {
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold the longest suffix of held_ that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopFilter::flush() {
  if (matched()) return {};
  return std::exchange(held_, {});
}

}  // namespace og
