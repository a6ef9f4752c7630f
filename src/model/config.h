// ModelConfig and per-layer LayerConfig: everything the generic forward pass
// needs to know about a model, independent of its family and of the file
// layout it came from (families/ fill these from GGUF metadata or config.json).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/kv_types.h"

namespace og {

enum class Activation { kSilu, kGeluTanh, kGeluErf };  // kGeluErf: BERT's exact gelu
const char* activation_name(Activation a);

// How the tensor names of the source map to roles (see weights.h).
enum class WeightLayout { kGguf, kHf };

// A layer's RoPE scaling as the source declared it (kept so that a loaded
// model can be written back; the forward pass only reads rope_inv_freq).
struct RopeScaling {
  enum class Type { kNone, kLinear, kLlama3, kLongrope, kYarn };
  Type type = Type::kNone;
  double factor = 1.0;  // linear: inv_freq / factor; llama3: the long-wavelength factor
  double low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_positions = 8192;
  // longrope (Phi-3-*-128k, Phi-3.5): per-pair factors [rope_n_rot / 2] that
  // divide inv_freq, the short ones for runs whose context per sequence is at
  // most original_max_positions, the long ones beyond; attn_factor multiplies
  // RoPE's cos and sin (sqrt(1 + ln(s) / ln(orig)), s = context / orig).
  std::vector<float> short_factor, long_factor;
  double attn_factor = 1.0;
  // yarn (gpt-oss), as llama.cpp's ggml_rope_yarn: factor and
  // original_max_positions above, the ramp's corners beta_fast / beta_slow
  // (rotations per original context; the GGUF yarn_beta_* keys, default 32
  // and 1). See yarn_rope_inv_freq and yarn_mscale.
  double yarn_beta_fast = 32.0, yarn_beta_slow = 1.0;
  // transformers' yarn `truncate` (default true): the ramp's corners are
  // rounded out to whole pairs (floor / ceil), as llama.cpp always does;
  // gpt-oss's config.json says false (the corners stay fractional). GGUF has
  // no key for it: export writes such a model truncated (gguf_export.h).
  bool yarn_truncate = true;
};

struct LayerConfig {
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int64_t d_ff = 0;
  int window = 0;  // 0 = full causal attention; W > 0: query at p sees keys in (p - W, p]
                   // (bidirectional models, ModelConfig::causal false: keys within |p - j| <= W / 2, as llama.cpp)

  // RoPE: rotates the first rope_n_rot dims of every q/k head.
  int rope_n_rot = 0;
  // Rope layout of the q/k rows as loaded: true = pairs (x[2i], x[2i+1])
  // (GGUF "llama", whose converter permuted the rows), false = rotate-half
  // pairs (x[i], x[i + n_rot/2]). The loader keeps the rows as stored and
  // records the layout here, so no weight is copied (see families/family.h).
  bool rope_interleaved = false;
  double rope_base = 10000.0;  // informational; inv_freq is what the forward uses
  std::vector<float> rope_inv_freq;  // [rope_n_rot / 2] base^(-2i/n_rot) with every scaling folded in
  // What rope_inv_freq was made from, besides rope_base: the declared scaling
  // and per-pair frequency factors ff_i ([rope_n_rot / 2], inv_freq divided by
  // them; GGUF rope_freqs.weight, or computed from llama3 scaling; empty = none).
  RopeScaling rope_scaling;
  std::vector<float> rope_freq_factors;
  // longrope: the table [rope_n_rot / 2] a run uses instead of rope_inv_freq
  // when its context per sequence (the cache's max capacity) exceeds
  // rope_long_after (llama.cpp's rule); empty = rope_inv_freq always.
  std::vector<float> rope_inv_freq_long;
  int64_t rope_long_after = 0;
  // RoPE's cos and sin are multiplied by this (q·k by its square on the rotated dims).
  float rope_attn_factor = 1.0f;

  bool has_q_norm = false;       // per-head RMSNorm of q and k (weights [head_dim_k]) before RoPE
  bool has_k_norm = false;
  // Phi-3: the file holds gate and up as one matrix [2 d_ff, d_model] (gate
  // rows first; GGUF ffn_up, HF mlp.gate_up_proj), bound as two row views
  // (nothing copied). Its q/k/v are one matrix too (qkv_fused below).
  bool gate_up_fused = false;
  bool has_qkv_bias = false;     // q/k/v projection biases, added before the q/k norms and RoPE
  bool has_o_bias = false;       // output projection bias (llama with attention_bias)
  bool has_post_attn_norm = false;  // RMSNorm of the attention output before the residual add
  bool has_post_ffn_norm = false;   // RMSNorm of the MLP output before the residual add
  bool has_v_norm = false;       // weightless RMSNorm of every v head before it is stored (gemma4)
  Activation activation = Activation::kSilu;
  float attn_scale = 0;          // softmax(q·k·attn_scale)
  // The whole residual stream is multiplied by a per-layer scalar (tensor
  // layer_output_scale [1]) after the layer's last block (gemma4).
  bool has_output_scale = false;
  // Whether a bidirectional image span (KvRow::span_end) is opened in this
  // layer; false: the layer attends causally even inside a span. Gemma 3 opens
  // it in every layer; Gemma 4 only in its sliding layers and only with
  // use_bidirectional_attention = "vision" (transformers'
  // create_masks_for_vision_model; docs/vision.md).
  bool opens_image_spans = true;

