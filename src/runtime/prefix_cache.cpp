// PrefixCache: block-chain lookup (the deepest cached block of the prompt,
// then a token-wise extension inside an entry holding it), fork into a new
// session's sequence, capture at the prompt boundary, per-block holder counts
// and their KV events, LRU eviction by count and bytes; the disk tier's
// exports (to the disk worker) and imports (from its reads).
#include "runtime/prefix_cache.h"

#include <algorithm>

#include "base/error.h"
#include "base/timer.h"

namespace og {

PrefixCache::PrefixCache(KvCache& cache, const PrefixCacheOptions& o)
    : cache_(cache),
      max_entries_(std::max(0, o.max_entries)),
      max_bytes_(std::max<int64_t>(0, o.max_bytes)),
      hasher_(o.block_size, o.hash_seed),
      events_on_(o.events),
      has_ring_(false) {
  for (size_t c = 0; c < cache.geometry().caches.size(); ++c)
    has_ring_ = has_ring_ || effective_window(cache.geometry(), cache.policy(), c) > 0;
  for (int i = max_entries_ - 1; i >= 0; --i) free_seqs_.push_back(o.first_seq + i);
  if (!o.disk.dir.empty() && enabled())
    disk_ = std::make_unique<PrefixDiskWorker>(o.disk, cache.geometry(), cache.policy(), o.block_size, events_on_);
}

PrefixCache::~PrefixCache() {
  for (const Entry& e : entries_) cache_.remove_sequence(e.seq);
}

int64_t PrefixCache::fork_into(std::span<const int32_t> prompt, int64_t cap, int dst, std::string_view salt,
                               DiskRead* read, std::span<const ImageSpan> images) {
  if (!enabled() || cap < 1) return 0;
  ++stats_.lookups;
  stats_.query_tokens += static_cast<int64_t>(prompt.size());
  const int64_t limit = std::min<int64_t>(cap, static_cast<int64_t>(prompt.size()));
  const int64_t bs = hasher_.block_size();
  // The deepest cached block: a chain is cached as a prefix (an entry holding
  // block i holds blocks 0..i), so the walk stops at the first miss.
  int64_t matched = 0;
  BlockHash last{};
  if (!holders_.empty()) {
    BlockHash parent = hasher_.none_hash();
    for (int64_t b = 0; (b + 1) * bs <= limit; ++b) {
      const BlockHash h = hasher_.hash_block(parent, prompt, b, salt, images);
      if (!holders_.count(h)) break;
      last = parent = h;
      matched = b + 1;
    }
  }
  // The candidates: the entries holding that block (the same salt, by the
  // hash), or without a cached block the entries of the same salt; the one
  // sharing the most tokens wins.
  size_t best = entries_.size();
  int64_t best_len = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (matched > 0 ? (static_cast<int64_t>(e.chain.size()) < matched || e.chain[matched - 1] != last)
                    : e.salt != salt)
      continue;
    const int64_t n = std::min<int64_t>(limit, static_cast<int64_t>(e.tokens.size()));
    int64_t k = matched * bs;
    while (k < n && e.tokens[k] == prompt[k]) ++k;
    if (!images.empty() || !e.images.empty()) k = common_image_prefix(k, e.images, images);
    if (k > best_len) {
      best_len = k;
      best = i;
    }
  }
  // A ring that no longer holds the history position best_len needs answers
  // kHistoryUnavailable: a safe miss.
  int64_t held = 0;
  if (best < entries_.size() && cache_.fork(entries_[best].seq, dst, best_len).ok()) {
    entries_[best].last_used = ++clock_;
    held = best_len;
  }
  if (read != nullptr) held = extend_from_disk(*read, dst, held);
  // A disk match ends on a block boundary, which may split an image: cut back to its start.
  if (const ImageSpan* s = image_split_at(images, held); s != nullptr)
    held = cache_.rewind(dst, held - s->begin).ok() ? s->begin : 0;
  if (held == 0) return 0;
  ++stats_.hits;
  stats_.hit_tokens += held;
  return held;
}

std::shared_ptr<DiskRead> PrefixCache::read_from_disk(std::span<const int32_t> prompt, int64_t cap,
                                                      std::string_view salt, std::span<const ImageSpan> images) {
  if (!disk_ || !enabled() || cap < 1) return nullptr;
  const int64_t bs = hasher_.block_size();
  const int64_t limit = std::min<int64_t>(cap, static_cast<int64_t>(prompt.size()));
  const std::vector<BlockHash> chain =
      hasher_.chain(prompt.first(static_cast<size_t>(limit / bs * bs)), salt, images);
  size_t first = 0;  // memory holds blocks 0 .. first - 1 (a chain is cached as a prefix)
  while (first < chain.size() && holders_.count(chain[first])) ++first;
  if (first == chain.size()) return nullptr;
  std::vector<DiskBlockRef> blocks;
  for (size_t b = first; b < chain.size(); ++b) {
    const auto at = prompt.subspan(b * static_cast<size_t>(bs), static_cast<size_t>(bs));
    blocks.push_back({chain[b], b > 0 ? std::optional(chain[b - 1]) : std::nullopt, {at.begin(), at.end()}});
  }
  return disk_->read(static_cast<int64_t>(first), std::move(blocks));
}

