// Shared pieces of every cache kind: the policy resolved against the geometry
// (effective window and ring size per cache, effective max write), row codecs
// for the storage dtypes, step planning (the checks every kind makes first)
// and the describe() text.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_types.h"
#include "tensor/dtype.h"

namespace og::kv {

// q8_0 storage: blocks of kQ8Block values along head_dim, each an f16 scale
// followed by kQ8Block int8. A head_dim that is not a multiple of kQ8Block is
// stored with its last block padded with zeros (the padding never reaches
// the output: q is only dotted with the real dims and V only adds real dims).
constexpr int kQ8Block = 32;
constexpr int kQ8BlockBytes = 2 + kQ8Block;

// The tensor dtype whose kernels read rows stored as t (kernels/ops.h
// attend_kernels): the same name, q8_0 rows ending in a zero-padded block.
DType storage_dtype(KvDType t);
// Bytes of one head's row of `dim` values stored as `t`.
int64_t row_bytes(KvDType t, int dim);
// x[dim] -> dst[row_bytes(t, dim)]
void encode_row(KvDType t, const float* x, int dim, uint8_t* dst);
// src[row_bytes(t, dim)] -> x[dim]
void decode_row(KvDType t, const uint8_t* src, int dim, float* x);

// Whether the storing kinds that block K (sequence, batched-sequence) keep
// K of dtype t in blocks of kernels::kKeyBlock keys (kv_attend.h KvSpan):
// F32, F16 and BF16 (scores without horizontal sums); Q8_0 stays in rows
// (its scales run along the head dim).
bool k_blocked(KvDType t);
// x[dim] as key `lane` of a block of K (k_blocked(t)): value e at element
// e * kKeyBlock + lane of `block`, each value encoded as encode_row does.
void encode_key_lane(KvDType t, const float* x, int dim, uint8_t* block, int lane);
// The encoded row of key `lane` of a block of K (k_blocked(t)): row[row_bytes(t, dim)].
void read_key_lane(KvDType t, const uint8_t* block, int dim, int lane, uint8_t* row);
// An encoded row into key `lane` of a block of K (the bytes encode_key_lane writes).
void write_key_lane(KvDType t, const uint8_t* row, int dim, uint8_t* block, int lane);

// One cache with the run's policy applied.
struct CacheLayout {
  int n_kv_heads = 0;
  int head_dim_k = 0, head_dim_v = 0;
  int window = 0;            // effective: 0 = flat, W > 0 = ring of `slots`
  int64_t slots = 0;         // ring: min(window + max_write - 1, max_capacity); flat: 0
  int64_t row_bytes_k = 0;   // one head's row
  int64_t row_bytes_v = 0;
  int64_t position_bytes() const { return n_kv_heads * (row_bytes_k + row_bytes_v); }
};

// Effective policy and per-cache layouts. Rules:
//  - initial_capacity is clamped to max_capacity;
//  - windows (if not empty) replaces each cache's window: cache c gets
//    windows[c % windows.size()]; 0 makes it flat. The geometry is untouched;
//  - max_write is narrowed to the narrowest window > 0 of the override list
//    (only an override narrows it; the model's own windows do not, so that a
//    run may prefill in chunks longer than the model's window);
//  - ring slots = min(window + max_write - 1, max_capacity).
// Throws og::Error naming the field for a geometry or policy that cannot work.
struct Resolved {
  KvPolicy policy;
  std::vector<CacheLayout> caches;
};
Resolved resolve(const KvGeometry& geometry, const KvPolicy& policy);

// The two describe() lines (see kv_cache.h) for cache kind `kind`.
std::string describe_text(const char* kind, const KvGeometry& geometry, const Resolved& r);

// One sequence's part of a step: positions [begin, begin + n).
struct SeqStep {
  int seq = 0;
  int64_t begin = 0;
  int64_t n = 0;
};

// The checks every kind makes first, in this order: known sequence,
// contiguous positions from the current length (kInvalid), at most max_write
// rows per sequence, capacity. `length_of(seq)` returns -1 for unknown.
// Fills `out` in order of first appearance (meaningful only on success);
// `out` keeps its capacity, so a step plans without allocating once a step
// with as many sequences has run.
template <class LengthOf>
KvResult plan_step(std::span<const KvRow> rows, const KvPolicy& policy, LengthOf length_of,
                   std::vector<SeqStep>* out);

// The step between begin_step and end_step/abort_step, kept by every kind.
struct StepState {
  bool active = false;
  std::vector<KvRow> rows;
  std::vector<SeqStep> plan;  // planned in place by begin_step (plan_step) before start
  std::vector<char> written;  // [n_caches] K/V of this step written
  void start(std::span<const KvRow> r, size_t n_caches);
  void finish();
};
// Throws og::Error for a call that breaks the update_and_attend contract
// (no step, other rows than begin_step's, bad cache id or head counts, a
// read of a cache not yet written in this step, a second write).
void check_attend(const StepState& st, const Resolved& r, int cache_id, std::span<const KvRow> rows,
                  const float* q, int n_heads, const float* k, const float* v, const float* out);
// Throws unless every cache used by a layer was written in the step.
void check_step_complete(const StepState& st, const KvGeometry& g);
// Throws when a control call arrives during a step.
void check_no_step(const StepState& st, const char* what);

KvResult refuse(KvStatus s, std::string message, int64_t history_begin = 0);
const char* status_name(KvStatus s);

// ---- template implementation ----
// Index of seq's entry in plan, or plan.size().
size_t find_seq(const std::vector<SeqStep>& plan, int seq);
// plan_step's checks over a plan holding each sequence once with its length
// in `begin` (-1: unknown) and n = 0; counts each sequence's rows into n.
KvResult check_plan(std::span<const KvRow> rows, const KvPolicy& policy, std::vector<SeqStep>* plan);

template <class LengthOf>
KvResult plan_step(std::span<const KvRow> rows, const KvPolicy& policy, LengthOf length_of,
                   std::vector<SeqStep>* out) {
  out->clear();
  for (const KvRow& r : rows)
    if (find_seq(*out, r.seq) == out->size()) out->push_back({r.seq, length_of(r.seq), 0});
  return check_plan(rows, policy, out);
}

}  // namespace og::kv
