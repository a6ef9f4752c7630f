// The one-pass span-level attention driver (blocks of scores, online softmax,
// weighted sum of V into a mergeable state) over the kernels of kernels/, and
// the plan that splits long histories across threads.
#include "kv/kv_attend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "kv/kv_common.h"
#include "tensor/dtype.h"

namespace og::kv {

const AttendKernels& attend_kernels(KvDType t) { return kernels::attend_kernels(storage_dtype(t)); }

void attend_state_reset(float* state, int g, int dv) {
  std::fill(state, state + g, -std::numeric_limits<float>::infinity());
  std::fill(state + g, state + attend_state_floats(g, dv), 0.f);
}

namespace {

// Online softmax over one block of nb scores per head (s[j * B + i]): raises
// the running max where the block's is higher (rescaling l and acc), then
// s = exp(s - m) and l += Σ s.
void softmax_block(const AttendKernels& kr, float* s, int64_t nb, int g, int dv, float* st) {
  float* m = st;
  float* l = st + g;
  float* acc = st + 2 * g;
  for (int j = 0; j < g; ++j) {
    float* sj = s + j * kAttendBlock;
    const float bm = kr.max(sj, nb);
    if (bm > m[j]) {
      const float f = std::exp(m[j] - bm);  // 0 while the state is empty
      l[j] *= f;
      float* a = acc + int64_t{j} * dv;
      for (int e = 0; e < dv; ++e) a[e] *= f;
      m[j] = bm;
    }
    l[j] += kr.exp_sum(sj, nb, m[j]);
  }
}

}  // namespace

void attend_fold_rows(const AttendKernels& kr, const float* q, int m, int g, int dk, int dv,
                      std::span<const KvSpan> spans, const int64_t* n_vis, int64_t rbk, int64_t rbv, float scale,
                      std::vector<float>& scratch, float* states) {
  const int gq = m * g;  // query vectors scored together
  if (scratch.size() < size_t(gq) * kAttendBlock) scratch.resize(size_t(gq) * kAttendBlock);
  float* s = scratch.data();
  const int64_t state_n = attend_state_floats(g, dv);
  const int64_t n_max = *std::max_element(n_vis, n_vis + m);
  struct Piece {
    const uint8_t* v;
    int64_t at, n;
  };
  Piece pieces[kAttendBlock];
  size_t si = 0;
  int64_t off = 0;     // rows of spans[si] already folded
  int64_t done = 0;    // keys before this block
  while (si < spans.size() && done < n_max) {
    int np = 0;
    int64_t nb = 0;
    // A block: up to kAttendBlock keys gathered from consecutive spans, scored
    // piece by piece for every query vector (each K row read once for all).
    while (nb < kAttendBlock && si < spans.size() && done + nb < n_max) {
      const KvSpan& sp = spans[si];
      const int64_t take = std::min({kAttendBlock - nb, sp.n - off, n_max - done - nb});
      if (take > 0) {
        if (sp.k_lane < 0) {
          kr.scores(q, gq, dk, sp.k + off * rbk, rbk, take, scale, s + nb, kAttendBlock);
        } else {
          const int64_t at = sp.k_lane + off;
          kr.scores_blocked(q, gq, dk, sp.k + (at / kKeyBlock) * kKeyBlock * rbk, int(at % kKeyBlock), take, scale,
                            s + nb, kAttendBlock);
        }
        pieces[np++] = {sp.v + off * rbv, nb, take};
        nb += take;
        off += take;
      }
      if (off >= sp.n) ++si, off = 0;
    }
    if (nb == 0) break;
    // Each query row folds only its visible prefix of the block, exactly as
    // the row alone would: same blocks, same pieces, each cut at its count.
    for (int r = 0; r < m; ++r) {
      const int64_t nr = std::min(nb, n_vis[r] - done);
      if (nr <= 0) continue;
      float* sr = s + int64_t{r} * g * kAttendBlock;
      float* st = states + r * state_n;
      softmax_block(kr, sr, nr, g, dv, st);
      for (int p = 0; p < np && pieces[p].at < nr; ++p)
        kr.accum(sr + pieces[p].at, kAttendBlock, g, pieces[p].v, rbv, std::min(pieces[p].n, nr - pieces[p].at), dv,
                 st + 2 * g);
    }
    done += nb;
  }
}

void attend_fold(const AttendKernels& kr, const float* q, int g, int dk, int dv, std::span<const KvSpan> spans,
                 int64_t rbk, int64_t rbv, float scale, std::vector<float>& scratch, float* state) {
  int64_t n = 0;
  for (const KvSpan& sp : spans) n += sp.n;
  attend_fold_rows(kr, q, 1, g, dk, dv, spans, &n, rbk, rbv, scale, scratch, state);
}

void attend_state_merge(float* into, const float* part, int g, int dv) {
  for (int j = 0; j < g; ++j) {
    const float mb = part[j];
    if (mb == -std::numeric_limits<float>::infinity()) continue;  // part is empty for head j
    float* acc = into + 2 * g + int64_t{j} * dv;
    const float* pacc = part + 2 * g + int64_t{j} * dv;
    const float mx = std::max(into[j], mb);
    const float fa = std::exp(into[j] - mx), fb = std::exp(mb - mx);
    into[g + j] = into[g + j] * fa + part[g + j] * fb;
    for (int e = 0; e < dv; ++e) acc[e] = acc[e] * fa + pacc[e] * fb;
    into[j] = mx;
  }
}

void attend_state_finish(const float* state, int g, int dv, float* out, const float* sinks) {
  for (int j = 0; j < g; ++j) {
    float l = state[g + j];
    float f = 1.f;  // acc and l are relative to e^m; with a sink above m both move to e^sink
    if (sinks != nullptr && l > 0.f) {
      const float m = state[j], sk = sinks[j];
      if (sk > m) {
        f = std::exp(m - sk);
        l = l * f + 1.f;
      } else {
        l += std::exp(sk - m);
      }
    }
    const float inv = l > 0.f ? f / l : 0.f;
    const float* acc = state + 2 * g + int64_t{j} * dv;
    for (int e = 0; e < dv; ++e) out[int64_t{j} * dv + e] = acc[e] * inv;
  }
}

void attend(KvDType t, const float* q, int g, int dk, int dv, std::span<const KvSpan> spans, int64_t rbk,
            int64_t rbv, float scale, std::vector<float>& scratch, float* out, const float* sinks) {
  thread_local std::vector<float> state;
  state.resize(size_t(attend_state_floats(g, dv)));
  attend_state_reset(state.data(), g, dv);
  attend_fold(attend_kernels(t), q, g, dk, dv, spans, rbk, rbv, scale, scratch, state.data());
  attend_state_finish(state.data(), g, dv, out, sinks);
}

namespace {
AttendSplit g_split;
}  // namespace

AttendSplit attend_split() { return g_split; }

void set_attend_split(const AttendSplit& s) {
  OG_CHECK(s.min_rows >= 1 && s.tasks_per_thread >= 1, "kv attention: split needs min_rows >= 1 and tasks_per_thread >= 1");
  g_split = s;
}

int64_t plan_attend_parts(std::span<const int64_t> task_rows, int threads, std::vector<AttendPart>* out) {
  const int64_t n_tasks = int64_t(task_rows.size());
  const int64_t busy = int64_t{std::max(1, threads)} * g_split.tasks_per_thread;
  const int64_t want = n_tasks > 0 && n_tasks < busy ? (busy + n_tasks - 1) / n_tasks : 1;
  out->clear();
  out->reserve(task_rows.size());
  int64_t slots = 0;
  for (int64_t t = 0; t < n_tasks; ++t) {
    const int64_t n = task_rows[size_t(t)];
    const int64_t parts = std::clamp<int64_t>(n / g_split.min_rows, 1, want);
    if (parts == 1) {
      out->push_back({t, 0, n, -1});
      continue;
    }
    for (int64_t p = 0; p < parts; ++p) {
      const int64_t b = n * p / parts;
      out->push_back({t, b, n * (p + 1) / parts - b, slots++});
    }
  }
  return slots;
}

}  // namespace og::kv
