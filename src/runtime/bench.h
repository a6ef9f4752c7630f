// The measurements behind `offgraph bench`: prefill of one sequence and
// decode of many sequences at once, each after `depth` cached positions, on
// a fresh cache (batched-sequence or batched-cell) and random tokens. Only the prefill chunks or
// the decode steps are timed; the depth is filled first, untimed. Also the
// byte and multiply-add counts the report divides by.
#pragma once

#include <atomic>

#include <cstdint>

#include "kv/kv_cache.h"
#include "model/model.h"

namespace og {

struct BenchCacheOptions {
  KvKind kind = KvKind::kBatchedSequence;  // batched-sequence or batched-cell
  KvDType dtype = KvDType::F32;
  int64_t prefill_chunk = 512;  // rows one prefill step writes
  // Set from a signal handler: a decode run stops at the next step (its time
  // is then meaningless; the caller discards it). Null: never.
  const std::atomic<bool>* interrupt = nullptr;
};

// Seconds to prefill n_prompt tokens (chunks of prefill_chunk) after depth positions.
double bench_prefill_seconds(const Model& model, const BenchCacheOptions& o, int64_t depth, int64_t n_prompt,
                             uint64_t seed);

// Seconds of n_gen decode steps over n_seqs sequences, one row per sequence
// per step (each step one forward of n_seqs rows, all wanting logits; each
// row's argmax is taken, as greedy sampling would, but the next tokens are
// random, as llama.cpp's benchmarks feed them, so forked sequences do not
// converge). Sequence 0 is filled to depth and the others are forked from it.
// expert_bytes (when given): the bytes of expert matrices the timed steps
// read (a mixture of experts' routed experts, each once per step; 0 for a
// dense model).
double bench_decode_seconds(const Model& model, const BenchCacheOptions& o, int64_t depth, int64_t n_gen,
                            int n_seqs, uint64_t seed, int64_t* expert_bytes = nullptr);

// Seconds of n_steps speculative verify steps of one sequence after depth
// positions: each step forwards k + 1 rows (the pending token and a k-token
// draft of random tokens), all wanting logits, then rewinds the k draft
// positions, so the sequence advances one position a step as a decode step's
// does (a draft accepted nowhere). Compared with bench_decode_seconds' one
// sequence it is what verifying k tokens costs over one decode step.
double bench_verify_seconds(const Model& model, const BenchCacheOptions& o, int64_t depth, int64_t n_steps,
                            int64_t k, uint64_t seed);

// K and V bytes one row reads attending over `positions` cached positions,
// over all layers (window layers see at most their window).
int64_t kv_bytes_read(const KvGeometry& g, KvDType dtype, int64_t positions);

}  // namespace og
