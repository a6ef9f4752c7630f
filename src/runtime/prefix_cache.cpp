// PrefixCache: longest-common-prefix lookup over the entries, fork into a new
// session's sequence, capture at the prompt boundary, LRU eviction by count
// and bytes.
#include "runtime/prefix_cache.h"

#include <algorithm>

#include "base/error.h"

namespace og {

PrefixCache::PrefixCache(KvCache& cache, int max_entries, int64_t max_bytes, int first_seq)
    : cache_(cache), max_entries_(std::max(0, max_entries)), max_bytes_(std::max<int64_t>(0, max_bytes)) {
  for (int i = max_entries_ - 1; i >= 0; --i) free_seqs_.push_back(first_seq + i);
}

PrefixCache::~PrefixCache() {
  for (const Entry& e : entries_) cache_.remove_sequence(e.seq);
}

int64_t PrefixCache::fork_into(std::span<const int32_t> prompt, int64_t cap, int dst) {
  if (!enabled() || cap < 1) return 0;
  ++stats_.lookups;
  stats_.query_tokens += static_cast<int64_t>(prompt.size());
  size_t best = entries_.size();
  int64_t best_len = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const std::vector<int32_t>& t = entries_[i].tokens;
    const int64_t n = std::min<int64_t>({cap, static_cast<int64_t>(t.size()), static_cast<int64_t>(prompt.size())});
    int64_t k = 0;
    while (k < n && t[k] == prompt[k]) ++k;
    if (k > best_len) {
      best_len = k;
      best = i;
    }
  }
  if (best == entries_.size()) return 0;
  // A ring that no longer holds the history position best_len needs answers
  // kHistoryUnavailable: a safe miss.
  const KvResult r = cache_.fork(entries_[best].seq, dst, best_len);
  if (!r.ok()) return 0;
  entries_[best].last_used = ++clock_;
  ++stats_.hits;
  stats_.hit_tokens += best_len;
  return best_len;
}

void PrefixCache::evict(size_t i) {
  const KvResult r = cache_.remove_sequence(entries_[i].seq);
  OG_CHECK(r.ok(), "prefix cache: cannot remove sequence ", entries_[i].seq, ": ", r.message);
  free_seqs_.push_back(entries_[i].seq);
  stats_.bytes -= entries_[i].bytes;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
  ++stats_.evictions;
  stats_.entries = static_cast<int>(entries_.size());
}

// Evicts least recently used entries until one more entry of extra_bytes
// fits both bounds.
void PrefixCache::enforce_bounds(int64_t extra_bytes) {
  auto over = [&] {
    const bool count = static_cast<int>(entries_.size()) + 1 > max_entries_;
    const bool bytes = max_bytes_ > 0 && stats_.bytes + extra_bytes > max_bytes_;
    return count || bytes;
  };
  while (!entries_.empty() && over()) {
    size_t lru = 0;
    for (size_t i = 1; i < entries_.size(); ++i)
      if (entries_[i].last_used < entries_[lru].last_used) lru = i;
    evict(lru);
  }
}

void PrefixCache::capture(int src, std::span<const int32_t> tokens) {
  if (!enabled() || tokens.size() < 2) return;
  for (Entry& e : entries_)
    if (e.tokens.size() == tokens.size() && std::equal(tokens.begin(), tokens.end(), e.tokens.begin())) {
      e.last_used = ++clock_;
      return;
    }
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t bytes = kv_sequence_bytes(cache_.geometry(), cache_.policy(), n);
  if (max_bytes_ > 0 && bytes > max_bytes_) return;  // would never fit
  enforce_bounds(bytes);
  if (free_seqs_.empty() || static_cast<int>(entries_.size()) >= max_entries_) return;
  const int seq = free_seqs_.back();
  const KvResult r = cache_.fork(src, seq, n);
  if (!r.ok()) return;  // e.g. the pool has no room for it: simply not cached
  free_seqs_.pop_back();
  entries_.push_back({std::vector<int32_t>(tokens.begin(), tokens.end()), seq, ++clock_, bytes});
  stats_.bytes += bytes;
  ++stats_.captures;
  stats_.entries = static_cast<int>(entries_.size());
}

}  // namespace og
