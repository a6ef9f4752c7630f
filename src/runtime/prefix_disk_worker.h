// PrefixDiskWorker: the prefix cache's disk tier on a thread of its own, so
// that the scheduler's stepping thread never waits on disk (issue 50 item 5).
// It owns a PrefixDiskTier and does all of its file work: writes (a block's
// K/V exported by the caller, then MAC, write and rename here) and reads (a
// prompt's blocks in chain order, until the first miss). Reads go before
// writes; a read finds blocks still waiting to be written in the queue.
// Bounded: the write queue holds at most options.max_pending_bytes of K/V (a
// write past it is skipped and counted, never waited for, except by
// write_back at shutdown, which may wait up to its deadline), and a read
// request holds at most the prompt's blocks. A worker stuck in a system call
// (a hung network file system) makes later reads misses at once, and the
// destructor leaves it behind rather than wait past the shutdown bound.
// Payload buffers are recycled (up to kKeptBufferBytes): the export into a
// fresh buffer is mostly page faults, many times the copy itself.
// Thread-safe: any thread may call any method.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/prefix_disk_tier.h"

namespace og {

// One block to write or read: its hash, its parent's (none for a chain's
// first block) and its block_size tokens.
struct DiskBlockRef {
  BlockHash hash{};
  std::optional<BlockHash> parent;
  std::vector<int32_t> tokens;
};

// A read of a prompt's blocks [first, first + blocks.size()) in chain order.
// The worker appends each block's payload as it is read and stops at the
// first miss; the reader may take the blocks read so far at any time.
class DiskRead {
 public:
  DiskRead(int64_t first, std::vector<DiskBlockRef> blocks) : first_(first), blocks_(std::move(blocks)) {}
  int64_t first() const { return first_; }
  bool done() const;
  // Waits until done, at most `seconds`; returns done().
  bool wait_for(double seconds) const;
  // The payloads read so far (blocks first .. first + size - 1); the read stops
  // when `cancel` was called.
  std::vector<std::vector<uint8_t>> take();
  void cancel();

  // The worker's side.
  const std::vector<DiskBlockRef>& blocks() const { return blocks_; }
  bool cancelled() const;
  void append(std::vector<uint8_t> payload);
  void finish();

 private:
  const int64_t first_;
  const std::vector<DiskBlockRef> blocks_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::vector<uint8_t>> payloads_;
  bool done_ = false, cancelled_ = false;
};

class PrefixDiskWorker {
 public:
  // Builds the tier (its errors are thrown here, on the calling thread) and
  // starts the thread. KV events of the tier are collected when `events`.
  PrefixDiskWorker(const PrefixDiskOptions& o, const KvGeometry& geometry, const KvPolicy& policy, int block_size,
                   bool events);
  // Finishes the queued writes for up to options.shutdown_write_s, then stops.
  ~PrefixDiskWorker();
  PrefixDiskWorker(const PrefixDiskWorker&) = delete;
  PrefixDiskWorker& operator=(const PrefixDiskWorker&) = delete;

  bool persist() const { return persist_; }
  int64_t payload_bytes() const { return payload_bytes_; }
  double read_wait_s() const { return read_wait_s_; }
  double shutdown_write_s() const { return shutdown_write_s_; }

  // A buffer for a payload to export into (capacity from a finished write when one is kept).
  std::vector<uint8_t> take_buffer();
  static constexpr int64_t kKeptBufferBytes = int64_t{64} << 20;

  // Queues block `b`'s write. When the queue's bytes would pass the bound,
  // waits up to `wait_s` for room, then skips it (counted, logged): false.
  bool write(DiskBlockRef b, std::vector<uint8_t> payload, double wait_s = 0);
  // Queues a read; nullptr when the worker is stuck (then the caller misses).
  std::shared_ptr<DiskRead> read(int64_t first, std::vector<DiskBlockRef> blocks);
  // Waits until no job is queued or running, at most `seconds`; true if so.
  bool drain(double seconds);
  // The shutdown's write-back has had its time: the destructor drops what is
  // still queued instead of waiting shutdown_write_s again.
  void spend_shutdown_bound() { shutdown_write_s_ = 0; }

  PrefixDiskStats stats() const;
  std::vector<KvEvent> take_events();
  // Called on the worker's thread after each job that finished a read or
  // produced events (a scheduler wakes up to pass them on). Cleared by the
  // destructor; set before the first job.
  void set_notify(std::function<void()> f);

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the thread, which may outlive this object when stuck
  bool persist_;
  int64_t payload_bytes_;
  double read_wait_s_, shutdown_write_s_;
};

}  // namespace og
