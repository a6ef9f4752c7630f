// PrefixCache: prompts' KV kept for reuse by later requests, shared by every
// session of a Scheduler (not one per slot). An entry is a sequence of the
// shared KvCache holding exactly a prompt's tokens, captured at the prompt
// boundary (right after its last prompt row was forwarded, before decode can
// overwrite ring slots). A new prompt forks the entry with the longest common
// prefix into its own sequence: blocks shared copy-on-write in `batched-cell`,
// copied in `batched-sequence`. A fork that needs ring history the entry no
// longer holds is refused by the cache and counted as a miss: never wrong output.
//
// Identity: an entry's prompt is a chain of fixed-size token blocks, each named
// by vLLM's block hash (runtime/block_hash.h) of its parent's hash, its tokens
// and the request's cache salt. A lookup hashes the prompt's full blocks and
// takes the entry holding its deepest cached block, then extends the match
// token by token inside that entry (a router that predicts our hits from the
// block hashes predicts a lower bound). A prompt shorter than one block, or
// whose first block is not cached, falls back to the longest common prefix
// over the entries of the same salt. A salt isolates: requests of different
// salts never share an entry. Every distinct block held is counted once; the
// blocks' arrivals and departures are reported as KV events (take_events).
// Images (runtime/image_span.h): a prompt's image spans key its blocks by the
// images' hashes (block_hash.h) and a match never ends inside an image nor
// covers an image the other prompt lacks or holds with another hash: two
// prompts with the same image share their prefix, with different images
// only what precedes the image (docs/vision.md).
// Bounded by entries and bytes; least recently used entries are evicted first.
// With a disk tier (runtime/prefix_disk_tier.h), an evicted entry's blocks
// that no other entry holds are written to disk (with persist, every block at
// capture; at a graceful shutdown, every block still only in memory), and a
// lookup continues past what memory holds with the prompt's blocks found on
// disk, imported into the new sequence (docs/cache.md). The files are written
// and read on the disk worker's thread (runtime/prefix_disk_worker.h): this
// class only exports blocks to it and imports what it read.
// Not thread-safe: the scheduler's stepping thread owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kv/kv_cache.h"
#include "runtime/block_hash.h"
#include "runtime/kv_events.h"
#include "runtime/prefix_disk_worker.h"

namespace og {

struct PrefixCacheStats {
  int64_t lookups = 0, hits = 0, hit_tokens = 0, evictions = 0, captures = 0;
  int64_t query_tokens = 0;  // prompt tokens of the lookups (vLLM counts queries in tokens)
  int entries = 0;
  int64_t bytes = 0;
  int64_t blocks = 0;  // distinct full blocks the entries hold
  // Lookups that read blocks from the disk tier, and the positions read
  // (both also counted in hits / hit_tokens).
  int64_t disk_hits = 0, disk_hit_tokens = 0;
};

struct PrefixCacheOptions {
  int max_entries = 0;       // 0 disables the cache
  int64_t max_bytes = 0;     // 0: no byte bound
  int first_seq = 0;         // entries use sequence ids first_seq .. first_seq + max_entries - 1
  int block_size = 16;       // tokens per hashed block (vLLM's --block-size)
  std::string hash_seed = "0";  // the chain's root (vLLM's PYTHONHASHSEED)
  bool events = false;       // collect KV events for take_events()
  PrefixDiskOptions disk;    // the disk tier; disk.dir "" = none (needs max_entries > 0)
};

class PrefixCache {
 public:
  // `cache` must hold max_entries sequences beside the sessions'.
  PrefixCache(KvCache& cache, const PrefixCacheOptions& o);
  ~PrefixCache();  // removes its sequences from the cache
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  bool enabled() const { return max_entries_ > 0; }
  // Some layer keeps only a window: an entry serves forks at its own length
  // and within its window only.
  bool has_ring() const { return has_ring_; }
  const BlockHasher& hasher() const { return hasher_; }

