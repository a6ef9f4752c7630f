// The `reference` kind: the oracle every other kind is tested against. It keeps
// every position of every sequence as f32 (each value rounded through the
// policy's storage dtype, so kinds can be compared at equal dtype), masks the
// window inside attention and accumulates in double. Never refuses history.
// It also keeps each row's stored bytes, which export_positions hands out
// (the same bytes the storing kinds keep) and import_positions takes back.
#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.h"
#include "kv/kv_common.h"
#include "kv/kv_kinds.h"

namespace og::kv {
namespace {

struct RefSeq {
  int64_t length = 0;
  std::vector<std::vector<float>> k, v;  // per cache: [position][n_kv_heads][head_dim]
  std::vector<std::vector<uint8_t>> kb, vb;  // per cache: [position][n_kv_heads][row_bytes] as stored
};

class ReferenceCache final : public KvCache {
 public:
  ReferenceCache(const KvGeometry& g, const KvPolicy& p) : geo_(g), res_(resolve(g, p)) { add_sequence(0); }

  const KvGeometry& geometry() const override { return geo_; }
  const KvPolicy& policy() const override { return res_.policy; }

  KvResult begin_step(std::span<const KvRow> rows) override {
    check_no_step(step_, "begin_step");
    KvResult r = plan_step(rows, res_.policy, [&](int s) { return length(s); }, &step_.plan);
    if (!r.ok()) {
      step_.plan.clear();
      return r;
    }
    for (const SeqStep& s : step_.plan) {
      RefSeq& q = seqs_.at(s.seq);
      for (size_t c = 0; c < res_.caches.size(); ++c) {
        const CacheLayout& l = res_.caches[c];
        q.k[c].resize((s.begin + s.n) * l.n_kv_heads * l.head_dim_k);
        q.v[c].resize((s.begin + s.n) * l.n_kv_heads * l.head_dim_v);
        q.kb[c].resize((s.begin + s.n) * l.n_kv_heads * l.row_bytes_k);
        q.vb[c].resize((s.begin + s.n) * l.n_kv_heads * l.row_bytes_v);
      }
    }
    step_.start(rows, res_.caches.size());
    return r;
  }

  void update_and_attend(int cache_id, std::span<const KvRow> rows, const float* q, int n_heads, const float* k,
                         const float* v, float scale, float* out, const float* sinks = nullptr) override {
    check_attend(step_, res_, cache_id, rows, q, n_heads, k, v, out);
    const CacheLayout& l = res_.caches[cache_id];
    const int dk = l.head_dim_k, dv = l.head_dim_v, nkv = l.n_kv_heads;
    if (k != nullptr) {
      const KvDType dt = res_.policy.dtype;
      for (size_t i = 0; i < rows.size(); ++i) {
        RefSeq& s = seqs_.at(rows[i].seq);
        for (int h = 0; h < nkv; ++h) {
          const int64_t at = rows[i].pos * nkv + h;
          encode_row(dt, k + (i * nkv + h) * dk, dk, &s.kb[cache_id][at * l.row_bytes_k]);
          encode_row(dt, v + (i * nkv + h) * dv, dv, &s.vb[cache_id][at * l.row_bytes_v]);
          store_row(s, cache_id, at);
        }
      }
      step_.written[cache_id] = 1;
    }
    const int group = n_heads / nkv;
    std::vector<double> w;
    std::vector<double> acc(dv);
    for (size_t i = 0; i < rows.size(); ++i) {
      const RefSeq& s = seqs_.at(rows[i].seq);
      const int64_t pos = rows[i].pos;
      const int64_t lo = l.window > 0 ? std::max<int64_t>(0, pos - l.window + 1) : 0;
      const int64_t hi = last_visible(rows[i]);  // pos, or the end of its bidirectional span
      for (int hq = 0; hq < n_heads; ++hq) {
        const int h = hq / group;
        const float* qh = q + (i * n_heads + hq) * dk;
        w.assign(hi - lo + 1, 0.0);
        double mx = -INFINITY;
        for (int64_t t = lo; t <= hi; ++t) {
          const float* kt = &s.k[cache_id][(t * nkv + h) * dk];
          double d = 0;
          for (int e = 0; e < dk; ++e) d += double(qh[e]) * kt[e];
          w[t - lo] = d * scale;
          mx = std::max(mx, w[t - lo]);
        }
        // An attention sink is one more logit in the softmax, with no value.
        if (sinks != nullptr) mx = std::max(mx, double(sinks[hq]));
        double sum = sinks != nullptr ? std::exp(double(sinks[hq]) - mx) : 0.0;
        for (double& x : w) sum += (x = std::exp(x - mx));
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t t = lo; t <= hi; ++t) {
          const float* vt = &s.v[cache_id][(t * nkv + h) * dv];
          for (int e = 0; e < dv; ++e) acc[e] += w[t - lo] * vt[e];
        }
        float* o = out + (i * n_heads + hq) * dv;
        for (int e = 0; e < dv; ++e) o[e] = static_cast<float>(acc[e] / sum);
      }
    }
  }

