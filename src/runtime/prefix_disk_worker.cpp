// PrefixDiskWorker: one thread, a read queue served first, a write queue
// bounded in bytes, and the tier's stats and events handed over under a mutex
// after every job.
#include "runtime/prefix_disk_worker.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <thread>

#include "base/error.h"

namespace og {

namespace {
using Clock = std::chrono::steady_clock;
std::chrono::duration<double> secs(double s) { return std::chrono::duration<double>(std::max(0.0, s)); }
}  // namespace

bool DiskRead::done() const {
  std::lock_guard<std::mutex> lk(mu_);
  return done_;
}

bool DiskRead::wait_for(double seconds) const {
  std::unique_lock<std::mutex> lk(mu_);
  return cv_.wait_for(lk, secs(seconds), [&] { return done_; });
}

std::vector<std::vector<uint8_t>> DiskRead::take() {
  std::lock_guard<std::mutex> lk(mu_);
  cancelled_ = true;
  return std::move(payloads_);
}

void DiskRead::cancel() {
  std::lock_guard<std::mutex> lk(mu_);
  cancelled_ = true;
}

bool DiskRead::cancelled() const {
  std::lock_guard<std::mutex> lk(mu_);
  return cancelled_;
}

void DiskRead::append(std::vector<uint8_t> payload) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!cancelled_) payloads_.push_back(std::move(payload));
}

void DiskRead::finish() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

struct PrefixDiskWorker::State {
  State(const PrefixDiskOptions& o, const KvGeometry& g, const KvPolicy& p, int block_size, bool events)
      : tier(o, g, p, block_size, events ? &tier_events : nullptr), log(o.log),
        max_pending(std::max<int64_t>(1, o.max_pending_bytes)) {}

  struct Write {
    DiskBlockRef block;
    std::vector<uint8_t> payload;
  };

  std::vector<KvEvent> tier_events;  // worker thread only; before `tier`, which appends to it
  PrefixDiskTier tier;               // worker thread only once the thread runs
  std::function<void(const std::string&)> log;
  const int64_t max_pending;

  std::mutex mu;
  std::condition_variable work_cv;  // a job arrived, or stop
  std::condition_variable done_cv;  // a job finished (room in the queue; drain), or the thread exited
  std::deque<std::shared_ptr<DiskRead>> reads;
  std::deque<Write> writes;
  int64_t pending_bytes = 0;        // payload bytes of queued and running writes
  bool busy = false, writing = false;  // writing: writes.front() is being written
  Clock::time_point busy_since;
  bool stop = false, exited = false;
  PrefixDiskStats stats;            // the tier's, as of the last finished job
  int64_t queue_skips = 0;          // writes skipped for a full queue
  std::vector<KvEvent> events;
  std::vector<std::vector<uint8_t>> spare;  // buffers of finished writes, for the next exports
  int64_t spare_bytes = 0;

  std::mutex notify_mu;
  std::function<void()> notify;

  void run();
  void do_read(DiskRead& r);
  // The payload of a write still queued for block h (copied into *out).
  bool queued_payload(const BlockHash& h, std::vector<uint8_t>* out);
};

bool PrefixDiskWorker::State::queued_payload(const BlockHash& h, std::vector<uint8_t>* out) {
  std::lock_guard<std::mutex> lk(mu);
  for (const Write& w : writes)
    if (w.block.hash == h) {
      *out = w.payload;
      return true;
    }
  return false;
}

void PrefixDiskWorker::State::do_read(DiskRead& r) {
  for (const DiskBlockRef& b : r.blocks()) {
    if (r.cancelled()) break;
    std::vector<uint8_t> payload;
    if (!queued_payload(b.hash, &payload) && !tier.load(b.hash, b.parent, b.tokens, &payload)) break;
    r.append(std::move(payload));
  }
  r.finish();
}

void PrefixDiskWorker::State::run() {
  std::unique_lock<std::mutex> lk(mu);
  while (true) {
    work_cv.wait(lk, [&] { return stop || !reads.empty() || !writes.empty(); });
    if (stop) break;  // what is still queued is dropped: the destructor drained what its bound allowed
    busy = true;
    busy_since = Clock::now();
    bool read = false;
    if (!reads.empty()) {
      std::shared_ptr<DiskRead> r = std::move(reads.front());
      reads.pop_front();
      lk.unlock();
      do_read(*r);
      read = true;
    } else {
      Write& front = writes.front();
      const DiskBlockRef block = front.block;
      const std::vector<uint8_t>* payload = &front.payload;  // a deque keeps it in place while others are pushed
      writing = true;
      lk.unlock();
      tier.store(block.hash, block.parent, block.tokens, *payload);
      lk.lock();
      writing = false;
      std::vector<uint8_t> done = std::move(writes.front().payload);
      pending_bytes -= static_cast<int64_t>(done.size());
      writes.pop_front();
      if (spare_bytes + static_cast<int64_t>(done.capacity()) <= PrefixDiskWorker::kKeptBufferBytes) {
        spare_bytes += static_cast<int64_t>(done.capacity());
        spare.push_back(std::move(done));
      }
      lk.unlock();
    }
    lk.lock();
    busy = false;
    stats = tier.stats();
    const bool news = read || !tier_events.empty();
    for (KvEvent& e : tier_events) events.push_back(std::move(e));
    tier_events.clear();
    lk.unlock();
    done_cv.notify_all();
    if (news) {
      std::lock_guard<std::mutex> n(notify_mu);
      if (notify) notify();
    }
    lk.lock();
  }
  exited = true;
  lk.unlock();
  done_cv.notify_all();
}