int64_t PrefixCache::extend_from_disk(DiskRead& read, int dst, int64_t held) {
  const int64_t bs = hasher_.block_size();
  const int64_t first = held / bs;  // the first block dst lacks in full
  // Blocks memory held when the read started but no longer does leave a gap: nothing to import.
  if (first < read.first()) return held;
  // Each block's payload is export_positions' layout of its own positions, so blocks are imported one by one.
  std::vector<std::vector<uint8_t>> blocks = read.take();
  const size_t skip = static_cast<size_t>(first - read.first());
  if (skip >= blocks.size()) return held;
  // dst: created, or cut back to its whole blocks (a memory match may end inside one).
  const bool created = held == 0 && cache_.length(dst) < 0;
  if (created ? !cache_.add_sequence(dst).ok() : held == 0 && !cache_.clear(dst).ok()) return 0;
  if (held > first * bs && !cache_.rewind(dst, held - first * bs).ok()) return held;
  size_t n = 0;  // blocks imported (a refusal, e.g. no room in the pool, imports nothing of its block)
  while (skip + n < blocks.size() && cache_.import_positions(dst, blocks[skip + n]).ok()) {
    mark_on_disk(read.blocks()[skip + n].hash);
    ++n;
  }
  if (n == 0 && created) {
    cache_.remove_sequence(dst);
    return 0;
  }
  if (n > 0) {
    ++stats_.disk_hits;
    stats_.disk_hit_tokens += static_cast<int64_t>(n) * bs;
  }
  return (first + static_cast<int64_t>(n)) * bs;
}

void PrefixCache::mark_on_disk(const BlockHash& h) {
  if (on_disk_.size() >= 65536) on_disk_.clear();
  on_disk_.insert(h);
}

bool PrefixCache::write_to_disk(const Entry& e, bool evicted, double wait_s) {
  const int64_t bs = hasher_.block_size();
  Timer waited;
  for (size_t b = 0; b < e.chain.size(); ++b) {
    const auto it = holders_.find(e.chain[b]);
    if ((evicted && it != holders_.end() && it->second > 1) || on_disk_.count(e.chain[b])) continue;
    const int64_t at = static_cast<int64_t>(b) * bs;
    std::vector<uint8_t> payload = disk_->take_buffer();
    if (!cache_.export_positions(e.seq, at, at + bs, &payload).ok()) return true;
    const auto tokens = std::span(e.tokens).subspan(static_cast<size_t>(at), static_cast<size_t>(bs));
    DiskBlockRef ref{e.chain[b], b > 0 ? std::optional(e.chain[b - 1]) : std::nullopt, {tokens.begin(), tokens.end()}};
    if (!disk_->write(std::move(ref), std::move(payload), wait_s > 0 ? wait_s - waited.seconds() : 0)) return false;
    mark_on_disk(e.chain[b]);
  }
  return true;
}

bool PrefixCache::write_back(double seconds) {
  if (!disk_) return true;
  Timer t;
  std::vector<const Entry*> order;
  for (const Entry& e : entries_) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) { return a->last_used > b->last_used; });
  bool done = true;
  for (const Entry* e : order)
    if (t.seconds() >= seconds || !write_to_disk(*e, /*evicted=*/false, seconds - t.seconds())) {
      done = false;
      break;
    }
  done = disk_->drain(seconds - t.seconds()) && done;
  disk_->spend_shutdown_bound();  // the process is going: no second wait in the worker's destructor
  return done;
}

bool PrefixCache::drain_disk(double seconds) { return !disk_ || disk_->drain(seconds); }

void PrefixCache::hold_blocks(const Entry& e) {
  // The blocks no entry held yet form the chain's tail.
  size_t first_new = e.chain.size();
  for (size_t b = 0; b < e.chain.size(); ++b)
    if (holders_[e.chain[b]]++ == 0 && first_new == e.chain.size()) first_new = b;
  const size_t fresh = e.chain.size() - first_new;
  stats_.blocks += static_cast<int64_t>(fresh);
  if (!events_on_ || fresh == 0) return;
  const size_t bs = static_cast<size_t>(hasher_.block_size());
  KvEvent ev;
  ev.type = KvEvent::Type::kBlockStored;
  ev.hashes.assign(e.chain.begin() + static_cast<std::ptrdiff_t>(first_new), e.chain.end());
  if (first_new > 0) ev.parent = e.chain[first_new - 1];
  ev.token_ids.assign(e.tokens.begin() + static_cast<std::ptrdiff_t>(first_new * bs),
                      e.tokens.begin() + static_cast<std::ptrdiff_t>(e.chain.size() * bs));
  ev.block_size = hasher_.block_size();
  events_.push_back(std::move(ev));
}

