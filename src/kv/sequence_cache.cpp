// The `sequence` and `batched-sequence` kinds. Each sequence owns its storage:
// per flat cache a buffer [n_kv_heads][capacity][row] that starts at the
// initial capacity and doubles up to max_capacity; per ring cache a buffer
// [n_kv_heads][cap][row] that starts at min(initial capacity, slots) and
// doubles up to slots = min(window + max_write - 1, max_capacity) (see
// kv_common.h). A ring wraps only once it holds all its slots (until then
// every position is below cap, so slot = position % cap = position and growing
// copies rows as a flat cache does); slot = position % slots, and each slot's
// position recorded so that lost history is detected, never read.
// K of F32, F16 and BF16 (kv_common.h k_blocked) is kept in blocks of
// kKeyBlock keys (kv_attend.h KvSpan): a head's region holds cap rounded up
// to whole blocks, and slot i is lane i % kKeyBlock of block i / kKeyBlock.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "kv/kv_buffer.h"
#include "kv/kv_kinds.h"
#include "kv/kv_store_base.h"

namespace og::kv {
namespace {

struct CacheStore {
  // [n_kv_heads][cap][row_bytes] (kv_buffer.h); blocked K (k_blocked):
  // [n_kv_heads][k_rows(cap) / kKeyBlock][dk][kKeyBlock] values.
  KvBuffer k, v;
  int64_t cap = 0;                // rows per head
  std::vector<int64_t> slot_pos;  // ring: position held by each slot, -1 = none
};

struct SeqStore {
  int64_t length = 0;
  std::vector<CacheStore> caches;
};

class SequenceCache final : public StoreCacheBase {
 public:
  SequenceCache(const KvGeometry& g, const KvPolicy& p, bool batched)
      : StoreCacheBase(g, p, batched ? "batched-sequence" : "sequence"),
        batched_(batched),
        k_blocked_(k_blocked(res_.policy.dtype)) {
    seqs_[0] = new_store();
  }

  KvResult add_sequence(int seq) override {
    check_no_step(step_, "add_sequence");
    if (!batched_ && seq != 0)
      return refuse(KvStatus::kInvalid, cat("kv cache: the sequence kind holds only sequence 0 (asked for ", seq,
                                            "); use batched-sequence or batched-cell"));
    if (seq < 0 || seqs_.count(seq)) return refuse(KvStatus::kInvalid, cat("kv cache: cannot add sequence ", seq));
    seqs_[seq] = new_store();
    return KvResult::success();
  }

  KvResult remove_sequence(int seq) override {
    check_no_step(step_, "remove_sequence");
    if (!seqs_.count(seq)) return unknown(seq);
    seqs_.erase(seq);
    return KvResult::success();
  }

  KvResult can_extend(int seq, int64_t n) const override { return check_capacity(seq, n); }

  KvResult rewind(int seq, int64_t n) override {
    check_no_step(step_, "rewind");
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return unknown(seq);
    SeqStore& s = it->second;
    if (n < 0 || n > s.length)
      return refuse(KvStatus::kInvalid, cat("kv cache: cannot rewind sequence ", seq, " of length ", s.length,
                                            " by ", n));
    KvResult r = check_history(s, s.length - n, seq);
    if (!r.ok()) return r;
    s.length -= n;
    return r;
  }

  KvResult clear(int seq) override {
    check_no_step(step_, "clear");
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return unknown(seq);
    it->second.length = 0;
    for (CacheStore& c : it->second.caches) std::fill(c.slot_pos.begin(), c.slot_pos.end(), -1);
    return KvResult::success();
  }

  KvResult fork(int src, int dst, int64_t upto) override {
    check_no_step(step_, "fork");
    if (!batched_)
      return refuse(KvStatus::kInvalid, "kv cache: fork needs a batched kind (batched-sequence or batched-cell)");
    auto it = seqs_.find(src);
    if (it == seqs_.end()) return unknown(src);
    const SeqStore& s = it->second;
    if (dst < 0 || dst == src || upto < 0 || upto > s.length)
      return refuse(KvStatus::kInvalid, cat("kv cache: cannot fork sequence ", src, " (length ", s.length, ") into ",
                                            dst, " up to ", upto));
    KvResult r = check_history(s, upto, src);
    if (!r.ok()) return r;
    SeqStore d;
    d.length = upto;
    d.caches.resize(res_.caches.size());
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      const CacheLayout& l = res_.caches[c];
      if (l.window > 0) {
        d.caches[c] = s.caches[c];  // the whole ring: positions >= upto are never read before rewritten
        if (d.caches[c].cap == 0) grow_ring(l, CacheStore(), 0, ring_start(l), &d.caches[c]);
      } else {
        resize_flat(l, s.caches[c], upto, std::max(upto, std::min(res_.policy.initial_capacity, l_max())),
                    &d.caches[c]);
      }
    }
    seqs_[dst] = std::move(d);
    return r;
  }

