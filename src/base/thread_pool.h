// A small persistent thread pool: parallel_for splits [0, n) into contiguous
// chunks, one per thread; the calling thread takes part. Kernels use the
// process-wide pool from thread_pool().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace og {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Calls fn(begin, end) on disjoint chunks covering [0, n); returns when all
  // are done. An exception thrown by fn is rethrown here (the first one).
  // Safe to call from several threads (jobs take turns) and from inside a job
  // (the nested call runs inline on the calling thread).
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker(int idx);
  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // held by the thread whose job is running
  std::mutex mu_;
  std::condition_variable cv_start_, cv_done_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
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
