// The reports of `offgraph batch`: one line per generation on stderr as it
// finishes, and the run's summary (steps by kind, rows per step, aggregate
// decode speed, concurrency, prefix cache, cache memory), as text lines on
// stderr or as one JSON object (--stats json, --stats-file).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>

#include "base/timer.h"
#include "runtime/scheduler.h"

namespace og::app {

class BatchReport {
 public:
  BatchReport(bool json, double load_s) : json_(json), load_s_(load_s) {}
  void generation(int64_t k, const RequestReport& r);
  // The summary: text lines on stderr (when diagnostics are on) unless json;
  // returns the JSON object (also when the text was printed, for --stats-file).
  std::string finish(const SchedulerSnapshot& s, const std::vector<std::string>& warnings);
  bool all_ok() const { return failed_ == 0; }  // no generation refused or failed

 private:
  bool json_;
  double load_s_;
  Timer wall_;
  std::map<int64_t, nlohmann::json> generations_;  // by generation index
  int64_t failed_ = 0;
};

}  // namespace og::app
