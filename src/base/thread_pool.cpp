// ThreadPool: one job at a time, static chunking, caller participates.
#include "base/thread_pool.h"

#include <algorithm>
#include <memory>

namespace og {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_start_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {
// True on a thread while it runs a chunk of a parallel_for job: a nested
// parallel_for from there runs inline instead of waiting on busy workers.
thread_local bool t_in_job = false;

struct InJob {
  bool saved = t_in_job;
  InJob() { t_in_job = true; }
  ~InJob() { t_in_job = saved; }
};
}  // namespace

static void run_chunk(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int idx, int parts) {
  int64_t begin = n * idx / parts, end = n * (idx + 1) / parts;
  if (begin < end) fn(begin, end);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1 || t_in_job) {
    InJob in_job;
    fn(0, n);
    return;
  }
  // One job at a time: concurrent callers from different threads take turns.
  std::lock_guard<std::mutex> call_lock(call_mu_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    job_ = &fn;
    job_n_ = n;
    pending_ = n_threads_ - 1;
    error_ = nullptr;
    ++generation_;
  }
  cv_start_.notify_all();
  std::exception_ptr mine;
  try {
    InJob in_job;
    run_chunk(fn, n, 0, n_threads_);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lk(mu_);
  cv_done_.wait(lk, [this] { return pending_ == 0; });
  job_ = nullptr;
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker(int idx) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_start_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    std::exception_ptr err;
    try {
      InJob in_job;
      run_chunk(*job, n, idx, n_threads_);
    } catch (...) {
      err = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (err && !error_) error_ = err;
      if (--pending_ == 0) cv_done_.notify_one();
    }
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