  // Encoder (BERT-style) blocks. post_norm: no norm before a sub-block; its
  // output is added to the residual stream and the sum is normed (GGUF
  // attn_output_norm after attention, layer_output_norm after the MLP).
  // qkv_fused: the file holds one q/k/v matrix (attn_qkv [q + k + v rows, d];
  // bound as three views). ffn_gated false: the MLP is W_down act(W_up x)
  // with no gate. has_ffn_bias: up and down projection biases.
  bool post_norm = false;
  bool qkv_fused = false;
  bool ffn_gated = true;
  bool has_ffn_bias = false;

  // Mixture of experts: n_experts > 0 replaces the layer's MLP with a router
  // (W_router [n_experts, d_model]) and n_experts SwiGLU FFNs of width
  // d_ff_expert; each row runs its n_experts_used highest-probability experts
  // (softmax over all router logits, then top-k), their outputs summed with
  // those probabilities, renormalised to sum 1 when expert_weights_norm
  // (Mixtral always; Qwen3-MoE's norm_topk_prob). d_ff stays what the file
  // says (informational on such a layer). 0 = a dense MLP.
  int n_experts = 0;
  int n_experts_used = 0;
  int64_t d_ff_expert = 0;
  bool expert_weights_norm = true;
  // gpt-oss experts. expert_softmax_after_topk: the n_experts_used largest
  // router logits are chosen first and their weights are the softmax over
  // those logits alone (llama.cpp's SOFTMAX_WEIGHT gating). has_router_bias:
  // the router adds a bias [n_experts]; has_expert_bias: each expert's gate,
  // up and down projections add biases. expert_swiglu_oai: the experts'
  // activation is gpt-oss's clamped SwiGLU, g = min(gate, 7), u = clamp(up,
  // -7, 7), out = (u + 1) · g · σ(1.702 g) (ggml's swiglu_oai), instead of `activation`.
  bool expert_softmax_after_topk = false;
  bool has_router_bias = false;
  bool has_expert_bias = false;
  bool expert_swiglu_oai = false;

  // KV sharing (Gemma-3n / Gemma-4 style): -1 = this layer computes and owns
  // its K/V; otherwise the index of an earlier layer whose cache it reads (its
  // own k/v projections and k norm, when a file carries them, are never used).
  int kv_donor = -1;

  // Attention sinks (gpt-oss): a learned logit per query head (tensor
  // attn_sinks [n_heads]) counted in each softmax's denominator as a key with
  // no value (KvCache::update_and_attend's sinks).
  bool has_sinks = false;
  // GGUF naming quirk (gpt-oss): the pre-FFN norm is blk.N.post_attention_norm,
  // not ffn_norm (the layer has no post-attention norm).
  bool gguf_ffn_norm_is_post_attention = false;
};

// Sentence-embedding pooling, with llama.cpp's <arch>.pooling_type values.
// kUnset: the file declares none (a generative model).
enum class Pooling { kUnset = -1, kNone = 0, kMean = 1, kCls = 2, kLast = 3 };
const char* pooling_name(Pooling p);  // "unset", "none", "mean", "cls", "last"

// HF tensor names of a mixture-of-experts block: "<prefix>layers.N.<block>.gate.weight"
// (the router) and "<prefix>layers.N.<block>.experts.E.<gate|up|down>.weight".
struct HfMoeNames {
  std::string block = "mlp";  // Qwen3-MoE "mlp", Mixtral "block_sparse_moe"
  std::string gate = "gate_proj", up = "up_proj", down = "down_proj";  // Mixtral w1, w3, w2
  std::string router = "gate";  // "<block>.<router>.weight" (gpt-oss "router", with a bias)
  // gpt-oss: the experts are GptOssExperts' fused tensors (gate_up_proj [E,
  // d_model, 2 ff] with gate at even and up at odd columns, down_proj [E, ff,
  // d_model], or their MXFP4 _blocks / _scales), which the loader presents as
  // [E, rows, cols] stacks (model/hf_expert_stacks.h); tensor_name gives those.
  bool gpt_oss_stacks = false;
};

// One sentence-transformers Dense module after pooling: y = W x, W [d_out, d_in],
// no bias, identity activation (what EmbeddingGemma ships; anything else is refused).
struct DenseProjection {
  int64_t d_in = 0;
  int64_t d_out = 0;
  std::string hf_path;  // HF: the module's directory ("2_Dense"); its weight is "<hf_path>/linear.weight"
};

struct ModelConfig {
  std::string architecture;  // family name: "llama", "qwen2", "qwen3", "mistral", "gemma3", "gemma4", "qwen3moe", "mixtral"
  WeightLayout layout = WeightLayout::kGguf;
  std::string hf_prefix = "model.";  // HF: prefix of the decoder tensors ("model.", "language_model.model.", ...)
  HfMoeNames hf_moe;                 // HF: names of the expert tensors (families with experts set them)

