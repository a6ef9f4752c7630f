// The vocabulary of the off-graph KV cache: geometry (from the model), policy
// (from the run), the rows one step writes, results of control operations and
// memory accounting. See ../shared/design/ARCHITECTURE.md, "The cache contract".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace og {

// One cache as the model declares it.
struct KvCacheSpec {
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int window = 0;  // 0 = full attention; W > 0: query at p sees keys in (p - W, p]
};

// What the model needs: the caches, and which cache each layer uses. Layers
// that share KV (Gemma-4 / 3n style) map to their donor's cache id; only the
// donor layer writes, the others only read.
struct KvGeometry {
  std::vector<KvCacheSpec> caches;
  std::vector<int> layer_cache;   // [n_layers] -> cache id
  std::vector<bool> layer_writes; // [n_layers] false for layers that reuse a donor's KV
};

enum class KvDType { F32, F16, BF16, Q8_0 };
const char* kv_dtype_name(KvDType t);
bool kv_dtype_from_name(const std::string& s, KvDType* out);

// What the run chooses. Never changes the geometry.
struct KvPolicy {
  int64_t max_capacity = 4096;     // positions one sequence may hold
  int64_t initial_capacity = 512;  // clamped to max_capacity
  KvDType dtype = KvDType::F32;
  std::vector<int> windows;        // override, repeated over the caches; 0 = flat; empty = model's
  int64_t max_write = 512;         // most rows one sequence writes in one step (prefill chunk)
  // batched-cell only: the pool holds enough blocks for max_sequences sequences
  // of max_capacity positions each (blocks shared by forks count once).
  int max_sequences = 1;
  int block_size = 16;             // batched-cell: positions per block
};

// One row of a step: a token of sequence `seq` at position `pos`.
// Cache c's window in a run: the policy's override (repeated over the caches)
// or the model's own; 0 = flat (full history), W > 0 = a ring.
inline int effective_window(const KvGeometry& g, const KvPolicy& p, size_t c) {
  return p.windows.empty() ? g.caches[c].window : p.windows[c % p.windows.size()];
}

// span_end: 0 (or pos + 1) = causal, the row sees keys up to pos. Larger:
// the row is inside a bidirectional span [a, span_end) of its sequence
// (image tokens of Gemma 3) and also sees keys pos + 1 .. span_end - 1, which
// must be rows of the same step (begin_step refuses otherwise); along one
// sequence's rows the last seen position never decreases. A window still cuts
// keys older than pos - W + 1.
struct KvRow {
  int seq = 0;
  int64_t pos = 0;
  int64_t span_end = 0;
};
// The last position `r` sees (its own, or its span's last).
inline int64_t last_visible(const KvRow& r) { return r.span_end > r.pos ? r.span_end - 1 : r.pos; }

enum class KvStatus {
  kOk,
  kCapacityExceeded,    // the sequence would pass max_capacity
  kWriteTooLong,        // a step longer than max_write for one sequence
  kUnknownSequence,
  kPoolExhausted,       // batched-cell: no free block
  kHistoryUnavailable,  // needs ring positions already overwritten
  kInvalid,             // bad argument (non-contiguous positions, existing seq id, ...)
};

struct KvResult {
  KvStatus status = KvStatus::kOk;
  std::string message;        // one line for the user when !ok()
  int64_t history_begin = 0;  // kHistoryUnavailable: oldest position still held
  bool ok() const { return status == KvStatus::kOk; }
  static KvResult success() { return {}; }
};

struct KvMemory {
  int64_t flat_allocated = 0, flat_used = 0;  // bytes, full-attention layers
  int64_t ring_allocated = 0, ring_used = 0;  // bytes, sliding-window layers
  int64_t allocated() const { return flat_allocated + ring_allocated; }
  int64_t used() const { return flat_used + ring_used; }
};

// Blocks of a block pool (the batched-cell kind): `used` referenced by the
// sequences asked about (a block shared by several counts once), `total` the
// pool's size; of one full-attention cache (they all hold the same blocks
// per sequence). {0, 0}: no block pool.
struct KvBlockUsage {
  int64_t used = 0, total = 0;
};

}  // namespace og
