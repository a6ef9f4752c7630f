// The `batched-cell` kind: per cache one pool of fixed-size blocks of
// block_size positions (chunks of blocks, [n_kv_heads][blocks][block_size][row]
// each for K and V: see Pool),
// per-sequence block tables, and reference counts so that a fork shares its
// prefix without copying; a shared block is copied before it is written
// (copy-on-write). A ring cache keeps only the blocks holding the last
// slots = window + max_write - 1 positions (the same history as the
// `sequence` kind's ring, rounded out to whole blocks) and frees the rest.
// Pool size: max_sequences * (blocks one sequence can need + 1), allocated
// lazily in chunks; a step that needs more is refused (kPoolExhausted).
// With a block_size that is a multiple of kKeyBlock (the default 16), K of
// f32/f16/bf16 (k_blocked) is kept in blocks of kKeyBlock keys inside each
// block's head rows (kv_attend.h KvSpan), as the `sequence` kinds keep it.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "kv/kv_buffer.h"
#include "kv/kv_kinds.h"
#include "kv/kv_store_base.h"

namespace og::kv {
namespace {

// Blocks are allocated in chunks laid out [n_kv_heads][chunk_ blocks][block
// rows][row]: one head's rows of a block are head_k_ (head_v_) bytes, and of
// consecutive blocks of a chunk adjacent, so a sequence whose blocks were
// allocated in order reads each head's history in long runs (read_spans
// merges them), as the `sequence` kind does. Head h of block b lies at
// k(b) + h * k_head_stride(), the same stride in every chunk.
class Pool {
 public:
  void init(const CacheLayout& l, int block, int64_t limit) {
    n_heads_ = l.n_kv_heads;
    head_k_ = block * l.row_bytes_k;
    head_v_ = block * l.row_bytes_v;
    bytes_k_ = n_heads_ * head_k_;
    bytes_v_ = n_heads_ * head_v_;
    limit_ = limit;
    chunk_ = std::max<int64_t>(1, std::min<int64_t>(64, limit));
  }
  int64_t available() const { return int64_t(free_.size()) + (limit_ - int64_t(refs_.size())); }
  int alloc() {
    int b;
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {
      b = int(refs_.size());
      if (b % chunk_ == 0) {
        chunks_k_.reserve(chunks_k_.size() + 1), chunks_v_.reserve(chunks_v_.size() + 1);
        // Ordinary pages: in huge pages (chunks of 128 blocks, 2 MiB) 1B Q4_K_M
        // decode at depth 4096 fell from ~88 to ~58 % of the bound (three pairs);
        // why is not understood (the `sequence` kind gains from them).
        KvBuffer k(size_t(chunk_ * bytes_k_), KvBuffer::Pages::kOrdinary);  // may throw: nothing changed yet
        KvBuffer v(size_t(chunk_ * bytes_v_), KvBuffer::Pages::kOrdinary);
        chunks_k_.push_back(std::move(k));
        chunks_v_.push_back(std::move(v));
      }
      refs_.push_back(0);
    }
    refs_[b] = 1;
    return b;
  }
  void retain(int b) { ++refs_[b]; }
  void release(int b) {
    if (--refs_[b] == 0) free_.push_back(b);
  }
  int refs(int b) const { return refs_[b]; }
  int64_t limit() const { return limit_; }
  int64_t created() const { return int64_t(refs_.size()); }
  // Head 0's rows of block b; head h's at + h * k_head_stride() (v_head_stride()).
  uint8_t* k(int b) const { return chunks_k_[b / chunk_].data() + (b % chunk_) * head_k_; }
  uint8_t* v(int b) const { return chunks_v_[b / chunk_].data() + (b % chunk_) * head_v_; }
  bool same_chunk(int a, int b) const { return a >= 0 && b >= 0 && a / chunk_ == b / chunk_; }
  int64_t k_head_stride() const { return chunk_ * head_k_; }
  int64_t v_head_stride() const { return chunk_ * head_v_; }
  void copy(int dst, int src) {
    for (int64_t h = 0; h < n_heads_; ++h) {
      std::memcpy(k(dst) + h * k_head_stride(), k(src) + h * k_head_stride(), head_k_);
      std::memcpy(v(dst) + h * v_head_stride(), v(src) + h * v_head_stride(), head_v_);
    }
  }
  // Frees trailing chunks whose blocks are all unused.
  void trim() {
    while (!chunks_k_.empty()) {
      int64_t begin = int64_t(chunks_k_.size() - 1) * chunk_;
      bool unused = true;
      for (int64_t b = begin; b < int64_t(refs_.size()); ++b) unused &= refs_[b] == 0;
      if (!unused) break;
      refs_.resize(begin);
      free_.erase(std::remove_if(free_.begin(), free_.end(), [&](int b) { return b >= begin; }), free_.end());
      chunks_k_.pop_back();
      chunks_v_.pop_back();
    }
  }
  int64_t allocated_bytes() const { return int64_t(chunks_k_.size()) * chunk_ * (bytes_k_ + bytes_v_); }
  int64_t used_bytes() const { return (int64_t(refs_.size()) - int64_t(free_.size())) * (bytes_k_ + bytes_v_); }

