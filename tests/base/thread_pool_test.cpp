#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace og