PrefixDiskWorker::PrefixDiskWorker(const PrefixDiskOptions& o, const KvGeometry& g, const KvPolicy& p, int block_size,
                                   bool events)
    : state_(std::make_shared<State>(o, g, p, block_size, events)), persist_(o.persist),
      payload_bytes_(state_->tier.payload_bytes()), read_wait_s_(o.read_wait_s), shutdown_write_s_(o.shutdown_write_s) {
  state_->stats = state_->tier.stats();
  std::thread([s = state_] { s->run(); }).detach();  // joined through `exited` (see the destructor)
}

PrefixDiskWorker::~PrefixDiskWorker() {
  State& s = *state_;
  drain(shutdown_write_s_);
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> n(s.notify_mu);
    s.notify = nullptr;
  }
  {
    std::unique_lock<std::mutex> lk(s.mu);
    dropped = s.writes.size() - (s.writing ? 1 : 0);
    s.stop = true;
    s.work_cv.notify_all();
    // The job in progress ends within a block's write on a sound disk; a
    // thread stuck longer keeps its own reference to the state and is left behind.
    s.done_cv.wait_for(lk, secs(1.0), [&] { return s.exited; });
  }
  if (dropped > 0 && s.log)
    s.log(cat("prefix cache: ", dropped, " blocks not written to disk (the shutdown bound of ", shutdown_write_s_,
              " s passed)"));
}

bool PrefixDiskWorker::write(DiskBlockRef b, std::vector<uint8_t> payload, double wait_s) {
  State& s = *state_;
  const int64_t n = static_cast<int64_t>(payload.size());
  int64_t skips = 0;
  {
    std::unique_lock<std::mutex> lk(s.mu);
    auto room = [&] { return s.stop || s.pending_bytes == 0 || s.pending_bytes + n <= s.max_pending; };
    if (wait_s > 0) s.done_cv.wait_for(lk, secs(wait_s), room);
    if (room() && !s.stop) {
      s.pending_bytes += n;
      s.writes.push_back({std::move(b), std::move(payload)});
      lk.unlock();
      s.work_cv.notify_all();
      return true;
    }
    skips = ++s.queue_skips;
  }
  // A disk slower than the evictions: one line, then one per 1000.
  if (s.log && (skips == 1 || skips % 1000 == 0))
    s.log(cat("prefix cache: block ", to_hex(b.hash).substr(0, 16), " not written to disk (", s.max_pending,
              " bytes already wait to be written; ", skips, " blocks skipped so far)"));
  return false;
}

std::vector<uint8_t> PrefixDiskWorker::take_buffer() {
  std::lock_guard<std::mutex> lk(state_->mu);
  if (state_->spare.empty()) return {};
  std::vector<uint8_t> b = std::move(state_->spare.back());
  state_->spare.pop_back();
  state_->spare_bytes -= static_cast<int64_t>(b.capacity());
  return b;
}

std::shared_ptr<DiskRead> PrefixDiskWorker::read(int64_t first, std::vector<DiskBlockRef> blocks) {
  State& s = *state_;
  auto r = std::make_shared<DiskRead>(first, std::move(blocks));
  {
    std::lock_guard<std::mutex> lk(s.mu);
    if (s.stop || (s.busy && Clock::now() - s.busy_since > secs(read_wait_s_))) return nullptr;
    s.reads.push_back(r);
  }
  s.work_cv.notify_all();
  return r;
}

bool PrefixDiskWorker::drain(double seconds) {
  State& s = *state_;
  std::unique_lock<std::mutex> lk(s.mu);
  return s.done_cv.wait_for(lk, secs(seconds),
                            [&] { return s.exited || (s.reads.empty() && s.writes.empty() && !s.busy); });
}

PrefixDiskStats PrefixDiskWorker::stats() const {
  std::lock_guard<std::mutex> lk(state_->mu);
  PrefixDiskStats st = state_->stats;
  st.write_skips += state_->queue_skips;
  return st;
}

std::vector<KvEvent> PrefixDiskWorker::take_events() {
  std::lock_guard<std::mutex> lk(state_->mu);
  std::vector<KvEvent> out;
  out.swap(state_->events);
  return out;
}

void PrefixDiskWorker::set_notify(std::function<void()> f) {
  std::lock_guard<std::mutex> n(state_->notify_mu);
  state_->notify = std::move(f);
}

}  // namespace og
