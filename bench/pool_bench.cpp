// Thread pool dispatch cost: microseconds per parallel_for round trip in
// which every thread must take part but does no work: the job has one chunk
// per thread and each chunk waits until all of them have started (a
// barrier), so what is timed is publishing the job, every worker noticing
// it and joining, and the caller waiting for them to finish. (A job of empty
// chunks would time nothing: the caller takes them all before a worker
// wakes.)
// - hot: back-to-back calls (decode's ~115 matmul dispatches per token look
//   like this: the workers are still spinning from the previous call);
// - after a gap of G µs: each call follows G µs of the caller working alone
//   (the workers spin, yield, or have fallen asleep on the condition variable
//   when G exceeds the pool's spin time, 2 ms by default);
// - asleep: spin time 0, so every call wakes the workers through the
//   condition variable (what a call costs with no spinning at all).
// Prints the median and the 90th percentile over many calls.
// Usage: bench_pool_bench [--threads 2,4] [--calls N]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/flags.h"
#include "base/thread_pool.h"

using namespace og;

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// Keeps the calling thread busy for `us` microseconds without touching memory.
void busy_for(double us) {
  const Clock::time_point t0 = Clock::now();
  while (us_since(t0) < us) {
  }
}

struct Stats {
  double median, p90;
};

Stats time_calls(ThreadPool& pool, int calls, double gap_us) {
  std::vector<double> t;
  t.reserve(static_cast<size_t>(calls));
  const int64_t n = pool.size();
  std::atomic<int64_t> arrived{0};
  for (int i = 0; i < calls + 10; ++i) {  // the first 10 warm up
    if (gap_us > 0) busy_for(gap_us);
    arrived.store(0);
    const Clock::time_point t0 = Clock::now();
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      arrived.fetch_add(e - b);
      while (arrived.load() < n) {
      }
    });
    if (i >= 10) t.push_back(us_since(t0));
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t[t.size() * 9 / 10]};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> thread_counts = {2};
  int64_t calls_flag = 20000;
  og::Flags fl("", "[--threads N,N,...] [--calls N]", "bench_pool_bench");
  fl.add_int_list("threads", &thread_counts, 1, 1024, "pool sizes");
  fl.add_int("calls", &calls_flag, 10, 1 << 30, "calls timed in the hot case");
  try {
    if (!fl.parse(og::Args(argv, argv + argc))) {
      std::fputs(fl.help().c_str(), stdout);
      return 0;
    }
  } catch (const og::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  const int calls = static_cast<int>(calls_flag);
  std::printf("%-7s %-22s %10s %10s %8s\n", "threads", "case", "median us", "p90 us", "sleeps");
  for (int64_t threads_flag : thread_counts) {
    const int threads = static_cast<int>(threads_flag);
    ThreadPool pool(threads);
    struct Case {
      const char* name;
      double gap_us;
      int64_t spin_us;
      int calls;
    };
    const Case cases[] = {{"hot", 0, 2000, calls},
                          {"after 20 us", 20, 2000, calls / 4},
                          {"after 500 us", 500, 2000, calls / 100},
                          {"after 5 ms (asleep)", 5000, 2000, calls / 500},
                          {"spin 0 (always asleep)", 0, 0, calls / 10}};
    for (const Case& c : cases) {
      pool.set_spin_us(c.spin_us);
      const uint64_t s0 = pool.sleeps();
      const Stats s = time_calls(pool, std::max(10, c.calls), c.gap_us);
      std::printf("%-7d %-22s %10.2f %10.2f %8llu\n", threads, c.name, s.median, s.p90,
                  static_cast<unsigned long long>(pool.sleeps() - s0));
      std::fflush(stdout);
    }
  }
  return 0;
}
