#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "base/error.h"

namespace og {

TEST(ThreadPool, CoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 5, 97, 1000}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, RethrowsWorkerError) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(10, [](int64_t b, int64_t) {
    if (b > 0) fail("boom");
  }), Error);
  // Still usable afterwards.
  std::atomic<int> sum{0};
  pool.parallel_for(10, [&](int64_t b, int64_t e) { sum += static_cast<int>(e - b); });
  EXPECT_EQ(sum.load(), 10);
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(10, [&](int64_t b2, int64_t e2) { sum += e2 - b2; });
  });
  EXPECT_EQ(sum.load(), 40);
}

TEST(ThreadPool, ConcurrentCallersTakeTurns) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 200; ++r) pool.parallel_for(7, [&](int64_t b, int64_t e) { sum += e - b; });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(sum.load(), 4 * 200 * 7);
}

}  // namespace og
