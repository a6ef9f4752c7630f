// Machine probes for the benchmark (ops.h): the memory read bandwidth and the
// peak multiply-add rate, both measured on the kernels' own thread pool so
// they describe the threads a benchmark runs on.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"

namespace og::kernels {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The scalar twin of the x86 probes: four independent f32 multiply-adds (the
// compiler may vectorise it; it only has to be a register loop).
int64_t scalar_madd_loop(bool, int64_t iters) {
  float a[16];
  for (int i = 0; i < 16; ++i) a[i] = static_cast<float>(i);
  for (int64_t it = 0; it < iters; ++it)
    for (int i = 0; i < 16; ++i) a[i] = a[i] * 0.999f + 1e-3f;
  volatile float sink = a[0] + a[15];
  (void)sink;
  return iters * 16;
}

// The scalar twin of the x86 read probes: the 64-bit words summed into four
// independent accumulators.
uint64_t scalar_read_sum(const void* buf, int64_t bytes) {
  const int64_t words = bytes / 8;
  const auto* p = static_cast<const uint8_t*>(buf);
  uint64_t s[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    s[i % 4] += w;
  }
  return s[0] + s[1] + s[2] + s[3];
}

// The active table's read probe, or its scalar twin.
auto active_read_sum() {
  const KernelTable& k = active_table();
  return k.read_sum ? k.read_sum : &scalar_read_sum;
}

}  // namespace

uint64_t read_sum(const void* buf, int64_t bytes) {
  OG_CHECK(buf && bytes >= 0 && bytes % 8 == 0, "read_sum: needs a buffer of whole 64-bit words");
  return active_read_sum()(buf, bytes);
}

double read_bandwidth(const void* buf, int64_t bytes, int passes) {
  OG_CHECK(buf && bytes >= 64 && passes >= 1, "read_bandwidth: needs a buffer of at least 64 bytes and a pass");
  const int64_t words = bytes / 8;
  const int threads = thread_pool().size();
  const auto sum = active_read_sum();
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8, 0);  // a line per thread
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    thread_pool().parallel_for(threads, [&](int64_t t0i, int64_t t1i) {
      for (int64_t t = t0i; t < t1i; ++t) {
        const int64_t b = words * t / threads, e = words * (t + 1) / threads;
        sums[static_cast<size_t>(t) * 8] += sum(static_cast<const uint8_t*>(buf) + 8 * b, 8 * (e - b));
      }
    });
    best = std::max(best, static_cast<double>(words * 8) / seconds_since(t0) / 1e9);
  }
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;
  return best;
}

double madd_peak(bool int8, double seconds) {
  const KernelTable& k = active_table();
  auto loop = k.madd_loop ? k.madd_loop : &scalar_madd_loop;
  // Calibrate the rounds to ~1/20 of the time on this thread, then run them
  // on every thread at once.
  int64_t iters = 1 << 12;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    loop(int8, iters);
    if (seconds_since(t0) > seconds / 20 || iters > (int64_t{1} << 40)) break;
    iters *= 2;
  }
  iters *= 20;
  const int threads = thread_pool().size();
  std::atomic<int64_t> done{0};
  const auto t0 = std::chrono::steady_clock::now();
  thread_pool().parallel_for(threads, [&](int64_t a, int64_t b) {
    for (int64_t t = a; t < b; ++t) done += loop(int8, iters);
  });
  return static_cast<double>(done.load()) / seconds_since(t0);
}

}  // namespace og::kernels
