// Synthetic gpt-oss models (GGUF only): the spec's ModelConfig as the gpt-oss
// reader gives it back, and its tensor plan under the GGUF names themselves
// (there is no HF form to convert from: the checkpoint's fused MXFP4 experts
// are not written). Experts are written in the spec's weight dtype (MXFP4
// for the real model), the other matrices in gpt_oss_dense_dtype.
#include <cmath>

#include "base/error.h"
#include "model/families/common.h"
#include "model/weights.h"
#include "synth/synth_internal.h"

namespace og::synth {

SynthSpec gpt_oss_20b_spec() {
  SynthSpec s = tiny_spec(Family::kGptOss);
  s.d_model = 2880;
  s.n_layers = 24;
  s.n_heads = 64;
  s.n_kv_heads = 8;
  s.head_dim = 64;
  s.d_ff = 2880;
  s.n_experts = 32;
  s.n_experts_used = 4;
  s.d_ff_expert = 2880;
  s.window = 128;
  s.n_ctx = 131072;
  s.yarn_factor = 32;
  s.yarn_original = 4096;
  s.tokenizer = "llama3";  // 128256 tokens (the real o200k vocabulary has 201088)
  s.gpt_oss_dense_dtype = DType::Q8_0;
  return s;
}

ModelConfig gpt_oss_model_config(const SynthSpec& s) {
  ModelConfig c;
  c.architecture = "gpt-oss";
  c.layout = WeightLayout::kGguf;
  c.d_model = s.d_model;
  c.n_vocab = static_cast<int32_t>(n_vocab(s));
  c.n_ctx = s.n_ctx;
  c.eps = static_cast<float>(s.rms_eps);
  c.tied_output = s.tied;
  RopeScaling yarn;
  yarn.type = RopeScaling::Type::kYarn;
  yarn.factor = s.yarn_factor;
  yarn.original_max_positions = static_cast<double>(s.yarn_original);
  const double m = yarn_mscale(yarn);
  c.layers.assign(static_cast<size_t>(s.n_layers), LayerConfig{});
  for (int l = 0; l < s.n_layers; ++l) {
    LayerConfig& L = c.layers[l];
    L.n_heads = static_cast<int>(s.n_heads);
    L.n_kv_heads = static_cast<int>(s.n_kv_heads);
    L.head_dim_k = L.head_dim_v = static_cast<int>(s.head_dim);
    L.d_ff = s.d_ff;
    L.window = l % 2 == 0 ? static_cast<int>(s.window) : 0;
    L.rope_n_rot = L.head_dim_k;
    set_rope(L, s.rope_base, yarn, {});
    L.attn_scale = static_cast<float>(m * m / std::sqrt(static_cast<double>(L.head_dim_k)));
    L.has_qkv_bias = L.has_o_bias = L.has_sinks = true;
    L.gguf_ffn_norm_is_post_attention = true;
    L.n_experts = static_cast<int>(s.n_experts);
    L.n_experts_used = static_cast<int>(s.n_experts_used);
    L.d_ff_expert = s.d_ff_expert;
    L.expert_weights_norm = false;
    L.expert_softmax_after_topk = L.has_router_bias = L.has_expert_bias = L.expert_swiglu_oai = true;
  }
  validate_config(c, "synthetic gpt-oss model");
  return c;
}

std::vector<PlannedTensor> plan_gpt_oss(const SynthSpec& s) {
  const ModelConfig c = gpt_oss_model_config(s);
  const int64_t d = s.d_model, V = c.n_vocab, q = s.n_heads * s.head_dim, kv = s.n_kv_heads * s.head_dim;
  const int64_t E = s.n_experts, ff = s.d_ff_expert;
  std::vector<PlannedTensor> out;
  auto add = [&](TensorRole role, int l, std::vector<int64_t> shape, Kind kind, int64_t fan_in = 1) {
    PlannedTensor t;
    t.hf_name = tensor_name(c, role, l);
    t.shape = std::move(shape);
    t.kind = kind;
    t.fan_in = fan_in;
    out.push_back(std::move(t));
  };
  add(TensorRole::kTokenEmbd, -1, {V, d}, Kind::kEmbed, d);
  for (int l = 0; l < s.n_layers; ++l) {
    add(TensorRole::kAttnNorm, l, {d}, Kind::kNorm);
    add(TensorRole::kQ, l, {q, d}, Kind::kLinear, d);
    add(TensorRole::kK, l, {kv, d}, Kind::kLinear, d);
    add(TensorRole::kV, l, {kv, d}, Kind::kLinear, d);
    add(TensorRole::kQBias, l, {q}, Kind::kBias);
    add(TensorRole::kKBias, l, {kv}, Kind::kBias);
    add(TensorRole::kVBias, l, {kv}, Kind::kBias);
    add(TensorRole::kO, l, {d, q}, Kind::kLinear, q);
    add(TensorRole::kOBias, l, {d}, Kind::kBias);
    add(TensorRole::kSinks, l, {s.n_heads}, Kind::kNorm);  // logits near 1: about one score's weight
    add(TensorRole::kFfnNorm, l, {d}, Kind::kNorm);
    add(TensorRole::kRouter, l, {E, d}, Kind::kLinear, d);
    add(TensorRole::kRouterBias, l, {E}, Kind::kBias);
    add(TensorRole::kGateExps, l, {E, ff, d}, Kind::kLinear, d);
    add(TensorRole::kUpExps, l, {E, ff, d}, Kind::kLinear, d);
    add(TensorRole::kDownExps, l, {E, d, ff}, Kind::kLinear, ff);
    add(TensorRole::kGateExpsBias, l, {E, ff}, Kind::kBias);
    add(TensorRole::kUpExpsBias, l, {E, ff}, Kind::kBias);
    add(TensorRole::kDownExpsBias, l, {E, d}, Kind::kBias);
  }
  add(TensorRole::kOutputNorm, -1, {d}, Kind::kNorm);
  if (!s.tied) add(TensorRole::kOutput, -1, {V, d}, Kind::kLinear, d);
  return out;
}

}  // namespace og::synth
