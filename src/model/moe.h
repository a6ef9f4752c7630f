// Mixture-of-experts feed-forward blocks (LayerConfig::n_experts > 0): the
// router, top-k selection, and the experts' SwiGLU FFNs weighted and summed.
// moe_ffn runs a step grouped by expert (each active expert's matrices are
// read once per step, over every row routed to it); moe_ffn_plain is its
// plain twin (per row, per chosen expert), which tests hold it against.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace og {

// The experts chosen for n rows and their weights, [n, n_experts_used] each,
// in rank order (highest probability first; ties go to the lower index).
struct MoeRouting {
  std::vector<int32_t> expert;
  std::vector<float> weight;
};

// Routes n rows from their router logits [n, n_experts] (overwritten with
// the softmax probabilities): softmax over all experts, the n_experts_used
// most probable, their probabilities renormalised to sum 1 when
// L.expert_weights_norm (as llama.cpp's build_moe_ffn and transformers'
// Qwen3-MoE / Mixtral blocks do).
void moe_route(const LayerConfig& L, float* logits, int64_t n, MoeRouting& out);

// y[n, d_model] = Σ_j weight_j · down_j(act(gate_j x) ⊙ up_j x) over each
// row's chosen experts j, for x [n, d_model]. Grouped: the rows routed to an
// expert are gathered and multiplied together. Scratch is per thread, grown
// and reused. y must not overlap x.
void moe_ffn(const LayerConfig& L, const LayerWeights& w, const float* x, int64_t n, int64_t d_model, float* y);

// The same, one row and one chosen expert at a time (the plain twin).
void moe_ffn_plain(const LayerConfig& L, const LayerWeights& w, const float* x, int64_t n, int64_t d_model, float* y);

// Bytes of expert matrices (gate, up, down) that the calling thread's
// moe_ffn calls have read so far: each expert a step routes any row to, once
// (moe_ffn_plain: once per row and chosen expert). bench reports a batch's
// decode against the experts its steps really read.
int64_t moe_expert_bytes_read();

}  // namespace og
