// The prefix cache's disk tier through the scheduler on a synthetic Llama:
// blocks evicted from memory (or every block, with persist) are written; a
// restarted scheduler over the same directory reads a prompt's blocks back,
// alone or after a shorter prefix held in memory, and its greedy output equals
// the output computed without any cache; a corrupt file is a miss with the
// same output; disk blocks are announced as "disk" events. Issue 50: a
// graceful shutdown writes what memory holds, so a restart finds it; an
// eviction's write happens off the stepping thread (steps go on while a slow
// writer holds it up); a FIFO in the directory is a miss and blocks nothing;
// the background thread admits a request once its blocks are read.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "base/timer.h"
#include "model/synth_fixture.h"
#include "runtime/scheduler.h"
#include "temp_dir.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

using namespace og::test;

constexpr int kBlock = 4;  // prefix-cache block: a 30-token prompt has 7 full blocks

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

Loaded load_llama() {
  Loaded l;
  l.model = Model::load(synth_gguf(synth::Family::kLlama));
  l.tok = Tokenizer::from_path(l.model->source_path());
  return l;
}

KvPolicy policy(int sequences) {
  KvPolicy p;
  p.max_capacity = 64;
  p.initial_capacity = 8;
  p.max_write = 8;
  p.max_sequences = sequences;
  p.dtype = KvDType::F16;
  return p;
}

// Greedy tokens with no cache reuse at all, as `offgraph run` computes them.
std::vector<int32_t> cold(const Loaded& l, const std::vector<int32_t>& prompt) {
  ModelEngine engine(*l.model);
  Session s(engine, make_kv_cache(KvKind::kSequence, l.model->kv_geometry(), policy(1)), *l.tok);
  Sampler sampler(SamplerConfig{});
  GenerateOptions o;
  o.max_new_tokens = 8;
  return s.generate(prompt, sampler, o, nullptr).tokens;
}

struct Replica {
  Replica(const Loaded& l, KvKind kind, const std::string& dir, bool persist,
          const std::function<void(SchedulerOptions&)>& tweak = {})
      : engine(*l.model) {
    SchedulerOptions o;
    o.max_decode_sequences = 1;
    o.step_tokens = 16;
    o.max_session_tokens = 64;
    o.prefix_cache_entries = 1;
    o.prefix_block_size = kBlock;
    o.prefix_disk.dir = dir;
    o.prefix_disk.max_bytes = int64_t{1} << 26;
    o.prefix_disk.persist = persist;
    o.kv_events = [this](std::vector<KvEvent>&& ev) {
      for (const KvEvent& e : ev)
        if (e.medium == std::string(kMediumDisk) && e.type == KvEvent::Type::kBlockStored) disk_stored += e.hashes.size();
    };
    if (tweak) tweak(o);
    sched = std::make_unique<Scheduler>(engine, *l.tok, make_kv_cache(kind, l.model->kv_geometry(), policy(2)), o);
  }
  // Submits without stepping; the report lands in *out.
  void submit(const std::vector<int32_t>& prompt, RequestReport* out, std::promise<void>* done = nullptr) {
    RequestOptions r;
    r.prompt = prompt;
    r.max_new_tokens = 8;
    RequestCallbacks cb;
    cb.on_finish = [out, done](const RequestReport& rep) {
      *out = rep;
      if (done) done->set_value();
    };
    sched->submit(std::move(r), std::move(cb));
  }
  RequestReport generate(const std::vector<int32_t>& prompt) {
    RequestOptions r;
    r.prompt = prompt;
    r.max_new_tokens = 8;
    RequestReport out;
    RequestCallbacks cb;
    cb.on_finish = [&](const RequestReport& rep) { out = rep; };
    sched->submit(std::move(r), std::move(cb));
    sched->run_until_idle();
    return out;
  }
  ModelEngine engine;
  size_t disk_stored = 0;  // before sched: its shutdown may still send events
  std::unique_ptr<Scheduler> sched;
};

std::vector<std::string> block_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".kvb") out.push_back(e.path().string());
  return out;
}

