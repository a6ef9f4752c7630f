// Resident memory with and without /proc: the status file's parsing, the
// getrusage fallback's unit (KiB on Linux: a figure 1024 times too large or
// small would fail), and the fallback taken when the file is missing, as on
// macOS.
#include "base/process_memory.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace og {
namespace {

std::string write_status(const std::string& text) {
  const std::string path = ::testing::TempDir() + "og_status_" + std::to_string(getpid());
  std::ofstream(path) << text;
  return path;
}

TEST(ProcessMemory, StatusFileFiguresInBytes) {
  const std::string p = write_status("Name:\ttest\nVmHWM:\t    2048 kB\nVmRSS:\t  1024 kB\n");
  EXPECT_EQ(proc_status_bytes(p.c_str(), "VmHWM"), 2048 * 1024);
  EXPECT_EQ(proc_status_bytes(p.c_str(), "VmRSS"), 1024 * 1024);
  EXPECT_EQ(proc_status_bytes(p.c_str(), "VmSwap"), -1);  // no such line
  EXPECT_EQ(current_rss_from(p.c_str()), 1024 * 1024);
  EXPECT_EQ(peak_rss_from(p.c_str()), 2048 * 1024);
  const std::string bad = write_status("VmHWM:\tlots\n");
  EXPECT_EQ(proc_status_bytes(bad.c_str(), "VmHWM"), -1);
  std::remove(p.c_str());
}

TEST(ProcessMemory, WithoutProcThePeakComesFromGetrusageAndTheCurrentIsUnknown) {
  const char* missing = "/nonexistent/offgraph/status";
  std::vector<char> touch(8 << 20, 1);  // some resident memory of our own
  const int64_t peak = peak_rss_from(missing);
  EXPECT_EQ(peak, rusage_peak_bytes());
  EXPECT_GE(peak, int64_t{8} << 20);
  EXPECT_EQ(current_rss_from(missing), -1);
  // Where /proc exists the two sources measure the same peak: a wrong unit
  // (bytes read as KiB, or the reverse) is off by 1024.
  const int64_t proc = proc_status_bytes(kProcSelfStatus, "VmHWM");
  if (proc > 0) {
    EXPECT_GT(peak, proc / 2);
    EXPECT_LT(peak, proc * 2);
  }
  EXPECT_EQ(touch[touch.size() - 1], 1);
}

}  // namespace
}  // namespace og
