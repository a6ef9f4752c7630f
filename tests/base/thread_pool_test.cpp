#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

namespace og {

// The same contract with workers that sleep at once (condition-variable path)
// and with workers that only spin.
TEST(ThreadPool, CoversRangeSleepingAndSpinningWorkers) {
  for (int64_t spin : {int64_t{0}, int64_t{50}, int64_t{1000000}}) {
    ThreadPool pool(3);
    pool.set_spin_us(spin);
    for (int rep = 0; rep < 50; ++rep)
      for (int64_t n : {2, 3, 13, 100}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i]++;
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "spin=" << spin << " n=" << n << " i=" << i;
      }
  }
}

TEST(ThreadPool, SpinningWorkersDoNotSleepBetweenJobs) {
  ThreadPool pool(2);
  pool.set_spin_us(int64_t{30} * 1000 * 1000);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(4, [&](int64_t b, int64_t e) { sum += e - b; });
  // The worker may have slept before the first job; from now on it spins.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const uint64_t before = pool.sleeps();
  for (int r = 0; r < 300; ++r) pool.parallel_for(4, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(pool.sleeps(), before);
  EXPECT_EQ(sum.load(), 301 * 4);
}

TEST(ThreadPool, ShortSpinThenSleep) {
  ThreadPool pool(2);
  pool.set_spin_us(100);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(4, [&](int64_t b, int64_t e) { sum += e - b; });
  // Idle longer than the spin: asleep. On a busy machine the worker may not
  // run for a while, so wait for it (bounded) instead of for a fixed 50 ms.
  for (int i = 0; i < 500 && pool.sleeps() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(pool.sleeps(), 1u);
  pool.parallel_for(4, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 8);
}

// Dynamic chunks: while one thread is stuck in a slow chunk the other takes
// the rest (static halves would leave half the range to the stuck thread).
TEST(ThreadPool, SlowChunkDoesNotHoldTheRest) {
  ThreadPool pool(2);
  pool.set_spin_us(int64_t{10} * 1000 * 1000);
  const int64_t n = 64;
  std::vector<std::thread::id> owner(n);
  for (int attempt = 0; attempt < 5; ++attempt) {
    pool.parallel_for(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) owner[i] = std::this_thread::get_id();
      if (b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    });
    int64_t by_slow = 0;
    for (int64_t i = 0; i < n; ++i) by_slow += owner[i] == owner[0];
    if (by_slow == n) continue;  // the other thread never got a chunk (machine busy): try again
    EXPECT_LT(by_slow, n / 2);
    return;
  }
  ADD_FAILURE() << "the second thread never took part in 5 jobs";
}

TEST(ThreadPool, ErrorsFromManyChunksRethrownOnce) {
  ThreadPool pool(3);
  pool.set_spin_us(0);
  std::atomic<int64_t> ran{0};
  EXPECT_THROW(pool.parallel_for(100, [&](int64_t b, int64_t e) {
    ran += e - b;
    fail("chunk ", b);
  }), Error);
  EXPECT_EQ(ran.load(), 100);  // the other chunks still ran
  pool.parallel_for(10, [&](int64_t b, int64_t e) { ran += e - b; });
  EXPECT_EQ(ran.load(), 110);
}

}  // namespace og