  void release_unused() override {
    check_no_step(step_, "release_unused");
    for (auto& [id, s] : seqs_) {
      for (size_t c = 0; c < res_.caches.size(); ++c) {
        CacheStore& cs = s.caches[c];
        if (res_.caches[c].window > 0) {
          if (s.length == 0) cs = CacheStore();
        } else if (cs.cap > s.length) {
          CacheStore shrunk;
          resize_flat(res_.caches[c], cs, s.length, s.length, &shrunk);
          cs = std::move(shrunk);
        }
      }
    }
  }

  int64_t length(int seq) const override {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? -1 : it->second.length;
  }

  KvMemory memory() const override {
    KvMemory m;
    for (const auto& [id, s] : seqs_) {
      for (size_t c = 0; c < res_.caches.size(); ++c) {
        const CacheLayout& l = res_.caches[c];
        const CacheStore& cs = s.caches[c];
        int64_t alloc = int64_t(cs.k.size() + cs.v.size());
        if (l.window > 0) {
          m.ring_allocated += alloc;
          m.ring_used += std::min(s.length, cs.cap) * l.position_bytes();
        } else {
          m.flat_allocated += alloc;
          m.flat_used += s.length * l.position_bytes();
        }
      }
    }
    return m;
  }

 protected:
  KvResult reserve_step(const std::vector<SeqStep>& plan) override {
    for (const SeqStep& st : plan) {
      KvResult r = check_history(seqs_.at(st.seq), st.begin, st.seq);
      if (!r.ok()) return r;
    }
    for (const SeqStep& st : plan) {
      SeqStore& s = seqs_.at(st.seq);
      const int64_t need = st.begin + st.n;
      for (size_t c = 0; c < res_.caches.size(); ++c) {
        const CacheLayout& l = res_.caches[c];
        CacheStore& cs = s.caches[c];
        if (l.window > 0) {
          if (cs.cap < l.slots && (cs.cap == 0 || cs.cap < need)) {
            // Not wrapped yet (every position held is below cap): double up to the slots.
            int64_t cap = std::max<int64_t>(cs.cap, ring_start(l));
            while (cap < need && cap < l.slots) cap *= 2;
            CacheStore grown;
            grow_ring(l, cs, std::min(s.length, cs.cap), std::min(cap, l.slots), &grown);
            cs = std::move(grown);
          }
        } else if (cs.cap < need) {
          int64_t cap = std::max<int64_t>(cs.cap, std::min(res_.policy.initial_capacity, l_max()));
          while (cap < need) cap *= 2;
          CacheStore grown;
          resize_flat(l, cs, s.length, std::min(cap, l_max()), &grown);
          cs = std::move(grown);
        }
      }
    }
    return KvResult::success();
  }

  void commit_step(const std::vector<SeqStep>& plan) override {
    for (const SeqStep& st : plan) seqs_.at(st.seq).length = st.begin + st.n;
  }

  RowSlot write_slot(int c, int seq, int64_t pos) override {
    const CacheLayout& l = res_.caches[c];
    CacheStore& cs = seqs_.at(seq).caches[c];
    int64_t idx = pos;
    if (l.window > 0) {
      idx = pos % cs.cap;
      cs.slot_pos[idx] = pos;
    }
    const int64_t ks = k_rows(cs.cap) * l.row_bytes_k, vs = cs.cap * l.row_bytes_v;
    if (!k_blocked_) return {cs.k.data() + idx * l.row_bytes_k, cs.v.data() + idx * l.row_bytes_v, ks, vs};
    return {cs.k.data() + (idx / kKeyBlock) * kKeyBlock * l.row_bytes_k, cs.v.data() + idx * l.row_bytes_v, ks, vs,
            int(idx % kKeyBlock)};
  }

  int64_t held_from(int c, int seq) const override {
    if (res_.caches[c].window == 0) return 0;
    const SeqStore& s = seqs_.at(seq);
    const CacheStore& cs = s.caches[c];
    int64_t x = s.length - 1;
    while (x >= 0 && cs.cap > 0 && cs.slot_pos[x % cs.cap] == x) --x;
    return x + 1;
  }

