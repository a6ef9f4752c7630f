// Readers shared by the family specs: the generic GGUF keys (<arch>.*) and
// config.json fields every decoder family has, RoPE scaling in both forms,
// and the refusal of fields the engine does not implement.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "format/hf_config.h"
#include "model/families/family.h"

namespace og {

// Sets a layer's RoPE (L.rope_n_rot must be set): rope_base, the declared
// scaling, the frequency factors (ff, or computed for llama3 scaling) and
// inv_freq = base^(-2i/n_rot) / linear factor / ff_i.
// longrope: rope_inv_freq from the short factors, rope_inv_freq_long from the
// long ones, rope_long_after = original_max_positions, rope_attn_factor = s.attn_factor.
void set_rope(LayerConfig& L, double base, const RopeScaling& s, const std::vector<float>& ff);
// f when it holds n_rot / 2 positive finite values, else og::Error "<what> has ...".
std::vector<float> checked_rope_factors(const std::vector<float>& f, int n_rot, const std::string& what);

// ---- GGUF ----
// Reads context/embedding/block/ff/head/key/value/rope/eps/vocab keys of
// `arch` into c.layers (sizes them), the generic rope scaling (type linear or
// none; rope_freqs.weight as per-dimension factors), sliding window on every
// layer if `<arch>.attention.sliding_window` > 0, q/k/v/o bias presence, and
// refuses MoE, soft-capping, chunked attention, fused qkv and unknown rope
// scaling types. attn_scale = 1/sqrt(head_dim_k); rope_interleaved = false.
// reads_softcap: the family reads final_logit_softcapping itself (not refused).
// reads_experts: the family reads <arch>.expert_count itself (read_gguf_experts; not refused).
// reads_fused_qkv: a layer's blk.N.attn_qkv.weight (Phi-3) sets qkv_fused (else it is refused).
void read_gguf_common(const GgufFile& f, const std::string& arch, ModelConfig& c, bool reads_softcap = false,
                      bool reads_experts = false, bool reads_fused_qkv = false);
// The rope scaling of `<arch>.rope.scaling.*` (linear, yarn or none).
RopeScaling gguf_rope_scaling(const GgufFile& f, const std::string& arch);

// The generic <arch>.* keys of c (general.architecture too): context,
// embedding, block count, per-layer feed-forward / head counts (a scalar when
// every layer agrees, else an array), key/value lengths, RoPE dimension count,
// base and linear scaling (from layer o.rope_layer), epsilon, vocabulary size
// and, with o.windows, the one sliding window every layer shares. og::Error
// when a field the arch stores once differs between layers, or (with
// o.attn_scale) the attention scale is not 1/sqrt(head_dim_k), which the arch
// implies without a key.
struct GgufCommonOptions {
  bool windows = true;
  int rope_layer = 0;
  bool attn_scale = true;
  bool causal_key = true;  // write_gguf_embedding's causal_key
};
void write_gguf_common(const ModelConfig& c, const std::string& arch, GgufWriter& w, const GgufCommonOptions& o = {});

// ---- mixture of experts (experts.cpp) ----
// <arch>.expert_count / expert_used_count / expert_feed_forward_length (with
// expert_ff_key; else the experts are feed_forward_length wide, as llama.cpp
// runs arch llama) / expert_weights_norm (default true, llama.cpp's
// behaviour for these archs) into every layer; no expert_count = dense.
// og::Error naming the key for shared experts, dense leading layers, grouped
// selection, a gating function other than softmax, a weights scale.
void read_gguf_experts(const GgufFile& f, const std::string& arch, ModelConfig& c, bool expert_ff_key);
// The inverse (nothing for a dense model); og::Error when the layers differ
// or the arch cannot express the experts' width or unnormalised weights.
void write_gguf_experts(const ModelConfig& c, const std::string& arch, GgufWriter& w, bool expert_ff_key);
// config.json: the expert count field, num_experts_per_tok, the width field
// and the optional norm field (absent = norm_default); refuses
// decoder_sparse_step != 1, mlp_only_layers, shared experts.
struct HfExpertFields {
  const char* count;  // "num_experts" (Qwen3-MoE) / "num_local_experts" (Mixtral)
  const char* width;  // "moe_intermediate_size" / "intermediate_size"
  const char* norm;   // "norm_topk_prob" / nullptr (always normalised)
  bool norm_default;
};
void read_hf_experts(const HfInput& in, ModelConfig& c, const HfExpertFields& fields);

// ---- embedding facts (embedding_keys.cpp) ----
// <arch>.pooling_type, <arch>.attention.causal and the dense projection keys
// (dense_2_feat_in/out, dense_3_feat_in/out); og::Error naming the key for a
// value the engine does not run (rank pooling, dense biases). read_gguf_common calls it.
void read_gguf_embedding(const GgufFile& f, const std::string& arch, ModelConfig& c);
// Their inverse; causal_key false: the arch implies non-causal attention (gemma-embedding).
void write_gguf_embedding(const ModelConfig& c, const std::string& arch, GgufWriter& w, bool causal_key);
// HF: use_bidirectional_attention of config.json, and sentence-transformers'
// modules.json in `dir` (Pooling: 1_Pooling/config.json; Dense: N_Dense/config.json,
// identity and bias-free only; Normalize is the front ends' default; any other module is refused).
void read_hf_embedding(const std::string& dir, const nlohmann::json& cfg, const std::string& config_file,
                       ModelConfig& c);

// ---- HF config.json ----
// Fields are read with format/hf_config.h's json_int / json_number /
// json_bool / json_string / json_has (the one set of accessors).
// The common fields (hidden_size, num_hidden_layers, heads, head_dim,
// intermediate_size, max_position_embeddings, rms_norm_eps (default
// default_eps), vocab_size, tie_word_embeddings (default default_tied),
// hidden_act, attention_bias -> q/k/v/o bias, rope_theta + rope_scaling /
// rope_parameters (flat form), refusals of mlp_bias, MoE, soft-capping,
// chunked attention, partial rotary). Windows are left 0 (families set them).
// reads_experts: the family reads the expert fields itself (read_hf_experts; not refused).
// reads_partial_rotary: partial_rotary_factor (top level or in rope_parameters)
// rotates int(head_dim * factor) dims (Phi-4-mini's phi3) instead of being refused.
void read_hf_common(const HfInput& in, ModelConfig& c, double default_eps, bool default_tied,
                    bool reads_experts = false, bool reads_partial_rotary = false);
// Parses one rope_scaling / rope_parameters object (null or absent = none).
// `where` names it in messages ("config.json: rope_scaling").
RopeScaling parse_hf_rope(const nlohmann::json& obj, const std::string& where);
// rope_theta, else rope_parameters.rope_theta, else `fallback`.
double hf_rope_theta(const nlohmann::json& cfg, const std::string& file, double fallback);
// layer_types when present: true = sliding_attention; refuses other kinds.
std::optional<std::vector<bool>> hf_layer_types(const nlohmann::json& cfg, const std::string& file, int n_layers);

}  // namespace og
