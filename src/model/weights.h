// Weights: the tensors of a model bound by role. Matrices are views into the
// source (mapped file or in-memory source; nothing copied); small vectors
// (norms, biases) are f32 copies with load-time fixes applied (HF gemma 1 + w).
#pragma once

#include <string>
#include <vector>

#include "base/huge_pages.h"
#include "format/tensor_source.h"
#include "model/config.h"
#include "tensor/tensor_view.h"

namespace og {

enum class TensorRole {
  kTokenEmbd, kOutputNorm, kOutput, kOutputBias,
  kAttnNorm, kQ, kK, kV, kO, kQBias, kKBias, kVBias, kOBias, kQNorm, kKNorm,
  kPostAttnNorm, kFfnNorm, kPostFfnNorm, kGate, kUp, kDown,
  // gpt-oss: attention sinks [n_heads], the router's bias [n_experts] and the
  // experts' biases (GGUF [n_experts, d_ff_expert] for gate / up, [n_experts, d_model] for down).
  kSinks, kRouterBias, kGateExpsBias, kUpExpsBias, kDownExpsBias,
  // Per-layer inputs (gemma4): the model-level table, projection and norm,
  // and each layer's gate, projection, post-norm and output scale.
  kPerLayerTokenEmbd, kPerLayerModelProj, kPerLayerProjNorm,
  kPerLayerGate, kPerLayerProj, kPerLayerPostNorm, kLayerOutputScale,
  // Embedding models: dense projection i after pooling (the `layer` argument is i).
  kDense,
  // Mixture of experts: the router, and the experts' gate / up / down
  // matrices (GGUF: one 3-D tensor [n_experts, rows, cols] each; HF: one
  // tensor per expert, named with the `expert` argument of tensor_name).
  kRouter, kGateExps, kUpExps, kDownExps,
  // Encoders (BERT, nomic-bert): the token-type and absolute position tables,
  // the embedding LayerNorm, the fused q/k/v matrix, the post-residual norms
  // of a post_norm layer, and the LayerNorm / MLP biases.
  kTokenTypes, kPosEmbd, kEmbdNorm, kEmbdNormBias, kQkv, kQkvBias,
  kAttnOutNorm, kAttnOutNormBias, kLayerOutNorm, kLayerOutNormBias, kUpBias, kDownBias,
  // Phi-3's fused gate/up matrix [2 d_ff, d_model] (LayerConfig::gate_up_fused).
  kGateUp,
};

// The tensor name of a role in the config's layout (GGUF names, or HF names
// under c.hf_prefix). HF's "post_attention_layernorm" is the pre-FFN norm of a
// block without post-norms (llama, qwen) and the post-attention norm of a
// block with them (gemma); the layer's has_post_attn_norm decides.
// Expert roles in HF layout name expert `expert`'s own tensor; GGUF names the stack.
std::string tensor_name(const ModelConfig& c, TensorRole role, int layer = -1, int expert = -1);
// HF experts stored fused (transformers v5 Qwen3-MoE / Mixtral):
// "<prefix>layers.N.<block>.experts.gate_up_proj" [n_experts, 2 d_ff_expert,
// d_model] (each expert's gate rows, then its up rows) and
// "...experts.down_proj" [n_experts, d_model, d_ff_expert]; down picks which.
// A checkpoint holding them is read from them instead of per-expert tensors.
std::string hf_fused_experts_name(const ModelConfig& c, int layer, bool down);
// gpt-oss HF checkpoints (c.hf_moe.gpt_oss_stacks): the name under which
// model/hf_expert_stacks.h presents a layer's experts as GGUF-shaped stacks,
// "<prefix>layers.N.mlp.experts.{gate,up,down}_stack" ([E, ff, d] / [E, d,
// ff]) and "..._stack_bias" ([E, ff] / [E, d]); "" for the other roles.
std::string hf_expert_stack_name(const ModelConfig& c, int layer, TensorRole role);

struct LayerWeights {
  std::vector<float> attn_norm;       // [d_model]
  TensorView wq;                      // [n_heads * head_dim_k, d_model]
  TensorView wk;                      // [n_kv_heads * head_dim_k, d_model]; no data when kv_donor >= 0
  TensorView wv;                      // [n_kv_heads * head_dim_v, d_model]; no data when kv_donor >= 0
  TensorView wo;                      // [d_model, n_heads * head_dim_v]
  std::vector<float> bq, bk, bv;      // [n_heads * head_dim_k] / [n_kv_heads * head_dim_k|v]; empty when no bias
  std::vector<float> bo;              // [d_model]; empty when no bias
  std::vector<float> q_norm, k_norm;  // [head_dim_k]; empty when absent
  std::vector<float> post_attn_norm;  // [d_model]; empty when absent
  std::vector<float> ffn_norm;        // [d_model]
  std::vector<float> post_ffn_norm;   // [d_model]; empty when absent
  TensorView w_gate, w_up;            // [d_ff, d_model]
  TensorView w_down;                  // [d_model, d_ff]
  std::vector<float> v_norm;          // [head_dim_v] all ones (the weightless v norm); empty unless has_v_norm
  // Per-layer input block; no data when c.d_per_layer == 0.
  TensorView w_pl_gate;               // [d_per_layer, d_model]
  TensorView w_pl_proj;               // [d_model, d_per_layer]
  std::vector<float> pl_post_norm;    // [d_model]
  float output_scale = 1.0f;          // used when has_output_scale
  std::vector<float> sinks;           // [n_heads] attention sinks; empty unless has_sinks
  // Mixture of experts (n_experts > 0; then w_gate / w_up / w_down have no data).
  TensorView w_router;                   // [n_experts, d_model]
  std::vector<float> b_router;           // [n_experts]; empty unless has_router_bias
  std::vector<float> b_gate_exps, b_up_exps;  // [n_experts, d_ff_expert]; empty unless has_expert_bias
  std::vector<float> b_down_exps;        // [n_experts, d_model]; empty unless has_expert_bias
  std::vector<TensorView> w_gate_exps;   // n_experts x [d_ff_expert, d_model]
  std::vector<TensorView> w_up_exps;     // n_experts x [d_ff_expert, d_model]
  std::vector<TensorView> w_down_exps;   // n_experts x [d_model, d_ff_expert]
  // Encoder layers (post_norm): the norms after each residual add, with
  // biases (LayerNorm); the MLP biases when has_ffn_bias.
  std::vector<float> attn_out_norm, attn_out_norm_b;    // [d_model]
  std::vector<float> layer_out_norm, layer_out_norm_b;  // [d_model]
  std::vector<float> b_up;                              // [d_ff]
  std::vector<float> b_down;                            // [d_model]
};

struct Weights {
  TensorView token_embd;           // [n_vocab, d_model]
  TensorView output;               // [n_vocab, d_model]; the same view as token_embd when tied
  std::vector<float> output_bias;  // [n_vocab]; empty when absent
  std::vector<float> output_norm;  // [d_model]
  // Per-layer inputs; no data when c.d_per_layer == 0. The table is only
  // looked up (a few rows per step), so it stays in the source: with a
  // mapped file only the rows of the step's tokens are ever read.
  TensorView per_layer_token_embd;         // [n_vocab, n_layers * d_per_layer]
  TensorView per_layer_model_proj;         // [n_layers * d_per_layer, d_model]
  std::vector<float> per_layer_proj_norm;  // [d_per_layer]
  std::vector<LayerWeights> layers;
  std::vector<TensorView> dense;           // [dense[i].d_out, dense[i].d_in] per c.dense projection
  // Encoders: token type 0's row, the absolute position table, the embedding norm.
  std::vector<float> token_type0;          // [d_model]; empty when n_token_types == 0
  TensorView pos_embd;                     // [n_ctx, d_model]; no data unless has_pos_embd
  std::vector<float> embd_norm, embd_norm_b;  // [d_model]; empty unless has_embd_norm
};

// Binds every tensor the config needs, checking presence, shape and dtype
// (each failure one og::Error naming the source, tensor and problem).
// c.n_vocab: 0 = take it from the embedding rows, else it must match them.
// c.tied_output: when false and the source has no output matrix, a GGUF
// model falls back to the embedding (as llama.cpp does) and sets it true;
// an HF model without lm_head.weight is an error.
Weights bind_weights(ModelConfig& c, const TensorSource& src);

// Copies the matrices read in full every token (all layer matrices, the
// per-layer input projection, and the output matrix, with the embedding when
// tied; never the looked-up per-layer table) into one huge-page buffer and
// repoints the views at it; the caller keeps the buffer alive as long as w.
// release_source: the views pointed into a read-only file mapping, whose
// pages are then dropped from this process as each is copied (RSS stays near
// one copy). Never for in-memory sources (it would zero them).
// copy_experts: a mixture of experts' expert matrices are copied too;
// otherwise they stay where they are (used in place, in the file's layout).
HugePageBuffer place_weights_in_huge_pages(Weights& w, bool release_source, bool copy_experts);

// A 1-D (or any) tensor as f32 values, checking its element count.
std::vector<float> tensor_to_f32(const TensorSource& src, const std::string& name, int64_t n);

}  // namespace og