TEST(PrefixDiskScheduler, DiskHitsEqualOutputWithoutAnyCache) {
  const Loaded l = load_llama();
  const int32_t nv = l.model->n_vocab();
  const std::vector<int32_t> a = test_tokens(30, nv, 41);
  const std::vector<int32_t> other = test_tokens(12, nv, 42);
  std::vector<int32_t> shorter(a.begin(), a.begin() + 10);  // shares 10 tokens: 2 blocks and 2 tokens
  shorter.push_back(a[10] == 3 ? 4 : 3);
  const std::vector<int32_t> want = cold(l, a);
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    SCOPED_TRACE(kv_kind_name(kind));
    TempDir dir;
    {
      Replica r(l, kind, dir.path(), false);
      EXPECT_EQ(r.generate(a).tokens, want);
      EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 0);  // a is in memory only
      // Its capture evicts a's entry (a's prompt and the 7 reply tokens it
      // forwarded: 37 positions, 9 blocks), which go to disk.
      r.generate(other);
      EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 9);
      EXPECT_EQ(r.disk_stored, 9u);
      EXPECT_EQ(block_files(dir.path()).size(), 9u);
    }
    {
      // A restart: the prompt's 7 blocks (28 of the 29 positions a lookup may take) come from disk.
      Replica r(l, kind, dir.path(), false);
      const RequestReport rep = r.generate(a);
      EXPECT_EQ(rep.cached_tokens, 28);
      EXPECT_EQ(rep.tokens, want);
      const SchedulerSnapshot s = r.sched->snapshot();
      EXPECT_EQ(s.prefix_hits, 1);
      EXPECT_EQ(s.prefix_hit_tokens, 28);
      EXPECT_EQ(s.prefix_disk_hits, 1);
      EXPECT_EQ(s.prefix_disk_hit_tokens, 28);
    }
    {
      // Memory holds a shorter prefix (10 tokens: 2 blocks and part of a third); disk continues from block 2.
      Replica r(l, kind, dir.path(), false);
      EXPECT_EQ(r.generate(shorter).tokens, cold(l, shorter));
      const RequestReport rep = r.generate(a);
      EXPECT_EQ(rep.cached_tokens, 28);
      EXPECT_EQ(rep.tokens, want);
      // shorter took its 2 blocks from disk; a took 10 tokens from memory, its blocks 2..6 from disk.
      EXPECT_EQ(r.sched->snapshot().prefix_disk_hit_tokens, 8 + 20);
    }
    {
      // Every file corrupted: a miss (block 0's file is found bad and removed), the same output.
      const size_t files = block_files(dir.path()).size();
      for (const std::string& f : block_files(dir.path())) {
        std::fstream s(f, std::ios::in | std::ios::out | std::ios::binary);
        s.seekp(-5, std::ios::end);
        s.put('\x7f');
      }
      Replica r(l, kind, dir.path(), false);
      const RequestReport rep = r.generate(a);
      EXPECT_EQ(rep.cached_tokens, 0);
      EXPECT_EQ(rep.tokens, want);
      EXPECT_EQ(block_files(dir.path()).size(), files - 1);
    }
  }
}

TEST(PrefixDiskScheduler, PersistWritesEveryStoredBlock) {
  const Loaded l = load_llama();
  const std::vector<int32_t> a = test_tokens(30, l.model->n_vocab(), 43);
  TempDir dir;
  {
    Replica r(l, KvKind::kBatchedCell, dir.path(), true);
    r.generate(a);
    // At capture, nothing evicted: the prompt's 7 blocks, then the 2 its reply completes.
    EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 9);
  }
  Replica r(l, KvKind::kBatchedCell, dir.path(), true);
  const RequestReport rep = r.generate(a);
  EXPECT_EQ(rep.cached_tokens, 28);
  EXPECT_EQ(rep.tokens, cold(l, a));
}

TEST(PrefixDiskScheduler, GracefulShutdownWritesWhatMemoryHolds) {
  // Without --prefix-cache-persist, nothing was evicted: every block is only
  // in memory until the scheduler shuts down (a graceful exit), which writes it.
  const Loaded l = load_llama();
  const std::vector<int32_t> a = test_tokens(30, l.model->n_vocab(), 44);
  TempDir dir;
  {
    Replica r(l, KvKind::kBatchedCell, dir.path(), false);
    r.generate(a);
    EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 0);
    EXPECT_TRUE(block_files(dir.path()).empty());
    r.sched->shutdown(0);
    EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 9);  // a's prompt and reply: 37 positions, 9 blocks
    EXPECT_EQ(r.disk_stored, 9u);
  }
  EXPECT_EQ(block_files(dir.path()).size(), 9u);
  Replica r(l, KvKind::kBatchedCell, dir.path(), false);
  const RequestReport rep = r.generate(a);
  EXPECT_EQ(rep.cached_tokens, 28);
  EXPECT_EQ(r.sched->snapshot().prefix_disk_hit_tokens, 28);
  EXPECT_EQ(rep.tokens, cold(l, a));
}