 private:
  int64_t n_heads_ = 0, head_k_ = 0, head_v_ = 0;  // a block's rows of one head
  int64_t bytes_k_ = 0, bytes_v_ = 0, limit_ = 0, chunk_ = 1;  // a block's rows of all heads; blocks per chunk
  std::vector<KvBuffer> chunks_k_, chunks_v_;  // kv_buffer.h
  std::vector<int> refs_;  // per created block
  std::vector<int> free_;
};

// Logical blocks [first, first + ids.size()) of one sequence in one cache.
struct Table {
  int64_t first = 0;
  std::vector<int> ids;
};

struct CellSeq {
  int64_t length = 0;
  std::vector<Table> tables;  // per cache
};

class CellCache final : public StoreCacheBase {
 public:
  CellCache(const KvGeometry& g, const KvPolicy& p)
      : StoreCacheBase(g, p, "batched-cell"),
        k_blocked_(k_blocked(res_.policy.dtype) && res_.policy.block_size % kKeyBlock == 0) {
    const int64_t b = res_.policy.block_size;
    pools_.resize(res_.caches.size());
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      const CacheLayout& l = res_.caches[c];
      int64_t per_seq = (res_.policy.max_capacity + b - 1) / b;
      if (l.window > 0) per_seq = std::min(per_seq, (l.slots + b - 1) / b + 1);
      pools_[c].init(l, int(b), res_.policy.max_sequences * (per_seq + 1));
    }
    add_sequence(0);
  }

  KvResult add_sequence(int seq) override {
    check_no_step(step_, "add_sequence");
    if (seq < 0 || seqs_.count(seq)) return refuse(KvStatus::kInvalid, cat("kv cache: cannot add sequence ", seq));
    seqs_[seq].tables.resize(res_.caches.size());
    return KvResult::success();
  }

  KvResult remove_sequence(int seq) override {
    check_no_step(step_, "remove_sequence");
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return unknown(seq);
    drop_from(it->second, 0);
    seqs_.erase(it);
    return KvResult::success();
  }

  KvResult can_extend(int seq, int64_t n) const override {
    KvResult r = check_capacity(seq, n);
    if (!r.ok()) return r;
    std::vector<SeqStep> plan = {{seq, length(seq), n}};
    return plan_blocks(plan, nullptr);
  }

  KvResult rewind(int seq, int64_t n) override {
    check_no_step(step_, "rewind");
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return unknown(seq);
    CellSeq& s = it->second;
    if (n < 0 || n > s.length)
      return refuse(KvStatus::kInvalid, cat("kv cache: cannot rewind sequence ", seq, " of length ", s.length,
                                            " by ", n));
    KvResult r = check_history(s, s.length - n, seq);
    if (!r.ok()) return r;
    s.length -= n;
    drop_from(s, s.length);
    return r;
  }

  KvResult clear(int seq) override {
    check_no_step(step_, "clear");
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return unknown(seq);
    it->second.length = 0;
    drop_from(it->second, 0);
    return KvResult::success();
  }

  KvResult fork(int src, int dst, int64_t upto) override {
    check_no_step(step_, "fork");
    auto it = seqs_.find(src);
    if (it == seqs_.end()) return unknown(src);
    const CellSeq& s = it->second;
    if (dst < 0 || dst == src || upto < 0 || upto > s.length)
      return refuse(KvStatus::kInvalid, cat("kv cache: cannot fork sequence ", src, " (length ", s.length, ") into ",
                                            dst, " up to ", upto));
    KvResult r = check_history(s, upto, src);
    if (!r.ok()) return r;
    CellSeq d;
    d.length = upto;
    d.tables.resize(res_.caches.size());
    const int64_t b = res_.policy.block_size;
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      const Table& t = s.tables[c];
      Table& u = d.tables[c];
      u.first = t.first;
      for (size_t i = 0; i < t.ids.size() && (t.first + int64_t(i)) * b < upto; ++i) {
        u.ids.push_back(t.ids[i]);
        pools_[c].retain(t.ids[i]);
      }
      if (u.ids.empty()) u.first = upto / b;
    }
    auto old = seqs_.find(dst);
    if (old != seqs_.end()) drop_from(old->second, 0);
    seqs_[dst] = std::move(d);
    return r;
  }

  void release_unused() override {
    check_no_step(step_, "release_unused");
    for (Pool& p : pools_) p.trim();
  }

