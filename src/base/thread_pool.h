// A small persistent thread pool: parallel_for hands out [0, n) in chunks
// from a shared counter (dynamic, so one slow thread does not stall a job);
// the calling thread takes part. Idle workers spin briefly before sleeping so
// back-to-back small jobs (decode) do not pay a wake-up each. Kernels use the
// process-wide pool from thread_pool().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "base/function_ref.h"

namespace og {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Calls fn(begin, end) on disjoint chunks covering [0, n); returns when all
  // are done. An exception thrown by fn is rethrown here (the first one; the
  // other chunks still run). Safe to call from several threads (jobs take
  // turns) and from inside a job (the nested call runs inline on the calling
  // thread). Workers that are descheduled when a job starts do not delay it:
  // the threads that are running take all its chunks. Dispatching a job
  // allocates nothing (fn is a FunctionRef).
  void parallel_for(int64_t n, FunctionRef<void(int64_t, int64_t)> fn);

  // How long (microseconds) an idle worker spins, then yields, before it
  // sleeps on the condition variable (0: sleep at once). Tests use it.
  void set_spin_us(int64_t us) { spin_us_.store(us, std::memory_order_relaxed); }
  // Number of times a worker went to sleep (tests: spinning really avoids it).
  uint64_t sleeps() const { return sleeps_.load(std::memory_order_relaxed); }

 private:
  // join_ packs (generation << 32) | kClosed | number of workers that joined.
  static constexpr uint64_t kClosed = uint64_t{1} << 31;
  void worker();
  bool try_join(uint64_t* seen);
  void run_chunks();
  void wait_for_job(uint64_t seen);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // held by the thread whose job is running
  // The current job (written only while no worker is joined to it).
  const FunctionRef<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0, job_grain_ = 1;  // items; the shortest chunk
  alignas(64) std::atomic<uint64_t> join_{0};
  alignas(64) std::atomic<int64_t> next_{0};   // first item not yet handed out
  alignas(64) std::atomic<int64_t> left_{0};   // joined workers that finished
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> spin_us_{2000};
  std::atomic<uint64_t> sleeps_{0};
  std::mutex mu_;  // sleeping workers; error_
  std::condition_variable cv_start_;
  std::exception_ptr error_;
};

// The process-wide pool (created on first use with set_num_threads' value,
// default: hardware concurrency).
ThreadPool& thread_pool();
// Must be called before the first thread_pool() use to take effect; later
// calls rebuild the pool.
void set_num_threads(int n);
int default_num_threads();

}  // namespace og
