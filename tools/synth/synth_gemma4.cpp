// The synthetic gemma4 family: its HF tensor plan (text weights under
// model.language_model., plus a stand-in vision tensor that loaders skip) and
// its config.json (Gemma4ForConditionalGeneration with text_config). The GGUF
// form is written by src/model from the config this reads as.
#include <cmath>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

const char* const kPrefix = "model.language_model.";

int64_t first_shared(const SynthSpec& s) { return s.n_layers - s.n_shared_kv; }

}  // namespace

int64_t gemma4_layer_head_dim(const SynthSpec& s, int64_t l) {
  return is_sliding_layer(s, l) ? s.head_dim : s.head_dim_full;
}

int64_t gemma4_layer_d_ff(const SynthSpec& s, int64_t l) {
  return s.double_wide_mlp && l >= first_shared(s) ? 2 * s.d_ff : s.d_ff;
}

bool gemma4_owns_kv(const SynthSpec& s, int64_t l) { return l < first_shared(s); }

void validate_gemma4(const SynthSpec& s) {
  OG_CHECK(s.window > 0, "synthetic model: gemma4 needs a sliding window (--window)");
  OG_CHECK(s.head_dim_full > 0 && s.head_dim_full % 2 == 0 && s.head_dim_full <= (int64_t{1} << 16),
           "synthetic model: gemma4 head_dim_full ", s.head_dim_full, " must be even and positive");
  OG_CHECK(s.n_shared_kv >= 0 && s.n_shared_kv < s.n_layers, "synthetic model: gemma4 n_shared_kv ", s.n_shared_kv,
           " must be in 0..n_layers-1");
  OG_CHECK(s.d_per_layer >= 0 && s.d_per_layer <= (int64_t{1} << 16), "synthetic model: gemma4 d_per_layer ",
           s.d_per_layer, " is out of range");
  OG_CHECK(s.partial_rotary > 0 && s.partial_rotary <= 1, "synthetic model: gemma4 partial_rotary must be in (0, 1]");
  OG_CHECK(s.final_softcap >= 0, "synthetic model: final_softcap must be >= 0");
  // Every sharing layer needs an owner of its own type before the shared block.
  for (int64_t l = first_shared(s); l < s.n_layers; ++l) {
    bool owner = false;
    for (int64_t j = 0; j < first_shared(s); ++j) owner = owner || is_sliding_layer(s, j) == is_sliding_layer(s, l);
    OG_CHECK(owner, "synthetic model: gemma4 layer ", l, " shares KV but no owner layer of its type precedes it ",
             "(fewer --shared-kv layers)");
  }
}

std::vector<PlannedTensor> plan_gemma4(const SynthSpec& s) {
  const int64_t d = s.d_model, V = n_vocab(s), P = s.d_per_layer, LP = s.n_layers * s.d_per_layer;
  std::vector<PlannedTensor> out;
  auto add = [&](const std::string& hf, std::vector<int64_t> shape, Kind kind, int64_t fan_in = 1) {
    PlannedTensor t;
    t.hf_name = kPrefix + hf;
    t.shape = std::move(shape);
    t.kind = kind;
    t.fan_in = fan_in;
    out.push_back(std::move(t));
    return &out.back();
  };
  add("embed_tokens.weight", {V, d}, Kind::kEmbed, d);
  if (P > 0) {
    add("embed_tokens_per_layer.weight", {V, LP}, Kind::kEmbed, P);
    add("per_layer_model_projection.weight", {LP, d}, Kind::kLinear, d);
    add("per_layer_projection_norm.weight", {P}, Kind::kNorm);
  }
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const std::string h = cat("layers.", l, ".");
    const int64_t hd = gemma4_layer_head_dim(s, l), ff = gemma4_layer_d_ff(s, l);
    const int64_t q_dim = s.n_heads * hd, kv_dim = s.n_kv_heads * hd;
    const bool kv = gemma4_owns_kv(s, l) || s.sharer_kv_tensors;
    add(h + "input_layernorm.weight", {d}, Kind::kNorm);
    add(h + "self_attn.q_proj.weight", {q_dim, d}, Kind::kLinear, d);
    if (kv) {
      add(h + "self_attn.k_proj.weight", {kv_dim, d}, Kind::kLinear, d);
      add(h + "self_attn.v_proj.weight", {kv_dim, d}, Kind::kLinear, d);
    }
    add(h + "self_attn.q_norm.weight", {hd}, Kind::kNorm);
    if (kv) add(h + "self_attn.k_norm.weight", {hd}, Kind::kNorm);
    add(h + "self_attn.o_proj.weight", {d, q_dim}, Kind::kLinear, q_dim);
    add(h + "post_attention_layernorm.weight", {d}, Kind::kNorm);
    add(h + "pre_feedforward_layernorm.weight", {d}, Kind::kNorm);
    add(h + "mlp.gate_proj.weight", {ff, d}, Kind::kLinear, d);
    add(h + "mlp.up_proj.weight", {ff, d}, Kind::kLinear, d);
    add(h + "mlp.down_proj.weight", {d, ff}, Kind::kLinear, ff);
    add(h + "post_feedforward_layernorm.weight", {d}, Kind::kNorm);
    if (P > 0) {
      add(h + "per_layer_input_gate.weight", {P, d}, Kind::kLinear, d);
      add(h + "per_layer_projection.weight", {d, P}, Kind::kLinear, P);
      add(h + "post_per_layer_input_norm.weight", {d}, Kind::kNorm);
    }
    if (s.layer_scale) add(h + "layer_scalar", {1}, Kind::kScalar);
  }
  add("norm.weight", {d}, Kind::kNorm);
  if (s.vision) return out;  // the tower itself (synth_vision_gemma4.cpp) goes to the HF form
  // HF only: a stand-in for the vision tower the text model ignores.
  PlannedTensor vision;
  vision.hf_name = "model.vision_tower.patch_embedder.input_proj.weight";
  vision.shape = {4, 4};
  vision.kind = Kind::kLinear;
  vision.fan_in = 4;
  out.push_back(vision);
  return out;
}

