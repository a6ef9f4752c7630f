// PrefixCache: prompts' KV kept for reuse by later requests, shared by every
// session of a Scheduler (not one per slot). An entry is a sequence of the
// shared KvCache holding exactly a prompt's tokens, captured at the prompt
// boundary (right after its last prompt row was forwarded, before decode can
// overwrite ring slots). A new prompt forks the entry with the longest common
// prefix into its own sequence: blocks shared copy-on-write in `batched-cell`,
// copied in `batched-sequence`. A fork that needs ring history the entry no
// longer holds is refused by the cache and counted as a miss: never wrong output.
// Bounded by entries and bytes; least recently used entries are evicted first.
// Not thread-safe: the scheduler's stepping thread owns it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache.h"

namespace og {

struct PrefixCacheStats {
  int64_t lookups = 0, hits = 0, hit_tokens = 0, evictions = 0, captures = 0;
  int64_t query_tokens = 0;  // prompt tokens of the lookups (vLLM counts queries in tokens)
  int entries = 0;
  int64_t bytes = 0;
};

class PrefixCache {
 public:
  // Entries use sequence ids first_seq, first_seq + 1, ... of `cache`, which
  // must hold max_entries sequences beside the sessions'. max_entries 0
  // disables it; max_bytes 0: no byte bound.
  PrefixCache(KvCache& cache, int max_entries, int64_t max_bytes, int first_seq);
  ~PrefixCache();  // removes its sequences from the cache
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  bool enabled() const { return max_entries_ > 0; }

  // Forks the cached KV of the longest common prefix of `prompt` (at most
  // `cap` tokens) into sequence `dst` (created or replaced). Returns the
  // positions dst now holds: 0 on a miss (dst is then left untouched).
  int64_t fork_into(std::span<const int32_t> prompt, int64_t cap, int dst);

  // Keeps the first `tokens.size()` positions of sequence `src` (which holds
  // exactly those tokens' KV) as an entry, evicting as the bounds require.
  // A prompt already cached is only marked as used.
  void capture(int src, std::span<const int32_t> tokens);

  const PrefixCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    int seq = -1;
    uint64_t last_used = 0;
    int64_t bytes = 0;
  };
  void evict(size_t i);
  void enforce_bounds(int64_t extra_bytes);

  KvCache& cache_;
  int max_entries_;
  int64_t max_bytes_;
  std::vector<int> free_seqs_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  PrefixCacheStats stats_;
};

}  // namespace og