TEST(PrefixDiskScheduler, ShutdownWithAHungDiskEndsWithinItsBound) {
  const Loaded l = load_llama();
  const std::vector<int32_t> a = test_tokens(30, l.model->n_vocab(), 49);
  TempDir dir;
  auto gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> open = gate->get_future().share();
  auto log = std::make_shared<std::string>();
  auto log_mu = std::make_shared<std::mutex>();
  {
    Replica r(l, KvKind::kBatchedCell, dir.path(), false, [&](SchedulerOptions& o) {
      o.prefix_disk.shutdown_write_s = 0.3;
      o.prefix_disk.before_write = [open] { open.wait_for(std::chrono::seconds(20)); };  // a hung disk
      o.prefix_disk.log = [log, log_mu](const std::string& s) {
        std::lock_guard<std::mutex> lk(*log_mu);
        *log += s + "\n";
      };
    });
    r.generate(a);
    Timer t;
    r.sched->shutdown(0);
    r.sched.reset();  // and the worker's end
    EXPECT_LT(t.seconds(), 0.3 + 1 + 1.5);  // the bound, the job in progress, slack
  }
  {
    std::lock_guard<std::mutex> lk(*log_mu);
    EXPECT_NE(log->find("stopped at its bound"), std::string::npos) << *log;
  }
  gate->set_value();  // the thread left behind finishes its write
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

TEST(PrefixDiskScheduler, EvictionDoesNotWaitForTheDisk) {
  const Loaded l = load_llama();
  const int32_t nv = l.model->n_vocab();
  const std::vector<int32_t> a = test_tokens(30, nv, 45), other = test_tokens(12, nv, 46);
  TempDir dir;
  // The writer is held up until released (at most 20 s, so that a failure still ends).
  auto gate = std::make_shared<std::promise<void>>();
  std::shared_future<void> open = gate->get_future().share();
  auto entered = std::make_shared<std::atomic<int>>(0);
  auto writer = std::make_shared<std::thread::id>();
  Replica r(l, KvKind::kBatchedCell, dir.path(), false, [&](SchedulerOptions& o) {
    o.prefix_disk.before_write = [open, entered, writer] {
      *writer = std::this_thread::get_id();
      entered->fetch_add(1);
      open.wait_for(std::chrono::seconds(20));
    };
  });
  r.generate(a);
  // other's capture evicts a's entry: its 9 blocks go to the disk worker, whose writer is stuck.
  RequestReport rep;
  r.submit(other, &rep);
  Timer t;
  while (r.sched->step()) {
  }
  EXPECT_LT(t.seconds(), 10.0);  // the steps did not wait for the 20 s writer
  EXPECT_FALSE(rep.tokens.empty());  // other was served meanwhile
  for (Timer w; entered->load() == 0 && w.seconds() < 5;) std::this_thread::yield();
  EXPECT_EQ(entered->load(), 1);  // the first block's write is under way, on another thread
  EXPECT_NE(*writer, std::this_thread::get_id());
  EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 0);
  gate->set_value();
  r.sched->run_until_idle();  // waits for the disk worker
  EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 9);
  EXPECT_EQ(r.disk_stored, 9u);
}

TEST(PrefixDiskScheduler, FifoInTheDirectoryIsAMissAndBlocksNothing) {
  const Loaded l = load_llama();
  const std::vector<int32_t> a = test_tokens(30, l.model->n_vocab(), 47);
  const std::vector<int32_t> want = cold(l, a);
  TempDir dir;
  { Replica(l, KvKind::kBatchedCell, dir.path(), true).generate(a); }
  // Every block file becomes a FIFO: a read that opened one would wait for a writer forever.
  std::vector<std::string> files = block_files(dir.path());
  ASSERT_EQ(files.size(), 9u);
  for (const std::string& f : files) {
    std::filesystem::remove(f);
    ASSERT_EQ(::mkfifo(f.c_str(), 0644), 0);
  }
  // A read stuck in open() would hold the request back for read_wait_s: longer than the guard.
  Replica r(l, KvKind::kBatchedCell, dir.path(), false, [](SchedulerOptions& o) { o.prefix_disk.read_wait_s = 60; });
  std::promise<void> finished;
  std::future<void> done = finished.get_future();
  RequestReport rep;
  r.sched->start();
  r.submit(a, &rep, &finished);
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    // Free a reader stuck in open() so that the test ends, then fail.
    for (const std::string& f : files) {
      const int fd = ::open(f.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    }
    done.wait();
    FAIL() << "the request waited on a FIFO";
  }
  EXPECT_EQ(rep.cached_tokens, 0);
  EXPECT_EQ(rep.tokens, want);
}

TEST(PrefixDiskScheduler, BackgroundThreadAdmitsOnceTheBlocksAreRead) {
  const Loaded l = load_llama();
  const std::vector<int32_t> a = test_tokens(30, l.model->n_vocab(), 48);
  TempDir dir;
  { Replica(l, KvKind::kBatchedSequence, dir.path(), true).generate(a); }
  Replica r(l, KvKind::kBatchedSequence, dir.path(), false);
  r.sched->start();
  std::promise<void> finished;
  std::future<void> done = finished.get_future();
  RequestReport rep;
  r.submit(a, &rep, &finished);
  ASSERT_EQ(done.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_EQ(rep.cached_tokens, 28);
  EXPECT_EQ(rep.tokens, cold(l, a));
}

}  // namespace
}  // namespace og
