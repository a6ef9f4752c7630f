// PrefixDiskTier: the prefix cache's blocks on disk (issue 35 item 4). One
// file per block of block_size positions, named
//   <block hash, 64 hex>-<run key, 16 hex>.kvb
// where the run key is a hash of the model fingerprint, the cache's storage
// dtype, the block size and the KV geometry, so that replicas of different
// models or cache settings may share one directory without ever reading each
// other's blocks. A file holds a header (see docs/cache.md, "The disk tier"),
// an HMAC-SHA-256 of header and payload keyed by the directory's secret
// (D/.offgraph-kvb-key: 32 random bytes, mode 0600, made on first use), and
// the block's K/V in KvCache::export_positions' layout. Whoever can write the
// directory but not read the key cannot make a file this tier accepts.
// Written as a temporary file renamed onto its name (concurrent writers of one
// block are safe: unique temporary names, an atomic rename); a read opens only
// a regular file (never following a link, never waiting on a FIFO or device),
// checks its size, the whole header against what the reader expects and the
// MAC, and a file that fails (truncated, corrupt, forged, foreign, special,
// unreadable) is a miss and is removed. Past the byte bound the least recently
// used files are deleted: a read sets its file's mtime to now, and pruning
// deletes the oldest mtimes first (atime is not used: often mounted noatime).
// Caches with ring (sliding-window) layers are refused: a ring does not hold
// the history a block needs (kv_cache.h, export_positions).
// Not thread-safe: one thread at a time (the disk worker's,
// runtime/prefix_disk_worker.h). Nothing prints: skipped writes and removed
// files are reported through options.log.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/hmac.h"
#include "kv/kv_cache.h"
#include "runtime/block_hash.h"
#include "runtime/kv_events.h"

namespace og {

struct PrefixDiskOptions {
  std::string dir;                 // "" = no disk tier
  int64_t max_bytes = 0;           // bound on the .kvb files in dir (every model's); >= 1 with a dir
  bool persist = false;            // write every block the prefix cache stores, not only evicted ones
  Sha256Digest model_fingerprint{};  // runtime/model_fingerprint.h
  std::function<void(const std::string&)> log;  // one line per skipped write or removed file; may be empty
  // Bounds of the disk worker (runtime/prefix_disk_worker.h): K/V bytes of
  // blocks waiting to be written (more are skipped, never waited for), how
  // long a request waits for its blocks to be read before it goes on with
  // what was read, and how long a graceful shutdown spends writing.
  int64_t max_pending_bytes = int64_t{256} << 20;
  double read_wait_s = 5;
  double shutdown_write_s = 2;
  // Test hook: called before each block write (on the thread that writes).
  std::function<void()> before_write;
};

struct PrefixDiskStats {
  int64_t writes = 0, write_skips = 0;  // blocks written; writes given up (full disk, I/O error)
  int64_t reads = 0, bad_files = 0;     // blocks read back; files found bad and removed
  int64_t pruned = 0;                   // files deleted past the byte bound
  int64_t bytes = 0;                    // .kvb bytes in dir at the last scan plus this process's writes since
};

class PrefixDiskTier {
 public:
  // Checks the options (a directory that exists and is writable, max_bytes
  // >= 1, no ring cache), reads or makes the directory's key and scans the
  // directory; throws og::Error with one line naming the flag otherwise (a key
  // file that is not a 32-byte regular file of this user, mode 0600, too). Events (BlockStored / BlockRemoved, medium
  // "disk") are appended to *events when it is not null.
  PrefixDiskTier(const PrefixDiskOptions& o, const KvGeometry& geometry, const KvPolicy& policy,
                 int block_size, std::vector<KvEvent>* events);

  bool persist() const { return persist_; }
  // Bytes of one block's payload (block_size positions).
  int64_t payload_bytes() const { return payload_bytes_; }

  // Whether block h's file exists as a regular file (it may still turn out bad when read).
  bool has(const BlockHash& h) const;
  // Writes block h (its parent, none for a chain's first block; its
  // block_size tokens; payload_bytes() of K/V). A file already there is kept.
  // False when the write was skipped (a full disk, any I/O error): logged, never thrown.
  bool store(const BlockHash& h, const std::optional<BlockHash>& parent, std::span<const int32_t> tokens,
             std::span<const uint8_t> payload);
  // Reads block h into *payload when its file matches all of it (a regular
  // file of the right size, header, tokens, parent, MAC) and marks it used;
  // false on a miss. A bad file is removed.
  bool load(const BlockHash& h, const std::optional<BlockHash>& parent, std::span<const int32_t> tokens,
            std::vector<uint8_t>* payload);

  const PrefixDiskStats& stats() const { return stats_; }
  std::string path_of(const BlockHash& h) const;

  // Test hook: the next `n` writes fail with errno `err` (ENOSPC: a full
  // disk) after writing part of their file, as write(2) on a full file system.
  void inject_write_errors(int n, int err) { fault_writes_ = n, fault_errno_ = err; }

 private:
  std::vector<uint8_t> header(const BlockHash& h, const std::optional<BlockHash>& parent,
                              std::span<const int32_t> tokens) const;
  void remove_bad(const std::string& path, const BlockHash& h, const std::string& why);
  std::string check_file(int fd, const std::vector<uint8_t>& want, std::vector<uint8_t>* payload) const;
  void prune();  // deletes least recently used files until the total is at most 90 % of max_bytes
  void removed_event(const BlockHash& h);

  std::string dir_;
  int64_t max_bytes_;
  bool persist_;
  int block_size_;
  int64_t payload_bytes_ = 0;
  std::vector<uint8_t> key_header_;  // the header's fields that are the same for every block of this run
  std::string key_hex_;              // 16 hex digits of the run key
  std::vector<uint8_t> secret_;      // the directory's MAC key
  std::function<void(const std::string&)> log_;
  std::vector<KvEvent>* events_;
  std::function<void()> before_write_;
  int fault_writes_ = 0, fault_errno_ = 0;
  PrefixDiskStats stats_;
};

}  // namespace og