  // Forks the cached KV of the longest cached prefix of `prompt` (at most
  // `cap` tokens) under `salt` into sequence `dst` (created or replaced),
  // then imports the blocks `read` (from read_from_disk with the same prompt,
  // cap and salt; may be null) has read by now that continue it.
  // Returns the positions dst now holds: 0 on a miss (dst is then left untouched).
  // `images`: the prompt's image spans (placeholder ids at their positions).
  int64_t fork_into(std::span<const int32_t> prompt, int64_t cap, int dst, std::string_view salt = {},
                    DiskRead* read = nullptr, std::span<const ImageSpan> images = {});

  // Starts reading, on the disk worker, the blocks of `prompt` (at most `cap`
  // tokens) under `salt` past those memory holds now; nullptr when there is no
  // disk tier or nothing to read. Never waits on disk.
  std::shared_ptr<DiskRead> read_from_disk(std::span<const int32_t> prompt, int64_t cap, std::string_view salt = {},
                                           std::span<const ImageSpan> images = {});
  // A graceful shutdown's write-back: queues every entry's blocks not yet on
  // disk (most recently used entries first) and waits for the disk worker,
  // all within `seconds`; false when time ran out first. No-op without a tier.
  bool write_back(double seconds);
  // Waits up to `seconds` for the disk worker's queue to empty (true if it did).
  bool drain_disk(double seconds);

  // Keeps the first `tokens.size()` positions of sequence `src` (which holds
  // at least those tokens' KV) as an entry under `salt`, evicting as the
  // bounds require. Tokens already cached are only marked as used. Without
  // ring layers an entry that starts another serves every fork the shorter
  // one could, so the shorter one is dropped (a prompt's entry, when the
  // scheduler captures the prompt and its reply at the request's end), and
  // tokens that start a cached entry are not kept twice.
  // `images`: the spans of images among `tokens` (og::Error for a bad list).
  void capture(int src, std::span<const int32_t> tokens, std::string_view salt = {},
               std::span<const ImageSpan> images = {});

  // Drops every entry (an AllBlocksCleared event).
  void clear();

  // The KV events since the last call, in order (empty unless options.events);
  // the disk tier's follow the memory's of the same call.
  std::vector<KvEvent> take_events();

  const PrefixCacheStats& stats() const { return stats_; }
  PrefixDiskWorker* disk() { return disk_.get(); }  // nullptr without a disk tier
  const PrefixDiskWorker* disk() const { return disk_.get(); }

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    std::string salt;
    std::vector<BlockHash> chain;  // its full blocks' hashes
    int seq = -1;
    uint64_t last_used = 0;
    int64_t bytes = 0;
    std::vector<ImageSpan> images;  // image spans among tokens (sorted)
  };
  void evict(size_t i);
  Entry drop(size_t i);  // takes entry i out (its sequence freed), its blocks still counted
  void enforce_bounds(int64_t extra_bytes);
  void hold_blocks(const Entry& e);     // counts e's blocks; BlockStored for the new ones
  void release_blocks(const Entry& e);  // uncounts them; BlockRemoved for the last holders'
  // Exports e's blocks to the disk worker: those no other entry holds
  // (evicted), or all, skipping those known to be on disk; waits up to wait_s
  // for room in its queue. False when a block did not fit.
  bool write_to_disk(const Entry& e, bool evicted, double wait_s = 0);
  // Imports the blocks `read` holds after the `held` positions dst holds (0:
  // dst is not in the cache); returns the positions dst holds then.
  int64_t extend_from_disk(DiskRead& read, int dst, int64_t held);
  void mark_on_disk(const BlockHash& h);

  KvCache& cache_;
  int max_entries_;
  int64_t max_bytes_;
  BlockHasher hasher_;
  bool events_on_;
  bool has_ring_;  // some layer keeps only a window: a longer entry cannot stand for a shorter one
  std::vector<int> free_seqs_;
  std::vector<Entry> entries_;
  std::unordered_map<BlockHash, int, BlockHashHasher> holders_;  // block -> entries holding it
  std::vector<KvEvent> events_;
  uint64_t clock_ = 0;
  PrefixCacheStats stats_;
  std::unique_ptr<PrefixDiskWorker> disk_;
  // Blocks written to (or queued for, or read from) disk by this process:
  // not exported again. Forgotten past 65536 (then some are exported twice).
  std::unordered_set<BlockHash, BlockHashHasher> on_disk_;
};

}  // namespace og