  void read_spans(int c, int seq, int64_t lo, int64_t hi, std::vector<KvSpan>* out, int64_t* ks,
                  int64_t* vs) const override {
    const CacheLayout& l = res_.caches[c];
    const CacheStore& cs = seqs_.at(seq).caches[c];
    *ks = k_rows(cs.cap) * l.row_bytes_k;
    *vs = cs.cap * l.row_bytes_v;
    const int64_t n = hi - lo + 1;
    int64_t a = lo;
    if (l.window > 0) {
      OG_CHECK(n <= cs.cap && cs.slot_pos[lo % cs.cap] == lo && cs.slot_pos[hi % cs.cap] == hi,
               "kv cache: internal error: ring of cache ", c, " lost positions [", lo, ", ", hi, "]");
      a = lo % cs.cap;
    }
    const int64_t first = std::min(n, cs.cap - a);
    if (k_blocked_) {
      out->push_back({cs.k.data() + (a / kKeyBlock) * kKeyBlock * l.row_bytes_k, cs.v.data() + a * l.row_bytes_v,
                      first, int(a % kKeyBlock)});
      if (first < n) out->push_back({cs.k.data(), cs.v.data(), n - first, 0});
    } else {
      out->push_back({cs.k.data() + a * l.row_bytes_k, cs.v.data() + a * l.row_bytes_v, first});
      if (first < n) out->push_back({cs.k.data(), cs.v.data(), n - first});
    }
  }

 private:
  int64_t l_max() const { return res_.policy.max_capacity; }
  // K rows a head's region holds for `rows` slots: whole blocks when K is blocked.
  int64_t k_rows(int64_t rows) const { return k_blocked_ ? (rows + kKeyBlock - 1) / kKeyBlock * kKeyBlock : rows; }

  SeqStore new_store() const {
    SeqStore s;
    s.caches.resize(res_.caches.size());
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      const CacheLayout& l = res_.caches[c];
      if (l.window > 0) grow_ring(l, CacheStore(), 0, ring_start(l), &s.caches[c]);
      else resize_flat(l, CacheStore(), 0, res_.policy.initial_capacity, &s.caches[c]);
    }
    return s;
  }

  // Rows a ring starts with: the initial capacity, at most its slots.
  int64_t ring_start(const CacheLayout& l) const {
    return std::max<int64_t>(1, std::min(res_.policy.initial_capacity, l.slots));
  }

  // out = a ring of `cap` rows per head holding rows [0, keep) of `from`, which
  // has not wrapped (slot = position for every held position).
  void grow_ring(const CacheLayout& l, const CacheStore& from, int64_t keep, int64_t cap, CacheStore* out) const {
    resize_flat(l, from, keep, cap, out);
    out->slot_pos.assign(cap, -1);
    const int64_t held = std::min<int64_t>(keep, int64_t(from.slot_pos.size()));
    if (held > 0) std::copy_n(from.slot_pos.begin(), held, out->slot_pos.begin());
  }

  // out = a flat store of `cap` rows per head holding the first `keep` rows of `from`.
  // Blocked K copies whole blocks (the unwritten lanes of the last one too).
  void resize_flat(const CacheLayout& l, const CacheStore& from, int64_t keep, int64_t cap, CacheStore* out) const {
    out->cap = cap;
    out->k.assign(l.n_kv_heads * k_rows(cap) * l.row_bytes_k);
    out->v.assign(l.n_kv_heads * cap * l.row_bytes_v);
    out->slot_pos.clear();
    if (keep == 0) return;
    for (int h = 0; h < l.n_kv_heads; ++h) {
      std::memcpy(out->k.data() + h * k_rows(cap) * l.row_bytes_k, from.k.data() + h * k_rows(from.cap) * l.row_bytes_k,
                  k_rows(keep) * l.row_bytes_k);
      std::memcpy(out->v.data() + h * cap * l.row_bytes_v, from.v.data() + h * from.cap * l.row_bytes_v,
                  keep * l.row_bytes_v);
    }
  }

  // Would a sequence of `len` positions (the next query at position len)
  // find every ring position its window needs?
  KvResult check_history(const SeqStore& s, int64_t len, int seq) const {
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      const CacheLayout& l = res_.caches[c];
      if (l.window == 0 || len == 0) continue;
      const CacheStore& cs = s.caches[c];
      const int64_t need = std::max<int64_t>(0, len - l.window + 1);
      auto held = [&](int64_t x) { return cs.cap > 0 && cs.slot_pos[x % cs.cap] == x; };
      int64_t x = len - 1;
      while (x >= need && held(x)) --x;
      if (x < need) continue;
      while (x >= 0 && held(x)) --x;
      const int64_t held_from = x + 1;  // [held_from, len) is held
        return refuse(KvStatus::kHistoryUnavailable,
                      cat("kv cache: sequence ", seq, " at length ", len, " needs positions from ", need,
                          " of ring cache ", c, " (window ", l.window, ") but they are held only from ", held_from),
                      held_from);
    }
    return KvResult::success();
  }

  bool batched_;
  bool k_blocked_;  // K in blocks of kKeyBlock keys (k_blocked(dtype))
  std::map<int, SeqStore> seqs_;
};

}  // namespace

std::unique_ptr<KvCache> make_sequence_cache(const KvGeometry& g, const KvPolicy& p, bool batched) {
  return std::make_unique<SequenceCache>(g, p, batched);
}

}  // namespace og::kv