  void end_step() override {
    check_step_complete(step_, geo_);
    for (const SeqStep& s : step_.plan) seqs_.at(s.seq).length = s.begin + s.n;
    step_.finish();
  }

  void abort_step() override { step_.finish(); }

  KvResult add_sequence(int seq) override {
    check_no_step(step_, "add_sequence");
    if (seq < 0 || seqs_.count(seq)) return refuse(KvStatus::kInvalid, cat("kv cache: cannot add sequence ", seq));
    RefSeq s;
    s.k.resize(res_.caches.size());
    s.v.resize(res_.caches.size());
    s.kb.resize(res_.caches.size());
    s.vb.resize(res_.caches.size());
    seqs_[seq] = std::move(s);
    return KvResult::success();
  }

  KvResult remove_sequence(int seq) override {
    check_no_step(step_, "remove_sequence");
    if (!seqs_.count(seq)) return unknown(seq);
    seqs_.erase(seq);
    return KvResult::success();
  }

  KvResult can_extend(int seq, int64_t n) const override {
    if (!seqs_.count(seq)) return unknown(seq);
    if (n < 0) return refuse(KvStatus::kInvalid, cat("kv cache: can_extend by ", n));
    if (length(seq) + n > res_.policy.max_capacity)
      return refuse(KvStatus::kCapacityExceeded, cat("kv cache: sequence ", seq, " would hold ", length(seq) + n,
                                                     " positions, more than capacity=", res_.policy.max_capacity));
    return KvResult::success();
  }

  KvResult rewind(int seq, int64_t n) override {
    check_no_step(step_, "rewind");
    if (!seqs_.count(seq)) return unknown(seq);
    RefSeq& s = seqs_[seq];
    if (n < 0 || n > s.length)
      return refuse(KvStatus::kInvalid, cat("kv cache: cannot rewind sequence ", seq, " of length ", s.length,
                                            " by ", n));
    s.length -= n;
    return KvResult::success();
  }

  KvResult clear(int seq) override {
    check_no_step(step_, "clear");
    if (!seqs_.count(seq)) return unknown(seq);
    seqs_[seq].length = 0;
    return KvResult::success();
  }

  KvResult fork(int src, int dst, int64_t upto) override {
    check_no_step(step_, "fork");
    if (!seqs_.count(src)) return unknown(src);
    if (dst < 0 || dst == src || upto < 0 || upto > seqs_[src].length)
      return refuse(KvStatus::kInvalid, cat("kv cache: cannot fork sequence ", src, " (length ", seqs_[src].length,
                                            ") into ", dst, " up to ", upto));
    RefSeq copy = seqs_[src];
    copy.length = upto;
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      const CacheLayout& l = res_.caches[c];
      copy.k[c].resize(upto * l.n_kv_heads * l.head_dim_k);
      copy.v[c].resize(upto * l.n_kv_heads * l.head_dim_v);
      copy.kb[c].resize(upto * l.n_kv_heads * l.row_bytes_k);
      copy.vb[c].resize(upto * l.n_kv_heads * l.row_bytes_v);
    }
    seqs_[dst] = std::move(copy);
    return KvResult::success();
  }

  void release_unused() override {
    check_no_step(step_, "release_unused");
    for (auto& [id, s] : seqs_) {
      for (size_t c = 0; c < res_.caches.size(); ++c) {
        const CacheLayout& l = res_.caches[c];
        s.k[c].resize(s.length * l.n_kv_heads * l.head_dim_k);
        s.v[c].resize(s.length * l.n_kv_heads * l.head_dim_v);
        s.kb[c].resize(s.length * l.n_kv_heads * l.row_bytes_k);
        s.vb[c].resize(s.length * l.n_kv_heads * l.row_bytes_v);
        s.k[c].shrink_to_fit();
        s.v[c].shrink_to_fit();
        s.kb[c].shrink_to_fit();
        s.vb[c].shrink_to_fit();
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
        int64_t alloc = int64_t(s.k[c].capacity() + s.v[c].capacity()) * 4;
        int64_t used = s.length * l.n_kv_heads * (l.head_dim_k + l.head_dim_v) * 4;
        (l.window > 0 ? m.ring_allocated : m.flat_allocated) += alloc;
        (l.window > 0 ? m.ring_used : m.flat_used) += used;
      }
    }
    return m;
  }

