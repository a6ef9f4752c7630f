// The `reference` kind: the oracle every other kind is tested against. It keeps
// every position of every sequence as f32 (each value rounded through the
// policy's storage dtype, so kinds can be compared at equal dtype), masks the
// window inside attention and accumulates in double. Never refuses history.
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
      std::vector<uint8_t> buf(std::max(row_bytes(res_.policy.dtype, dk), row_bytes(res_.policy.dtype, dv)));
      for (size_t i = 0; i < rows.size(); ++i) {
        RefSeq& s = seqs_.at(rows[i].seq);
        for (int h = 0; h < nkv; ++h) {
          round_trip(k + (i * nkv + h) * dk, dk, buf.data(), &s.k[cache_id][(rows[i].pos * nkv + h) * dk]);
          round_trip(v + (i * nkv + h) * dv, dv, buf.data(), &s.v[cache_id][(rows[i].pos * nkv + h) * dv]);
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
      for (int hq = 0; hq < n_heads; ++hq) {
        const int h = hq / group;
        const float* qh = q + (i * n_heads + hq) * dk;
        w.assign(pos - lo + 1, 0.0);
        double mx = -INFINITY;
        for (int64_t t = lo; t <= pos; ++t) {
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
        for (int64_t t = lo; t <= pos; ++t) {
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
        s.k[c].shrink_to_fit();
        s.v[c].shrink_to_fit();
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

 private:
  static KvResult unknown(int seq) { return refuse(KvStatus::kUnknownSequence, cat("kv cache: unknown sequence ", seq)); }

  void round_trip(const float* x, int dim, uint8_t* buf, float* dst) const {
    encode_row(res_.policy.dtype, x, dim, buf);
    decode_row(res_.policy.dtype, buf, dim, dst);
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
