// The step protocol and the update_and_attend driver shared by the storing kinds.
#include "kv/kv_store_base.h"

#include <algorithm>

#include "base/thread_pool.h"

namespace og::kv {

StoreCacheBase::StoreCacheBase(const KvGeometry& g, const KvPolicy& p, const char* kind)
    : geo_(g), res_(resolve(g, p)), kind_(kind) {}

KvResult StoreCacheBase::begin_step(std::span<const KvRow> rows) {
  check_no_step(step_, "begin_step");
  std::vector<SeqStep> plan;
  KvResult r = plan_step(rows, res_.policy, [&](int s) { return length(s); }, &plan);
  if (!r.ok()) return r;
  r = reserve_step(plan);
  if (!r.ok()) return r;
  step_.start(rows, std::move(plan), res_.caches.size());
  return r;
}

void StoreCacheBase::end_step() {
  check_step_complete(step_, geo_);
  commit_step(step_.plan);
  step_.finish();
}

void StoreCacheBase::abort_step() { step_.finish(); }

KvResult StoreCacheBase::check_capacity(int seq, int64_t n) const {
  if (length(seq) < 0) return unknown(seq);
  if (n < 0) return refuse(KvStatus::kInvalid, cat("kv cache: can_extend by ", n));
  if (length(seq) + n > res_.policy.max_capacity)
    return refuse(KvStatus::kCapacityExceeded, cat("kv cache: sequence ", seq, " would hold ", length(seq) + n,
                                                   " positions, more than capacity=", res_.policy.max_capacity));
  return KvResult::success();
}

void StoreCacheBase::update_and_attend(int cache_id, std::span<const KvRow> rows, const float* q, int n_heads,
                                       const float* k, const float* v, float scale, float* out) {
  check_attend(step_, res_, cache_id, rows, q, n_heads, k, v, out);
  const CacheLayout& l = res_.caches[cache_id];
  const KvDType dt = res_.policy.dtype;
  const int nkv = l.n_kv_heads, dk = l.head_dim_k, dv = l.head_dim_v;
  if (k != nullptr) {
    for (size_t i = 0; i < rows.size(); ++i) {
      RowSlot s = write_slot(cache_id, rows[i].seq, rows[i].pos);
      for (int h = 0; h < nkv; ++h) {
        encode_row(dt, k + (i * nkv + h) * dk, dk, s.k + h * s.k_head_stride);
        encode_row(dt, v + (i * nkv + h) * dv, dv, s.v + h * s.v_head_stride);
      }
    }
    step_.written[cache_id] = 1;
  }
  const int group = n_heads / nkv;
  const int64_t n_tasks = int64_t(rows.size()) * nkv;
  int64_t work = 0;
  for (const KvRow& r : rows) work += (l.window > 0 ? std::min<int64_t>(r.pos + 1, l.window) : r.pos + 1);
  work *= int64_t{n_heads} * (dk + dv);
  auto run = [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> scratch;
    thread_local std::vector<KvSpan> spans, head_spans;
    int64_t cur_row = -1, ks = 0, vs = 0;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i = t / nkv;
      const int h = int(t % nkv);
      const KvRow& r = rows[i];
      if (i != cur_row) {
        int64_t lo = l.window > 0 ? std::max<int64_t>(0, r.pos - l.window + 1) : 0;
        spans.clear();
        read_spans(cache_id, r.seq, lo, r.pos, &spans, &ks, &vs);
        cur_row = i;
      }
      head_spans.assign(spans.begin(), spans.end());
      for (KvSpan& s : head_spans) s.k += h * ks, s.v += h * vs;
      const int64_t qh = i * n_heads + int64_t{h} * group;
      attend(dt, q + qh * dk, group, dk, dv, head_spans, l.row_bytes_k, l.row_bytes_v, scale, scratch,
             out + qh * dv);
    }
  };
  if (n_tasks >= 2 && work >= (int64_t{1} << 18)) thread_pool().parallel_for(n_tasks, run);
  else run(0, n_tasks);
}

}  // namespace og::kv