  std::string describe() const override { return describe_text("reference", geo_, res_); }

  KvResult export_positions(int seq, int64_t begin, int64_t end, std::vector<uint8_t>* out) const override {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return unknown(seq);
    const RefSeq& s = it->second;
    if (begin < 0 || begin > end || end > s.length)
      return refuse(KvStatus::kInvalid, cat("kv cache: cannot export positions [", begin, ", ", end,
                                            ") of sequence ", seq, " (length ", s.length, ")"));
    out->clear();
    for (size_t c = 0; c < res_.caches.size(); ++c) {
      const CacheLayout& l = res_.caches[c];
      for (int64_t p = begin; p < end; ++p)
        for (int h = 0; h < l.n_kv_heads; ++h) {
          const int64_t at = p * l.n_kv_heads + h;
          out->insert(out->end(), s.kb[c].begin() + at * l.row_bytes_k, s.kb[c].begin() + (at + 1) * l.row_bytes_k);
          out->insert(out->end(), s.vb[c].begin() + at * l.row_bytes_v, s.vb[c].begin() + (at + 1) * l.row_bytes_v);
        }
    }
    return KvResult::success();
  }

  KvResult import_positions(int seq, std::span<const uint8_t> data) override {
    check_no_step(step_, "import_positions");
    if (!seqs_.count(seq)) return unknown(seq);
    const int64_t pb = kv_position_bytes(geo_, res_.policy), len = length(seq);
    if (int64_t(data.size()) % pb != 0)
      return refuse(KvStatus::kInvalid, cat("kv cache: cannot import ", data.size(),
                                            " bytes: not a whole number of ", pb, "-byte positions"));
    const int64_t n = int64_t(data.size()) / pb;
    KvResult r = can_extend(seq, n);
    if (!r.ok() || n == 0) return r;
    std::vector<KvRow> rows;
    for (int64_t p = len; p < len + n; ++p) rows.push_back({seq, p});
    // One step per max_write rows, as a forward would write them.
    for (int64_t a = 0; a < n; a += res_.policy.max_write) {
      const int64_t m = std::min(res_.policy.max_write, n - a);
      r = begin_step(std::span<const KvRow>(rows).subspan(size_t(a), size_t(m)));
      OG_CHECK(r.ok(), "kv cache: internal error: import refused after can_extend: ", r.message);
      RefSeq& s = seqs_.at(seq);
      const uint8_t* src = data.data();
      for (size_t c = 0; c < res_.caches.size(); ++c) {
        const CacheLayout& l = res_.caches[c];
        const int64_t rb = l.row_bytes_k + l.row_bytes_v;
        for (int64_t p = len + a; p < len + a + m; ++p)
          for (int h = 0; h < l.n_kv_heads; ++h) {
            const int64_t at = p * l.n_kv_heads + h;
            const uint8_t* row = src + ((p - len) * l.n_kv_heads + h) * rb;
            std::copy_n(row, l.row_bytes_k, &s.kb[c][at * l.row_bytes_k]);
            std::copy_n(row + l.row_bytes_k, l.row_bytes_v, &s.vb[c][at * l.row_bytes_v]);
            store_row(s, int(c), at);
          }
        src += n * l.n_kv_heads * rb;
        step_.written[c] = 1;
      }
      end_step();
    }
    return KvResult::success();
  }

 private:
  static KvResult unknown(int seq) { return refuse(KvStatus::kUnknownSequence, cat("kv cache: unknown sequence ", seq)); }

  // The f32 values of row `at` ([position][head]) of cache c from its stored bytes.
  void store_row(RefSeq& s, int c, int64_t at) const {
    const CacheLayout& l = res_.caches[c];
    decode_row(res_.policy.dtype, &s.kb[c][at * l.row_bytes_k], l.head_dim_k, &s.k[c][at * l.head_dim_k]);
    decode_row(res_.policy.dtype, &s.vb[c][at * l.row_bytes_v], l.head_dim_v, &s.v[c][at * l.head_dim_v]);
  }

  KvGeometry geo_;
  Resolved res_;
  std::map<int, RefSeq> seqs_;
  StepState step_;
};

}  // namespace

std::unique_ptr<KvCache> make_reference_cache(const KvGeometry& g, const KvPolicy& p) {
  return std::make_unique<ReferenceCache>(g, p);
}

}  // namespace og::kv
