// ThreadPool: one job at a time, chunks handed out from an atomic counter,
// caller participates; workers join a job through one atomic word so the
// caller waits only for workers that actually took part.
#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <memory>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OG_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define OG_CPU_RELAX() __asm__ __volatile__("yield" ::: "memory")  // AArch64's spin-wait hint
#else
#define OG_CPU_RELAX() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace og {

namespace {
// Guided chunks: each take is the remaining items over 2 × threads, so the
// first chunks are long contiguous runs and the last ones short, and the
// threads finish a job within one small chunk of each other (with fixed
// quarters per thread, decode's matvecs waited up to a quarter of a thread's
// share at their end). No chunk is shorter than n / (kMinChunksPerThread ×
// threads) items.
constexpr int64_t kMinChunksPerThread = 32;
using Clock = std::chrono::steady_clock;
// Busy-wait rounds (pause, ~20-60 ns each) before a waiting thread yields.
constexpr int kPauseSpins = 512;

// True on a thread while it runs a chunk of a parallel_for job: a nested
// parallel_for from there runs inline instead of waiting on busy workers.
thread_local bool t_in_job = false;

struct InJob {
  bool saved = t_in_job;
  InJob() { t_in_job = true; }
  ~InJob() { t_in_job = saved; }
};
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lk(mu_);
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

// Takes chunks until none are left; the first exception is kept in error_.
void ThreadPool::run_chunks() {
  InJob in_job;
  const int64_t split = 2 * static_cast<int64_t>(n_threads_);
  int64_t b = next_.load(std::memory_order_relaxed), e;
  for (;;) {
    do {
      if (b >= job_n_) return;
      e = std::min(job_n_, b + std::max(job_grain_, (job_n_ - b) / split));
    } while (!next_.compare_exchange_weak(b, e, std::memory_order_relaxed));
    try {
      (*job_)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::current_exception();
    }
    b = next_.load(std::memory_order_relaxed);
  }
}

void ThreadPool::parallel_for(int64_t n, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1 || t_in_job) {
    InJob in_job;
    fn(0, n);
    return;
  }
  // One job at a time: concurrent callers from different threads take turns.
  std::lock_guard<std::mutex> call_lock(call_mu_);
  job_ = &fn;
  job_n_ = n;
  job_grain_ = std::max<int64_t>(1, n / (n_threads_ * kMinChunksPerThread));
  next_.store(0, std::memory_order_relaxed);
  left_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  // Publish: a new generation, open, nobody joined.
  const uint64_t gen = (join_.load(std::memory_order_relaxed) >> 32) + 1;
  join_.store(gen << 32, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    cv_start_.notify_all();
  }
  run_chunks();
  // Close the job to late joiners, then wait for those that joined.
  const uint64_t joined = join_.fetch_or(kClosed, std::memory_order_acq_rel) & (kClosed - 1);
  for (int spins = 0; left_.load(std::memory_order_acquire) != static_cast<int64_t>(joined); ++spins) {
    if (spins < kPauseSpins) OG_CPU_RELAX();
    else std::this_thread::yield();
  }
  job_ = nullptr;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

// Joins the job of a generation newer than *seen if it is still open.
bool ThreadPool::try_join(uint64_t* seen) {
  uint64_t j = join_.load(std::memory_order_acquire);
  while ((j >> 32) != *seen) {
    if (j & kClosed) {
      *seen = j >> 32;
      return false;
    }
    if (join_.compare_exchange_weak(j, j + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      *seen = j >> 32;
      return true;
    }
  }
  return false;
}

// Returns once join_ shows a generation other than `seen` (or stop_):
// spinning, then yielding, then asleep on the condition variable.
void ThreadPool::wait_for_job(uint64_t seen) {
  auto changed = [&] { return stop_.load(std::memory_order_acquire) || (join_.load(std::memory_order_acquire) >> 32) != seen; };
  const int64_t spin_us = spin_us_.load(std::memory_order_relaxed);
  if (spin_us > 0) {
    const Clock::time_point until = Clock::now() + std::chrono::microseconds(spin_us);
    // A few pauses cover back-to-back jobs; then yield, so that on a
    // machine with more runnable threads than cores the spinning worker
    // gives its core to them (the caller among them).
    for (int i = 0;; ++i) {
      if (changed()) return;
      if (i < kPauseSpins) {
        OG_CPU_RELAX();
        continue;
      }
      if ((i & 15) == 0 && Clock::now() >= until) break;
      std::this_thread::yield();
    }
  }
  std::unique_lock<std::mutex> lk(mu_);
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (!changed()) {
    sleeps_.fetch_add(1, std::memory_order_relaxed);
    cv_start_.wait(lk, changed);
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

void ThreadPool::worker() {
  uint64_t seen = 0;
  for (;;) {
    wait_for_job(seen);
    if (stop_.load(std::memory_order_acquire)) return;
    if (!try_join(&seen)) continue;
    run_chunks();
    left_.fetch_add(1, std::memory_order_release);
  }
}

namespace {
std::mutex g_pool_mu;
std::unique_ptr<ThreadPool> g_pool;
int g_threads = 0;
}  // namespace

int default_num_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool& thread_pool() {
  std::lock_guard<std::mutex> lk(g_pool_mu);
  if (!g_pool) g_pool = std::make_unique<ThreadPool>(g_threads > 0 ? g_threads : default_num_threads());
  return *g_pool;
}

void set_num_threads(int n) {
  std::lock_guard<std::mutex> lk(g_pool_mu);
  g_threads = n;
  if (g_pool && g_pool->size() != n) g_pool.reset();
}

}  // namespace og