  int64_t length(int seq) const override {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? -1 : it->second.length;
  }

  KvBlockUsage block_usage(std::span<const int> seqs) const override {
    // One full-attention cache (else the first): every full-attention cache's
    // tables change by the same writes, forks and copies, so each holds the
    // same blocks per sequence and one stands for all.
    size_t c = 0;
    for (size_t i = 0; i < res_.caches.size(); ++i)
      if (res_.caches[i].window == 0) {
        c = i;
        break;
      }
    if (pools_.empty()) return {};
    KvBlockUsage u;
    u.total = pools_[c].limit();
    std::vector<uint8_t> seen(size_t(pools_[c].created()), 0);
    for (int seq : seqs) {
      auto it = seqs_.find(seq);
      if (it == seqs_.end()) continue;
      for (int b : it->second.tables[c].ids) {
        u.used += seen[size_t(b)] ? 0 : 1;
        seen[size_t(b)] = 1;
      }
    }
    return u;
  }

  KvMemory memory() const override {
    KvMemory m;
    for (size_t c = 0; c < pools_.size(); ++c) {
      bool ring = res_.caches[c].window > 0;
      (ring ? m.ring_allocated : m.flat_allocated) += pools_[c].allocated_bytes();
      (ring ? m.ring_used : m.flat_used) += pools_[c].used_bytes();
    }
    return m;
  }

 protected:
  KvResult reserve_step(const std::vector<SeqStep>& plan) override {
    for (const SeqStep& st : plan) {
      KvResult r = check_history(seqs_.at(st.seq), st.begin, st.seq);
      if (!r.ok()) return r;
    }
    return plan_blocks(plan, this);
  }

  void commit_step(const std::vector<SeqStep>& plan) override {
    for (const SeqStep& st : plan) seqs_.at(st.seq).length = st.begin + st.n;
  }

  RowSlot write_slot(int c, int seq, int64_t pos) override {
    const CacheLayout& l = res_.caches[c];
    const int64_t b = res_.policy.block_size;
    const Table& t = seqs_.at(seq).tables[c];
    const int id = t.ids.at(pos / b - t.first);
    const int64_t r = pos % b;
    if (!k_blocked_)
      return {pools_[c].k(id) + r * l.row_bytes_k, pools_[c].v(id) + r * l.row_bytes_v, pools_[c].k_head_stride(),
              pools_[c].v_head_stride()};
    return {pools_[c].k(id) + r / kKeyBlock * kKeyBlock * l.row_bytes_k, pools_[c].v(id) + r * l.row_bytes_v,
            pools_[c].k_head_stride(), pools_[c].v_head_stride(), int(r % kKeyBlock)};
  }

  int64_t held_from(int c, int seq) const override {
    if (res_.caches[c].window == 0) return 0;
    const CellSeq& s = seqs_.at(seq);
    const Table& t = s.tables[c];
    return t.ids.empty() ? s.length : t.first * res_.policy.block_size;
  }

  void read_spans(int c, int seq, int64_t lo, int64_t hi, std::vector<KvSpan>* out, int64_t* ks,
                  int64_t* vs) const override {
    const CacheLayout& l = res_.caches[c];
    const int64_t b = res_.policy.block_size;
    const Table& t = seqs_.at(seq).tables[c];
    *ks = pools_[c].k_head_stride();
    *vs = pools_[c].v_head_stride();
    OG_CHECK(lo / b >= t.first && hi / b < t.first + int64_t(t.ids.size()), "kv cache: internal error: cache ", c,
             " of sequence ", seq, " lacks blocks for positions [", lo, ", ", hi, "]");
    int prev = -1;
    for (int64_t j = lo / b; j <= hi / b; prev = t.ids[j - t.first], ++j) {
      const int id = t.ids[j - t.first];
      const int64_t a = std::max(lo, j * b), e = std::min(hi, j * b + b - 1);
      // Blocked K: key r of a block is lane r % kKeyBlock of its r / kKeyBlock-th key block.
      const int64_t r = a - j * b;
      const int lane = k_blocked_ ? int(r % kKeyBlock) : -1;
      const uint8_t* k = pools_[c].k(id) + (k_blocked_ ? r / kKeyBlock * kKeyBlock : r) * l.row_bytes_k;
      const uint8_t* v = pools_[c].v(id) + r * l.row_bytes_v;
      KvSpan* last = out->empty() ? nullptr : &out->back();
      // Where the key after `last` would be (a block starts at lane 0, so a
      // blocked span continues only from a whole last key block).
      const int64_t end = k_blocked_ && last ? last->k_lane + last->n : 0;
      const uint8_t* k_next = !last ? nullptr
                              : k_blocked_ ? last->k + end / kKeyBlock * kKeyBlock * l.row_bytes_k
                                           : last->k + last->n * l.row_bytes_k;
      if (last && pools_[c].same_chunk(id, prev) && k_next == k && (!k_blocked_ || end % kKeyBlock == lane) &&
          last->v + last->n * l.row_bytes_v == v) {
        last->n += e - a + 1;  // the next block of the same chunk: one longer span
      } else {
        out->push_back({k, v, e - a + 1, lane});
      }
    }
  }

