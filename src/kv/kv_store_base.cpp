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
  attend_rows(cache_id, rows, q, n_heads, scale, out);
}

void StoreCacheBase::attend_rows(int cache_id, std::span<const KvRow> rows, const float* q, int n_heads, float scale,
                                 float* out) const {
  const CacheLayout& l = res_.caches[cache_id];
  const int nkv = l.n_kv_heads, dk = l.head_dim_k, dv = l.head_dim_v;
  const int group = n_heads / nkv;
  auto first_pos = [&](const KvRow& r) { return l.window > 0 ? std::max<int64_t>(0, r.pos - l.window + 1) : 0; };
  // Tasks: (row, KV head), row-major; too few of them to keep the pool busy
  // and long histories are split into position ranges.
  std::vector<int64_t> task_rows;
  task_rows.reserve(rows.size() * nkv);
  int64_t work = 0;
  for (const KvRow& r : rows) {
    work += r.pos + 1 - first_pos(r);
    for (int h = 0; h < nkv; ++h) task_rows.push_back(r.pos + 1 - first_pos(r));
  }
  work *= int64_t{n_heads} * (dk + dv);
  std::vector<AttendPart> parts;
  const int64_t n_slots = plan_attend_parts(task_rows, thread_pool().size(), &parts);
  const int64_t state_n = attend_state_floats(group, dv);
  std::vector<float> partials(size_t(n_slots * state_n));
  const AttendKernels& kr = attend_kernels(res_.policy.dtype);
  auto run = [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> scratch, state;
    thread_local std::vector<KvSpan> spans, head_spans;
    state.resize(size_t(state_n));
    int64_t cur_row = -1, cur_lo = -1, ks = 0, vs = 0;
    for (int64_t i = i0; i < i1; ++i) {
      const AttendPart& pt = parts[size_t(i)];
      const int64_t row = pt.task / nkv;
      const int h = int(pt.task % nkv);
      const int64_t lo = first_pos(rows[size_t(row)]) + pt.begin;
      if (row != cur_row || lo != cur_lo) {
        spans.clear();
        read_spans(cache_id, rows[size_t(row)].seq, lo, lo + pt.n - 1, &spans, &ks, &vs);
        cur_row = row, cur_lo = lo;
      }
      head_spans.assign(spans.begin(), spans.end());
      for (KvSpan& sp : head_spans) sp.k += h * ks, sp.v += h * vs;
      const int64_t qh = row * n_heads + int64_t{h} * group;
      float* st = pt.slot >= 0 ? partials.data() + pt.slot * state_n : state.data();
      attend_state_reset(st, group, dv);
      attend_fold(kr, q + qh * dk, group, dk, dv, head_spans, l.row_bytes_k, l.row_bytes_v, scale, scratch, st);
      if (pt.slot < 0) attend_state_finish(st, group, dv, out + qh * dv);
    }
  };
  const int64_t n_parts = int64_t(parts.size());
  if (n_parts >= 2 && work >= (int64_t{1} << 18)) thread_pool().parallel_for(n_parts, run);
  else run(0, n_parts);
  // Merge the pieces of each split task, in position order (never inside the parallel_for).
  for (size_t i = 0; i < parts.size();) {
    size_t e = i + 1;
    if (parts[i].slot >= 0) {
      float* first = partials.data() + parts[i].slot * state_n;
      for (; e < parts.size() && parts[e].task == parts[i].task; ++e)
        attend_state_merge(first, partials.data() + parts[e].slot * state_n, group, dv);
      const int64_t t = parts[i].task, qh = (t / nkv) * n_heads + (t % nkv) * group;
      attend_state_finish(first, group, dv, out + qh * dv);
    }
    i = e;
  }
}

}  // namespace og::kv
