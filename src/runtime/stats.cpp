// Process memory figures from /proc/self/status.
#include "runtime/stats.h"

#include <fstream>
#include <sstream>
#include <string>

namespace og {

namespace {

int64_t status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    std::istringstream is(line.substr(prefix.size()));
    int64_t kib = 0;
    is >> kib;
    return kib * 1024;
  }
  return 0;
}

}  // namespace

int64_t peak_rss_bytes() { return status_kib("VmHWM"); }
int64_t current_rss_bytes() { return status_kib("VmRSS"); }

}  // namespace og
