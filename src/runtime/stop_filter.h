// StopFilter: watches streamed text for stop strings. Text that might be the
// start of a stop string is held back until it is known not to be; a matched
// stop string and everything after it are never emitted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace og {

class StopFilter {
 public:
  explicit StopFilter(std::vector<std::string> stops = {});

  // Adds text; returns what may be emitted now. After a match (matched()),
  // returns the text before the stop string, and everything later is dropped.
  std::string push(std::string_view text);
  // End of stream: returns what was held back (empty after a match).
  std::string flush();
  void reset();

  bool matched() const { return matched_ >= 0; }
  const std::string& matched_string() const;  // valid when matched()

 private:
  std::vector<std::string> stops_;
  std::string held_;
  int matched_ = -1;
};

}  // namespace og
