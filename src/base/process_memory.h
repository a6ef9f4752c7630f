// This process's resident memory, on any POSIX system: /proc/self/status
// where there is one (Linux: current and peak), else getrusage's peak
// (macOS, the BSDs); a figure no source gives is unknown (-1), and the
// runners' reports (runtime/stats.h) print 0 for it.
#pragma once

#include <cstdint>

namespace og {

// `key`'s figure ("VmHWM", "VmRSS": "<key>: <n> kB") in a /proc status file,
// in bytes; -1 when the file or the key is missing or unreadable.
int64_t proc_status_bytes(const char* path, const char* key);
// getrusage(RUSAGE_SELF)'s peak resident size in bytes (its unit is KiB on
// Linux and the BSDs, bytes on macOS); -1 when unavailable.
int64_t rusage_peak_bytes();
// Peak: `status_path`'s VmHWM, else getrusage's peak, else -1.
int64_t peak_rss_from(const char* status_path);
// Current: `status_path`'s VmRSS, else -1 (POSIX has no portable call for it).
int64_t current_rss_from(const char* status_path);

inline constexpr const char* kProcSelfStatus = "/proc/self/status";

}  // namespace og