  int64_t d_model = 0;
  int32_t n_vocab = 0;
  int64_t n_ctx = 0;    // trained context length (context_length / max_position_embeddings)
  float eps = 1e-5f;    // RMSNorm epsilon, every norm
  float embedding_scale = 1.0f;  // token embeddings are multiplied by this (gemma: sqrt(d_model))
  bool tied_output = false;      // logits use the token embedding matrix
  bool has_output_bias = false;  // logits + a bias [n_vocab] (set at binding when the file has one)
  float final_logit_softcap = 0; // 0 = none; C > 0: logits = C * tanh(logits / C)
  // Per-layer inputs (gemma4): width P of each layer's slice; 0 = none. When
  // P > 0 every token gets pl [n_layers, P] from a looked-up table row
  // (per_layer_token_embd [n_vocab, n_layers * P], scaled by sqrt(P)) and a
  // projection of the scaled embedding; each layer then adds
  // norm(W_proj (act(W_gate x) ⊙ pl[l])) to the residual stream after its MLP.
  int64_t d_per_layer = 0;
  // Load-time fix: added to every RMSNorm weight (HF gemma stores w and applies 1 + w).
  float norm_weight_offset = 0;
  // The default prefill chunk size the file publishes (offgraph.kv.prefill_chunk_size); 0 = none.
  int64_t prefill_chunk_size = 0;
  std::vector<LayerConfig> layers;
  // Embedding models. pooling: how a sequence's rows become one vector
  // (GGUF <arch>.pooling_type; HF modules.json + 1_Pooling/config.json).
  // causal = false: every row attends over its whole sequence (GGUF
  // <arch>.attention.causal, or the arch gemma-embedding; HF
  // use_bidirectional_attention); such a model only embeds (it cannot decode).
  // dense: projections applied in order after pooling (GGUF dense_2, dense_3).
  Pooling pooling = Pooling::kUnset;
  bool causal = true;
  std::vector<DenseProjection> dense;
  // Encoders. layer_norm: every norm is a LayerNorm with a bias (mean
  // subtracted) instead of RMSNorm. n_token_types > 0: the file's
  // token-type table [n_token_types, d_model] exists and its row 0 (every
  // input is segment A) is added to each embedding. has_pos_embd: learned
  // absolute positions (position_embd [n_ctx, d_model]) are added.
  // has_embd_norm: a norm of the summed embeddings (token_embd_norm).
  // has_output_norm false: no final norm and no output matrix (an encoder
  // only embeds). hf_names: the HF tensor naming of the checkpoint.
  bool layer_norm = false;
  int n_token_types = 0;
  bool has_pos_embd = false;
  bool has_embd_norm = false;
  bool has_output_norm = true;
  enum class HfNames { kDecoder, kBert, kNomicBert };
  HfNames hf_names = HfNames::kDecoder;
  // Things the reader skipped on purpose (e.g. a checkpoint's vision tower),
  // one line each, for `inspect` and the run's log.
  std::vector<std::string> notes;

  int n_layers() const { return static_cast<int>(layers.size()); }
  // The width of an embedding: the last dense projection's output, else d_model.
  int64_t embedding_dim() const { return dense.empty() ? d_model : dense.back().d_out; }
};

// Standard RoPE frequencies base^(-2i/n_rot), i < n_rot/2.
std::vector<float> rope_inv_freq(double base, int n_rot);
// YaRN (llama.cpp's ggml_rope_yarn with ext_factor 1): pair i's frequency is
// base^(-2i/n_rot) · ((1 - r_i) / factor + r_i), r_i = 1 - clamp((i - lo) /
// max(0.001, hi - lo), 0, 1), lo = max(0, floor(d(beta_fast))), hi =
// min(n_rot - 1, ceil(d(beta_slow))), d(b) = n_rot ln(orig / (2π b)) / (2 ln base)
// (without floor and ceil when s.yarn_truncate is false, as transformers).
std::vector<float> yarn_rope_inv_freq(double base, int n_rot, const RopeScaling& s);
// The magnitude YaRN multiplies RoPE's cos and sin by: 1 + 0.1 ln(factor)
// (factor > 1; else 1). With every dim rotated, q·k grows by its square,
// which the readers fold into attn_scale (exact: nothing else reads q or k).
double yarn_mscale(const RopeScaling& s);
// Llama 3.1 "llama3" frequency factors ff_i (inv_freq is divided by them).
std::vector<float> llama3_rope_factors(double base, int n_rot, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_max_positions);

// Checks the internal consistency of a config (head counts, dims, donors,
// RoPE tables); `what` names the source in the error message.
void validate_config(const ModelConfig& c, const std::string& what);

// One cache per layer that owns KV; sharing layers map to their donor's cache.
KvGeometry kv_geometry_from_config(const ModelConfig& c);

// One line per distinct layer kind, for `inspect` and logs.
std::string describe_config(const ModelConfig& c);

}  // namespace og
