// The disk tier's worker thread: a write returns before its file is written
// (held up by a slow writer, injected through the tier's before_write hook)
// and is written on another thread; a read finds a block still queued for
// writing; the queue's byte bound skips writes instead of waiting; a worker
// stuck in a write makes reads misses at once and does not hold up its
// destructor past the shutdown bound. Every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "base/timer.h"
#include "runtime/prefix_disk_worker.h"
#include "temp_dir.h"

namespace og {
namespace {

constexpr int kBlock = 4;

KvGeometry geometry() {
  KvGeometry g;
  g.caches = {{2, 8, 8, 0}};
  g.layer_cache = {0};
  g.layer_writes = {true};
  return g;
}

KvPolicy policy() {
  KvPolicy p;
  p.dtype = KvDType::F16;
  return p;
}

DiskBlockRef block(int i) {
  DiskBlockRef b;
  b.hash[0] = static_cast<uint8_t>(i), b.hash[31] = 0x5a;
  b.tokens = {i, i, i, i};
  return b;
}

std::vector<uint8_t> payload(const PrefixDiskWorker& w, int i) {
  std::vector<uint8_t> p(static_cast<size_t>(w.payload_bytes()));
  for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<uint8_t>(j + 3 * i);
  return p;
}

// A writer held up until release(): the hook blocks the worker's writes (each
// for at most 10 s, so that a failing test still ends).
struct SlowWriter {
  std::shared_ptr<std::promise<void>> gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> open = gate->get_future().share();
  std::shared_ptr<std::atomic<int>> entered = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::thread::id> writer_thread = std::make_shared<std::thread::id>();
  std::function<void()> hook() {
    return [open = open, entered = entered, id = writer_thread] {
      *id = std::this_thread::get_id();
      entered->fetch_add(1);
      open.wait_for(std::chrono::seconds(10));
    };
  }
  void release() { gate->set_value(); }
  bool wait_entered(int n) const {
    for (Timer t; t.seconds() < 5;) {
      if (entered->load() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
};

PrefixDiskOptions options(const std::string& dir, const SlowWriter& w) {
  PrefixDiskOptions o;
  o.dir = dir;
  o.max_bytes = int64_t{1} << 24;
  o.model_fingerprint.fill(7);
  o.before_write = const_cast<SlowWriter&>(w).hook();
  return o;
}

TEST(PrefixDiskWorker, WritesOffTheCallingThread) {
  test::TempDir dir;
  SlowWriter slow;
  PrefixDiskWorker w(options(dir.path(), slow), geometry(), policy(), kBlock, false);
  Timer t;
  ASSERT_TRUE(w.write(block(1), payload(w, 1)));
  ASSERT_TRUE(w.write(block(2), payload(w, 2)));
  EXPECT_LT(t.seconds(), 1.0);  // the writer is held up for 10 s
  ASSERT_TRUE(slow.wait_entered(1));
  EXPECT_NE(*slow.writer_thread, std::this_thread::get_id());
  EXPECT_FALSE(w.drain(0.05));
  EXPECT_EQ(w.stats().writes, 0);
  // A read finds block 2, still queued, and block 1's file once written.
  std::shared_ptr<DiskRead> r = w.read(0, {block(2)});
  ASSERT_NE(r, nullptr);
  slow.release();
  ASSERT_TRUE(r->wait_for(5));
  std::vector<std::vector<uint8_t>> got = r->take();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], payload(w, 2));
  ASSERT_TRUE(w.drain(5));
  EXPECT_EQ(w.stats().writes, 2);
  // The written payloads' buffers are kept for the next exports.
  EXPECT_GE(w.take_buffer().capacity(), static_cast<size_t>(w.payload_bytes()));
  r = w.read(0, {block(1), block(2)});
  ASSERT_TRUE(r->wait_for(5));
  got = r->take();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], payload(w, 2));
}

TEST(PrefixDiskWorker, AReadStopsAtTheFirstMiss) {
  test::TempDir dir;
  SlowWriter slow;
  slow.release();
  PrefixDiskWorker w(options(dir.path(), slow), geometry(), policy(), kBlock, false);
  ASSERT_TRUE(w.write(block(1), payload(w, 1)));
  ASSERT_TRUE(w.write(block(3), payload(w, 3)));
  ASSERT_TRUE(w.drain(5));
  std::shared_ptr<DiskRead> r = w.read(4, {block(1), block(2), block(3)});
  ASSERT_TRUE(r->wait_for(5));
  EXPECT_EQ(r->first(), 4);
  EXPECT_EQ(r->take().size(), 1u);
}

TEST(PrefixDiskWorker, FullQueueSkipsInsteadOfWaiting) {
  test::TempDir dir;
  SlowWriter slow;
  std::string logged;
  PrefixDiskOptions o = options(dir.path(), slow);
  o.log = [&](const std::string& s) { logged = s; };
  o.max_pending_bytes = 0;  // set below: one payload and a half
  {
    PrefixDiskWorker probe(options(dir.path(), slow), geometry(), policy(), kBlock, false);
    o.max_pending_bytes = probe.payload_bytes() * 3 / 2;
  }
  PrefixDiskWorker w(o, geometry(), policy(), kBlock, false);
  ASSERT_TRUE(w.write(block(1), payload(w, 1)));  // held up in the writer, still counted
  Timer t;
  EXPECT_FALSE(w.write(block(2), payload(w, 2)));
  EXPECT_LT(t.seconds(), 1.0);
  EXPECT_EQ(w.stats().write_skips, 1);
  EXPECT_NE(logged.find("not written to disk"), std::string::npos) << logged;
  slow.release();
  ASSERT_TRUE(w.drain(5));
  EXPECT_TRUE(w.write(block(2), payload(w, 2)));  // room again
  ASSERT_TRUE(w.drain(5));
  EXPECT_EQ(w.stats().writes, 2);
}

TEST(PrefixDiskWorker, StuckWorkerMakesReadsMissesAndDoesNotHoldUpItsEnd) {
  test::TempDir dir;
  SlowWriter slow;  // released only after the worker is gone
  PrefixDiskOptions o = options(dir.path(), slow);
  o.read_wait_s = 0.1;
  o.shutdown_write_s = 0.2;
  // The thread left behind may log after this test's locals are gone: the sink is shared.
  auto logged = std::make_shared<std::string>();
  auto log_mu = std::make_shared<std::mutex>();
  o.log = [logged, log_mu](const std::string& s) {
    std::lock_guard<std::mutex> lk(*log_mu);
    *logged = s;
  };
  Timer t;
  {
    PrefixDiskWorker w(o, geometry(), policy(), kBlock, false);
    ASSERT_TRUE(w.write(block(1), payload(w, 1)));
    ASSERT_TRUE(w.write(block(2), payload(w, 2)));
    ASSERT_TRUE(slow.wait_entered(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    EXPECT_EQ(w.read(0, {block(1)}), nullptr);  // stuck past read_wait_s: a miss at once
  }
  EXPECT_LT(t.seconds(), 3.0);  // 0.2 s of drain, at most 1 s for the job in progress
  {
    std::lock_guard<std::mutex> lk(*log_mu);
    EXPECT_NE(logged->find("1 blocks not written"), std::string::npos) << *logged;
  }
  slow.release();  // the thread left behind finishes its write and ends; wait for it before the directory goes
  bool written = false;
  for (Timer w; !written && w.seconds() < 5; std::this_thread::sleep_for(std::chrono::milliseconds(5)))
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) written |= e.path().extension() == ".kvb";
  EXPECT_TRUE(written);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace
}  // namespace og
