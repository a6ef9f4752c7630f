// Attention within one whole-sequence step (see step_attend.h): the fast form
// folds each query group over its visible rows with kv_attend's kernels (the
// step's K/V read in place as f32 spans, rows spread over the thread pool);
// the reference form is a plain double-precision softmax.
#include "kv/step_attend.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kv/kv_attend.h"

namespace og::kv {
namespace {

// Each row's sequence start (row index) and length, from rows that passed check_whole_sequences.
void sequence_extents(std::span<const KvRow> rows, std::vector<int64_t>& first, std::vector<int64_t>& len) {
  const int64_t n = static_cast<int64_t>(rows.size());
  first.assign(static_cast<size_t>(n), 0);
  len.assign(static_cast<size_t>(n), 0);
  for (int64_t b = 0; b < n;) {
    int64_t e = b + 1;
    while (e < n && rows[e].seq == rows[b].seq) ++e;
    for (int64_t i = b; i < e; ++i) first[i] = b, len[i] = e - b;
    b = e;
  }
}

void check_shape(const StepAttendShape& s) {
  OG_CHECK(s.n_heads > 0 && s.n_kv_heads > 0 && s.n_heads % s.n_kv_heads == 0 && s.head_dim_k > 0 &&
               s.head_dim_v > 0 && s.window >= 0,
           "step attention: bad shape (heads ", s.n_heads, "/", s.n_kv_heads, ", dims ", s.head_dim_k, "/",
           s.head_dim_v, ", window ", s.window, ")");
}

}  // namespace

void step_visible(const StepAttendShape& s, int64_t pos, int64_t n, int64_t* lo, int64_t* hi) {
  if (s.causal) {
    *hi = pos;
    *lo = s.window > 0 ? std::max<int64_t>(0, pos - s.window + 1) : 0;
  } else if (s.window > 0) {
    const int64_t half = s.window / 2;
    *lo = std::max<int64_t>(0, pos - half);
    *hi = std::min<int64_t>(n - 1, pos + half);
  } else {
    *lo = 0;
    *hi = n - 1;
  }
}

void check_whole_sequences(std::span<const KvRow> rows) {
  std::set<int> seen;
  for (size_t i = 0; i < rows.size(); ++i) {
    const bool starts = i == 0 || rows[i].seq != rows[i - 1].seq;
    if (starts) {
      OG_CHECK(seen.insert(rows[i].seq).second, "step attention: sequence ", rows[i].seq,
               " is not consecutive in the step");
      OG_CHECK(rows[i].pos == 0, "step attention: sequence ", rows[i].seq, " starts at position ", rows[i].pos,
               ", not 0 (a whole-sequence step holds every sequence from its start)");
    } else {
      OG_CHECK(rows[i].pos == rows[i - 1].pos + 1, "step attention: sequence ", rows[i].seq, " position ",
               rows[i].pos, " does not follow ", rows[i - 1].pos);
    }
  }
}

void attend_in_step(std::span<const KvRow> rows, const StepAttendShape& s, const float* q, const float* k,
                    const float* v, float scale, float* out, const float* sinks) {
  check_shape(s);
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<int64_t> first, len;
  sequence_extents(rows, first, len);
  const int g = s.n_heads / s.n_kv_heads, dk = s.head_dim_k, dv = s.head_dim_v, nkv = s.n_kv_heads;
  const int64_t rbk = int64_t{nkv} * dk * 4, rbv = int64_t{nkv} * dv * 4;
  const int64_t tasks = n * nkv;  // (row, KV head)
  auto run = [&](int64_t t0, int64_t t1) {
    thread_local std::vector<float> scratch;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i = t / nkv;
      const int h = static_cast<int>(t % nkv);
      int64_t lo = 0, hi = 0;
      step_visible(s, rows[i].pos, len[i], &lo, &hi);
      const int64_t r0 = first[i] + lo;  // the first visible row in the step
      const KvSpan span{reinterpret_cast<const uint8_t*>(k + (r0 * nkv + h) * dk),
                        reinterpret_cast<const uint8_t*>(v + (r0 * nkv + h) * dv), hi - lo + 1, -1};
      attend(KvDType::F32, q + (i * s.n_heads + h * g) * dk, g, dk, dv, std::span(&span, 1), rbk, rbv, scale,
             scratch, out + (i * s.n_heads + h * g) * dv, sinks != nullptr ? sinks + h * g : nullptr);
    }
  };
  if (tasks >= 4) thread_pool().parallel_for(tasks, run);
  else run(0, tasks);
}

void attend_in_step_ref(std::span<const KvRow> rows, const StepAttendShape& s, const float* q, const float* k,
                        const float* v, float scale, float* out, const float* sinks) {
  check_shape(s);
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<int64_t> first, len;
  sequence_extents(rows, first, len);
  const int g = s.n_heads / s.n_kv_heads, dk = s.head_dim_k, dv = s.head_dim_v, nkv = s.n_kv_heads;
  std::vector<double> w, acc(static_cast<size_t>(dv));
  for (int64_t i = 0; i < n; ++i) {
    int64_t lo = 0, hi = 0;
    step_visible(s, rows[i].pos, len[i], &lo, &hi);
    for (int hq = 0; hq < s.n_heads; ++hq) {
      const int h = hq / g;
      const float* qh = q + (i * s.n_heads + hq) * dk;
      w.assign(static_cast<size_t>(hi - lo + 1), 0.0);
      double mx = -INFINITY;
      for (int64_t j = lo; j <= hi; ++j) {
        const float* kj = k + ((first[i] + j) * nkv + h) * dk;
        double d = 0;
        for (int e = 0; e < dk; ++e) d += double(qh[e]) * kj[e];
        w[j - lo] = d * scale;
        mx = std::max(mx, w[j - lo]);
      }
      if (sinks != nullptr) mx = std::max(mx, double(sinks[hq]));  // a sink: a logit with no value
      double sum = sinks != nullptr ? std::exp(double(sinks[hq]) - mx) : 0.0;
      for (double& x : w) sum += (x = std::exp(x - mx));
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = lo; j <= hi; ++j) {
        const float* vj = v + ((first[i] + j) * nkv + h) * dv;
        for (int e = 0; e < dv; ++e) acc[e] += w[j - lo] * vj[e];
      }
      float* o = out + (i * s.n_heads + hq) * dv;
      for (int e = 0; e < dv; ++e) o[e] = static_cast<float>(acc[e] / sum);
    }
  }
}

}  // namespace og::kv