void PrefixCache::release_blocks(const Entry& e) {
  KvEvent ev;
  ev.type = KvEvent::Type::kBlockRemoved;
  for (const BlockHash& h : e.chain) {
    auto it = holders_.find(h);
    if (it == holders_.end()) continue;
    if (--it->second == 0) {
      holders_.erase(it);
      --stats_.blocks;
      if (events_on_) ev.hashes.push_back(h);
    }
  }
  if (!ev.hashes.empty()) events_.push_back(std::move(ev));
}

void PrefixCache::evict(size_t i) {
  const KvResult r = cache_.remove_sequence(entries_[i].seq);
  OG_CHECK(r.ok(), "prefix cache: cannot remove sequence ", entries_[i].seq, ": ", r.message);
  release_blocks(entries_[i]);
  free_seqs_.push_back(entries_[i].seq);
  stats_.bytes -= entries_[i].bytes;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
  ++stats_.evictions;
  stats_.entries = static_cast<int>(entries_.size());
}

PrefixCache::Entry PrefixCache::drop(size_t i) {
  const KvResult r = cache_.remove_sequence(entries_[i].seq);
  OG_CHECK(r.ok(), "prefix cache: cannot remove sequence ", entries_[i].seq, ": ", r.message);
  free_seqs_.push_back(entries_[i].seq);
  stats_.bytes -= entries_[i].bytes;
  Entry e = std::move(entries_[i]);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
  stats_.entries = static_cast<int>(entries_.size());
  return e;
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
    if (disk_) write_to_disk(entries_[lru], /*evicted=*/true);
    evict(lru);
  }
}

void PrefixCache::capture(int src, std::span<const int32_t> tokens, std::string_view salt,
                          std::span<const ImageSpan> images) {
  check_image_spans(images, static_cast<int64_t>(tokens.size()), "prefix cache: capture");
  if (!enabled() || tokens.size() < 2) return;
  const int64_t n_tok = static_cast<int64_t>(tokens.size());
  // Whether the first `upto` positions of `e` and of these tokens hold the same images.
  auto same_images = [&](const Entry& e, int64_t upto) {
    return common_image_prefix(upto, e.images, images) == upto;
  };
  // Already cached: the same tokens, or (without rings) an entry they start.
  for (Entry& e : entries_)
    if (e.salt == salt && (has_ring_ ? e.tokens.size() == tokens.size() : e.tokens.size() >= tokens.size()) &&
        std::equal(tokens.begin(), tokens.end(), e.tokens.begin()) && same_images(e, n_tok)) {
      e.last_used = ++clock_;
      return;
    }
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t bytes = kv_sequence_bytes(cache_.geometry(), cache_.policy(), n);
  if (max_bytes_ > 0 && bytes > max_bytes_) return;  // would never fit
  // Entries the new one starts with are redundant without rings: dropped
  // first, so that they do not count against the bounds. Their blocks are
  // released after the new entry holds its own, so that blocks it keeps are
  // neither removed nor stored again (if the fork fails, they go).
  std::vector<Entry> superseded;
  if (!has_ring_) {
    for (size_t i = 0; i < entries_.size();) {
      const Entry& old = entries_[i];
      if (old.salt == salt && old.tokens.size() < tokens.size() &&
          std::equal(old.tokens.begin(), old.tokens.end(), tokens.begin()) &&
          same_images(old, static_cast<int64_t>(old.tokens.size())))
        superseded.push_back(drop(i));
      else
        ++i;
    }
  }
  enforce_bounds(bytes);
  if (!free_seqs_.empty() && static_cast<int>(entries_.size()) < max_entries_) {
    const int seq = free_seqs_.back();
    // A refused fork (e.g. no room in the pool) leaves the tokens uncached.
    if (cache_.fork(src, seq, n).ok()) {
      free_seqs_.pop_back();
      Entry e{std::vector<int32_t>(tokens.begin(), tokens.end()), std::string(salt),
              hasher_.chain(tokens, salt, images), seq, ++clock_, bytes, {images.begin(), images.end()}};
      hold_blocks(e);
      if (disk_ && disk_->persist()) write_to_disk(e, /*evicted=*/false);
      entries_.push_back(std::move(e));
      stats_.bytes += bytes;
      ++stats_.captures;
    }
  }
  for (const Entry& old : superseded) release_blocks(old);
  stats_.entries = static_cast<int>(entries_.size());
}

void PrefixCache::clear() {
  const bool had = !entries_.empty();
  while (!entries_.empty()) evict(entries_.size() - 1);
  // The removals are implied by the clear.
  if (events_on_) {
    events_.erase(std::remove_if(events_.begin(), events_.end(),
                                 [](const KvEvent& e) {
                                   return e.type == KvEvent::Type::kBlockRemoved && e.medium == kMediumMemory;
                                 }),
                  events_.end());
    if (had) events_.push_back(KvEvent{KvEvent::Type::kAllBlocksCleared, {}, {}, {}, 0, kMediumMemory});
  }
}

std::vector<KvEvent> PrefixCache::take_events() {
  std::vector<KvEvent> out;
  out.swap(events_);
  if (disk_ && events_on_)
    for (KvEvent& e : disk_->take_events()) out.push_back(std::move(e));
  return out;
}

}  // namespace og
