// The reports of `offgraph batch` on stderr: one line per generation as it
// finishes, and the run's summary (steps by kind, rows per step, aggregate
// decode speed, concurrency, prefix cache, cache memory), as text or as one
// JSON object (--stats json).
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
  void finish(const SchedulerSnapshot& s);
  bool all_ok() const { return failed_ == 0; }  // no generation refused or failed

 private:
  bool json_;
  double load_s_;
  Timer wall_;
  std::map<int64_t, nlohmann::json> generations_;  // by generation index
  int64_t failed_ = 0;
};

}  // namespace og::app