 private:
  // Counts, per cache, the blocks the plan needs (new blocks and copies of
  // shared blocks it writes) against those free plus those a ring releases;
  // refuses with kPoolExhausted, or (self != nullptr) applies the plan.
  KvResult plan_blocks(const std::vector<SeqStep>& plan, CellCache* self) const {
    const int64_t b = res_.policy.block_size;
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      int64_t need = 0, returning = 0;
      for (const SeqStep& st : plan) {
        if (st.n == 0) continue;
        const Table& t = seqs_.at(st.seq).tables[c];
        const int64_t end = t.first + int64_t(t.ids.size());
        for (int64_t j = st.begin / b; j <= (st.begin + st.n - 1) / b; ++j)
          need += (j >= end || pools_[c].refs(t.ids[j - t.first]) > 1) ? 1 : 0;
        for (int64_t j = t.first; j < ring_keep_from(int(c), st.begin + st.n) && j < end; ++j)
          returning += pools_[c].refs(t.ids[j - t.first]) == 1 ? 1 : 0;
      }
      if (need > pools_[c].available() + returning)
        return refuse(KvStatus::kPoolExhausted,
                      cat("kv cache: block pool of cache ", c, " exhausted (needs ", need, " blocks, ",
                          pools_[c].available() + returning, " free; raise max_sequences)"));
    }
    if (self != nullptr)
      for (const SeqStep& st : plan)
        if (st.n > 0) self->apply(st);
    return KvResult::success();
  }

  // First logical block a ring cache keeps once the sequence reaches `end`.
  int64_t ring_keep_from(int c, int64_t end) const {
    const CacheLayout& l = res_.caches[c];
    if (l.window == 0) return 0;
    return std::max<int64_t>(0, end - l.slots) / res_.policy.block_size;
  }

  void apply(const SeqStep& st) {
    const int64_t b = res_.policy.block_size;
    CellSeq& s = seqs_.at(st.seq);
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      Table& t = s.tables[c];
      Pool& p = pools_[c];
      const int64_t keep = ring_keep_from(int(c), st.begin + st.n);
      while (!t.ids.empty() && t.first < keep) {
        p.release(t.ids.front());
        t.ids.erase(t.ids.begin());
        ++t.first;
      }
      if (t.ids.empty()) t.first = st.begin / b;
      for (int64_t j = st.begin / b; j <= (st.begin + st.n - 1) / b; ++j) {
        const int64_t i = j - t.first;
        if (i >= int64_t(t.ids.size())) {
          t.ids.push_back(p.alloc());
        } else if (p.refs(t.ids[i]) > 1) {  // copy-on-write
          int fresh = p.alloc();
          p.copy(fresh, t.ids[i]);
          p.release(t.ids[i]);
          t.ids[i] = fresh;
        }
      }
    }
  }

  // Releases the blocks holding only positions >= len.
  void drop_from(CellSeq& s, int64_t len) {
    const int64_t b = res_.policy.block_size;
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      Table& t = s.tables[c];
      while (!t.ids.empty() && (t.first + int64_t(t.ids.size()) - 1) * b >= len) {
        pools_[c].release(t.ids.back());
        t.ids.pop_back();
      }
      if (t.ids.empty()) t.first = len / b;
    }
  }

  KvResult check_history(const CellSeq& s, int64_t len, int seq) const {
    const int64_t b = res_.policy.block_size;
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      const CacheLayout& l = res_.caches[c];
      if (l.window == 0 || len == 0) continue;
      const Table& t = s.tables[c];
      const int64_t need = std::max<int64_t>(0, len - l.window + 1);
      if (need / b < t.first)
        return refuse(KvStatus::kHistoryUnavailable,
                      cat("kv cache: sequence ", seq, " at length ", len, " needs positions from ", need,
                          " of ring cache ", c, " (window ", l.window, ") but they are held only from ",
                          t.first * b),
                      t.first * b);
    }
    return KvResult::success();
  }

  std::vector<Pool> pools_;
  bool k_blocked_;  // K in blocks of kKeyBlock keys (k_blocked(dtype), block_size a multiple of kKeyBlock)
  std::map<int, CellSeq> seqs_;
};

}  // namespace

std::unique_ptr<KvCache> make_cell_cache(const KvGeometry& g, const KvPolicy& p) {
  return std::make_unique<CellCache>(g, p);
}

}  // namespace og::kv
