// KvCache: the one interface every attention layer calls. A runtime builds a
// cache per run (make_kv_cache) from the model's KvGeometry and the run's
// KvPolicy. A forward step is:
//   r = cache.begin_step(rows);   // validates everything, reserves; on refusal nothing changes
//   for each layer: cache.update_and_attend(layer_cache, rows, q, k, v, ...);
//   cache.end_step();              // commits the new lengths
// Rows may mix sequences; one sequence's rows in a step are consecutive
// positions starting at that sequence's current length.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/kv_types.h"

namespace og {

class KvCache {
 public:
  virtual ~KvCache() = default;

  virtual const KvGeometry& geometry() const = 0;
  virtual const KvPolicy& policy() const = 0;

  // Checks every row (known sequence, contiguous positions from the current
  // length, capacity, max write, ring history, pool space) and reserves room.
  // On refusal returns the reason and changes nothing.
  virtual KvResult begin_step(std::span<const KvRow> rows) = 0;

  // Writes the rows' K/V into cache `cache_id` (skipped for layers that only
  // read a donor's KV: pass k = v = nullptr) and attends each query causally
  // over what its layer allows, up to last_visible(row) (a row in a
  // bidirectional span also sees the span's later rows: KvRow::span_end). Layouts (row-major, f32):
  //   q   [n_rows, n_heads, head_dim_k]
  //   k   [n_rows, n_kv_heads, head_dim_k]
  //   v   [n_rows, n_kv_heads, head_dim_v]
  //   out [n_rows, n_heads, head_dim_v]
  //   sinks [n_heads] or nullptr: attention sinks (gpt-oss), one learned logit
  //         per query head added to its softmax's denominator as a key with no
  //         value (not multiplied by scale): out_h = Σ e^(s_i) v_i / (e^(sink_h) + Σ e^(s_i)).
  // n_heads is a multiple of n_kv_heads; query head h uses KV head h / (n_heads / n_kv_heads).
  virtual void update_and_attend(int cache_id, std::span<const KvRow> rows, const float* q, int n_heads,
                                 const float* k, const float* v, float scale, float* out,
                                 const float* sinks = nullptr) = 0;

  // Commits the step begun by begin_step: each sequence's length becomes its last row + 1.
  virtual void end_step() = 0;
  // Abandons the step begun by begin_step (e.g. the forward pass threw): lengths stay as they were.
  virtual void abort_step() = 0;

  // Control. Every refusal changes nothing.
  virtual KvResult add_sequence(int seq) = 0;      // batched kinds; `sequence` has only seq 0
  virtual KvResult remove_sequence(int seq) = 0;
  virtual KvResult can_extend(int seq, int64_t n) const = 0;  // could n more positions be written?
  virtual KvResult rewind(int seq, int64_t n) = 0;  // drop the last n positions
  virtual KvResult clear(int seq) = 0;              // length 0, allocation kept
  virtual KvResult fork(int src, int dst, int64_t upto) = 0;  // dst = first `upto` positions of src
  virtual void release_unused() = 0;                // give back memory not needed by current lengths
  virtual int64_t length(int seq) const = 0;        // -1 for an unknown sequence
  virtual KvMemory memory() const = 0;
  // The pool blocks that `seqs` reference against the pool's size (vLLM's
  // kv_cache_usage: blocks that only a prefix-cache entry holds are not
  // counted, as vLLM counts its cached blocks free); {0, 0} without a pool.
  virtual KvBlockUsage block_usage(std::span<const int> seqs) const {
    (void)seqs;
    return {};
  }
  // Export and import of positions (the prefix cache's disk tier), in the
  // layout of kv_position_bytes: for each cache c in geometry order, for each
  // position, for each KV head, its K row then its V row, each as stored
  // (row_bytes of the storage dtype; K in rows even where a kind keeps it in
  // key blocks). Every kind writes the same bytes for the same K/V, so a
  // buffer moves between kinds of one geometry and policy dtype.
  // export_positions: positions [begin, end) of `seq` into *out (replaced);
  // kHistoryUnavailable when a ring cache no longer holds one of them.
  virtual KvResult export_positions(int seq, int64_t begin, int64_t end, std::vector<uint8_t>* out) const {
    (void)seq, (void)begin, (void)end, (void)out;
    return {KvStatus::kInvalid, "kv cache: this kind cannot export positions", 0};
  }
  // import_positions: appends data.size() / kv_position_bytes positions to
  // `seq` (from its current length), as if they had been forwarded; the
  // next step attends over them exactly as over the exported sequence's.
  // On refusal (capacity, pool, a size that is not whole positions) nothing changes.
  virtual KvResult import_positions(int seq, std::span<const uint8_t> data) {
    (void)seq, (void)data;
    return {KvStatus::kInvalid, "kv cache: this kind cannot import positions", 0};
  }
  // Two lines, e.g.
  //   [cache] off-graph sequence | capacity=1024 initial=512 kv_dtype=bf16 max_write=512
  //           26 layers: 4 flat + 22 ring(window 512)
  virtual std::string describe() const = 0;
};

enum class KvKind { kSequence, kBatchedSequence, kBatchedCell, kReference };
const char* kv_kind_name(KvKind k);
bool kv_kind_from_name(const std::string& s, KvKind* out);

// Throws og::Error for a policy that cannot work (e.g. max_write < 1).
std::unique_ptr<KvCache> make_kv_cache(KvKind kind, const KvGeometry& geometry, const KvPolicy& policy);

// Bytes of K/V that one sequence of `positions` positions stores under
// `policy` (a ring cache holds at most its slots); for memory budgets such as
// the prefix cache's. Throws og::Error for a policy that cannot work.
int64_t kv_sequence_bytes(const KvGeometry& geometry, const KvPolicy& policy, int64_t positions);
// Bytes of one position in export_positions' layout: the sum over caches of
// n_kv_heads * (row_bytes(dtype, head_dim_k) + row_bytes(dtype, head_dim_v)).
int64_t kv_position_bytes(const KvGeometry& geometry, const KvPolicy& policy);

}  // namespace og
