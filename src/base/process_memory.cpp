// Resident memory from /proc where present, getrusage otherwise (process_memory.h).
#include "base/process_memory.h"

#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>

namespace og {

int64_t proc_status_bytes(const char* path, const char* key) {
  std::ifstream in(path);
  if (!in) return -1;
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    std::istringstream is(line.substr(prefix.size()));
    int64_t kib = -1;
    std::string unit;
    if (!(is >> kib >> unit) || kib < 0 || unit != "kB") return -1;
    return kib * 1024;
  }
  return -1;
}

int64_t rusage_peak_bytes() {
  rusage ru{};
  if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss <= 0) return -1;
  // The unit is the one thing no feature test can tell: Darwin documents
  // bytes, every other system kilobytes.
#if defined(__APPLE__)
  return static_cast<int64_t>(ru.ru_maxrss);
#else
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
#endif
}

int64_t peak_rss_from(const char* status_path) {
  const int64_t proc = proc_status_bytes(status_path, "VmHWM");
  return proc >= 0 ? proc : rusage_peak_bytes();
}

int64_t current_rss_from(const char* status_path) { return proc_status_bytes(status_path, "VmRSS"); }

}  // namespace og
