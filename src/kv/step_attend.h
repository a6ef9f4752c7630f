// Attention within one step, without a cache: for a step that holds every
// sequence whole (an embedding pass writes each input from position 0 and
// keeps nothing afterwards), each query attends over the K/V rows of its own
// sequence in the step. Causal layers see keys at positions <= their own
// (and, with a window W, only the last W of them, as update_and_attend);
// bidirectional layers (non-causal models) see the whole sequence, or with a
// window W the keys within |p - j| <= W / 2 (llama.cpp's symmetric window for
// gemma-embedding, which equals transformers' bidirectional sliding mask).
// attend_in_step reads the step's rows in place with the kernels the cache
// kinds use; attend_in_step_ref is its plain twin (double accumulation).
// See ARCHITECTURE.md, "The cache contract".
#pragma once

#include <span>

#include "kv/kv_types.h"

namespace og::kv {

struct StepAttendShape {
  int n_heads = 0;
  int n_kv_heads = 0;  // divides n_heads; query head h reads KV head h / (n_heads / n_kv_heads)
  int head_dim_k = 0;
  int head_dim_v = 0;
  int window = 0;      // 0 = none
  bool causal = true;
};

// The positions [lo, hi] a query at `pos` sees in a sequence of `n` positions
// (0..n-1), by the rules above.
void step_visible(const StepAttendShape& s, int64_t pos, int64_t n, int64_t* lo, int64_t* hi);

// og::Error unless each sequence's rows are consecutive in `rows` and hold
// positions 0, 1, ... in order (every sequence whole), and no sequence appears twice.
void check_whole_sequences(std::span<const KvRow> rows);

// Layouts as update_and_attend's (row-major f32):
//   q [n_rows, n_heads, head_dim_k], k [n_rows, n_kv_heads, head_dim_k],
//   v [n_rows, n_kv_heads, head_dim_v], out [n_rows, n_heads, head_dim_v].
// sinks [n_heads] or nullptr: attention sinks, as update_and_attend's.
// rows must pass check_whole_sequences (the caller checks once per step).
void attend_in_step(std::span<const KvRow> rows, const StepAttendShape& s, const float* q, const float* k,
                    const float* v, float scale, float* out, const float* sinks = nullptr);
void attend_in_step_ref(std::span<const KvRow> rows, const StepAttendShape& s, const float* q, const float* k,
                        const float* v, float scale, float* out, const float* sinks = nullptr);

}  // namespace og::kv