nlohmann::ordered_json gemma4_hf_config(const SynthSpec& s, const TokenizerInfo& tok) {
  nlohmann::ordered_json t;
  t["model_type"] = "gemma4_text";
  t["hidden_size"] = s.d_model;
  t["intermediate_size"] = s.d_ff;
  t["use_double_wide_mlp"] = s.double_wide_mlp;
  t["num_hidden_layers"] = s.n_layers;
  t["num_attention_heads"] = s.n_heads;
  t["num_key_value_heads"] = s.n_kv_heads;
  t["num_global_key_value_heads"] = nullptr;
  t["head_dim"] = s.head_dim;
  t["global_head_dim"] = s.head_dim_full;
  t["max_position_embeddings"] = s.n_ctx;
  t["rms_norm_eps"] = s.rms_eps;
  t["vocab_size"] = n_vocab(s);
  t["vocab_size_per_layer_input"] = n_vocab(s);
  t["hidden_size_per_layer_input"] = s.d_per_layer;
  // As Google's configs: E2B/E4B (per-layer inputs) leave it unset, the
  // models without them (26B-A4B, 31B) open image spans in sliding layers.
  if (s.d_per_layer > 0) t["use_bidirectional_attention"] = nullptr;
  else t["use_bidirectional_attention"] = "vision";
  t["hidden_activation"] = "gelu_pytorch_tanh";
  t["sliding_window"] = s.window;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int64_t l = 0; l < s.n_layers; ++l) types.push_back(is_sliding_layer(s, l) ? "sliding_attention" : "full_attention");
  t["layer_types"] = types;
  t["num_kv_shared_layers"] = s.n_shared_kv;
  t["rope_parameters"] = {
      {"full_attention",
       {{"rope_type", "proportional"}, {"partial_rotary_factor", s.partial_rotary}, {"rope_theta", s.rope_base}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", s.rope_base_local}}}};
  if (s.final_softcap > 0) t["final_logit_softcapping"] = s.final_softcap;
  else t["final_logit_softcapping"] = nullptr;
  t["attention_k_eq_v"] = false;
  t["enable_moe_block"] = false;
  t["attention_bias"] = false;
  t["tie_word_embeddings"] = true;
  t["bos_token_id"] = tok.bos;
  t["eos_token_id"] = tok.eos;
  nlohmann::ordered_json c;
  c["architectures"] = {"Gemma4ForConditionalGeneration"};
  c["model_type"] = "gemma4";
  c["text_config"] = t;
  if (s.vision) c["vision_config"] = gemma4_vision_hf_config(s);
  else c["vision_config"] = {{"model_type", "gemma4_vision"}, {"hidden_size", 4}};
  c["tie_word_embeddings"] = true;
  c["torch_dtype"] = "float32";
  return c;
}

}  // namespace og::synth
