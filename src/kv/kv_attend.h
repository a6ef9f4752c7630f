// Attention over stored K/V rows, read directly in the storage dtype (no
// dequantised copy of the history). A query group (the g query heads sharing
// one KV head) attends over a list of spans of consecutive stored rows in one
// pass (online softmax, flash-decoding style): blocks of rows are scored, the
// running max/sum/accumulator are rescaled and V is accumulated while the
// block is still in L1. Partial states over disjoint position ranges merge,
// so one long history can be split across threads. The inner kernels (scores,
// weighted V sums, exp) come from kernels/ (ops.h attend_kernels), chosen
// with every other kernel's instruction set.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/ops.h"
#include "kv/kv_types.h"

namespace og::kv {

// n consecutive stored rows of one KV head: V row i at v + i * row_bytes_v;
// K row i at k + i * row_bytes_k when k_lane < 0 (K in rows), else key i is
// lane (k_lane + i) % kKeyBlock of the (k_lane + i) / kKeyBlock-th block from
// k (K in blocks of kKeyBlock keys, ops.h scores_blocked; a block is
// kKeyBlock * row_bytes_k bytes).
struct KvSpan {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  int64_t n = 0;
  int k_lane = -1;
};

using kernels::kKeyBlock;

using kernels::AttendKernels;

// The kernels the instruction set in use has for K/V stored as t.
const AttendKernels& attend_kernels(KvDType t);

// Rows scored per block of the one-pass attention (scores of a block: g * kAttendBlock floats).
constexpr int64_t kAttendBlock = 64;

// Online-softmax state of g query heads over the rows folded so far, in
// attend_state_floats(g, dv) floats: m[g] (max score, -inf when empty),
// l[g] (Σ exp(s - m)), acc[g, dv] (Σ exp(s - m) v).
inline int64_t attend_state_floats(int g, int dv) { return int64_t{g} * (dv + 2); }
void attend_state_reset(float* state, int g, int dv);
// Folds the rows of `spans` into `state`. scratch is resized to g * kAttendBlock floats.
void attend_fold(const AttendKernels& kr, const float* q, int g, int dk, int dv, std::span<const KvSpan> spans,
                 int64_t rbk, int64_t rbv, float scale, std::vector<float>& scratch, float* state);
// The same for m query rows that share one key sequence (a prefill chunk of
// one sequence in a layer without a window): q holds m * g query vectors
// [m][g][dk] contiguous, row r sees the first n_vis[r] keys of the spans, and
// its state is states + r * attend_state_floats(g, dv). Each block of keys is
// scored for all m * g vectors at once (K and V read once per block, not once
// per row). Guaranteed: row r's state is bit-identical to attend_fold over the
// first n_vis[r] keys alone (ops.h: a score does not depend on g or n, accum
// adds in row order), so how rows are grouped never changes a result.
// scratch is resized to m * g * kAttendBlock floats.
void attend_fold_rows(const AttendKernels& kr, const float* q, int m, int g, int dk, int dv,
                      std::span<const KvSpan> spans, const int64_t* n_vis, int64_t rbk, int64_t rbv, float scale,
                      std::vector<float>& scratch, float* states);
// into = the state over the union of both states' (disjoint) rows.
void attend_state_merge(float* into, const float* part, int g, int dv);
// out[g, dv] = acc / l (zeros for an empty state). sinks [g] or nullptr:
// head j's softmax also counts a key of logit sinks[j] with no value (an
// attention sink), so out = acc / (l + e^(sinks[j] - m)), computed from the
// larger of m and sinks[j] so that neither overflows. Folding stays the same
// with or without sinks: a cache without them pays nothing.
void attend_state_finish(const float* state, int g, int dv, float* out, const float* sinks = nullptr);

// out[g, dv] = softmax(scale * q kᵀ) v over the spans, for q [g, dk], with the
// kernels in use (attend_kernels(t)); sinks [g] or nullptr as attend_state_finish.
void attend(KvDType t, const float* q, int g, int dk, int dv, std::span<const KvSpan> spans, int64_t rbk,
            int64_t rbv, float scale, std::vector<float>& scratch, float* out, const float* sinks = nullptr);

// How update_and_attend splits one query group's history across threads when
// there are fewer (row, KV head) tasks than the pool can keep busy: into at most
// `max_parts` position ranges of at least `min_rows` rows each. Tests lower
// min_rows to exercise the split and merge on short histories.
struct AttendSplit {
  int64_t min_rows = 1024;
  int tasks_per_thread = 4;  // split while tasks < threads * tasks_per_thread
};
AttendSplit attend_split();
void set_attend_split(const AttendSplit& s);

// One piece of attention work: rows [begin, begin + n) of task `task`'s
// history; slot >= 0 when the task is split (the piece's partial state goes to
// partial slot `slot`; a task's pieces are consecutive, in row order), -1 when whole.
struct AttendPart {
  int64_t task, begin, n, slot;
};
// Plans the pieces for tasks with histories of task_rows[t] rows on `threads`
// threads, following attend_split(); returns the number of partial slots.
int64_t plan_attend_parts(std::span<const int64_t> task_rows, int threads, std::vector<AttendPart>* out);

}  // namespace og::kv
