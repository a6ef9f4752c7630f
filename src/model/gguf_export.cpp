// The GGUF form of a ModelConfig: tensor plan, value fixes, metadata, and the
// read-back comparison (see gguf_export.h).
#include "model/gguf_export.h"

#include <cmath>
#include <utility>

#include "base/error.h"
#include "model/families/family.h"

namespace og {
namespace {

const FamilySpec& writer_of(const ModelConfig& c) {
  const FamilySpec* f = family_by_name(c.architecture);
  OG_CHECK(f != nullptr, "GGUF export: unknown model family '", c.architecture, "'");
  OG_CHECK(f->to_gguf != nullptr, "GGUF export: the ", c.architecture, " family has no GGUF form");
  return *f;
}

// The per-pair RoPE factors the file carries: rope_freqs.weight is shared by
// every layer that has factors (all of them for llama; gemma4's full layers
// only). A layer the family's reader would apply them to wrongly is caught by
// the read-back check.
std::vector<float> shared_freq_factors(const ModelConfig& c) {
  std::vector<float> ff;
  int from = -1;
  for (int l = 0; l < c.n_layers(); ++l) {
    const std::vector<float>& f = c.layers[l].rope_freq_factors;
    if (f.empty()) continue;
    if (from < 0) ff = f, from = l;
    OG_CHECK(f == ff, "GGUF export: layer ", l, " has other RoPE frequency factors than layer ", from,
             " (rope_freqs.weight is shared by every layer)");
  }
  return ff;
}

// longrope's long and short factors, one pair for every layer (the files
// hold one rope_factors_long/short.weight); empty when no layer has longrope.
std::pair<std::vector<float>, std::vector<float>> shared_longrope_factors(const ModelConfig& c) {
  std::pair<std::vector<float>, std::vector<float>> f;
  for (int l = 0; l < c.n_layers(); ++l) {
    const RopeScaling& s = c.layers[l].rope_scaling;
    const bool longrope = s.type == RopeScaling::Type::kLongrope;
    if (l == 0 && longrope) f = {s.long_factor, s.short_factor};
    OG_CHECK(longrope == !f.first.empty() && (!longrope || (s.long_factor == f.first && s.short_factor == f.second)),
             "GGUF export: layer ", l, " has other longrope factors than layer 0 (the file holds one pair)");
  }
  return f;
}

// The router and the three expert stacks of layer l, in the converter's
// order (ffn_gate_inp, ffn_down_exps, ffn_gate_exps, ffn_up_exps). From an HF
// source each stack is the experts' own matrices stacked; from a GGUF source
// the 3-D tensor itself.
void add_experts(std::vector<GgufTensorPlan>& out, const ModelConfig& c, int l,
                 const std::function<bool(const std::string&)>& source_has) {
  const LayerConfig& L = c.layers[l];
  ModelConfig g = c;
  g.layout = WeightLayout::kGguf;
  const int64_t d = c.d_model, E = L.n_experts, ff = L.d_ff_expert;
  auto add = [&](TensorRole role, std::vector<int64_t> shape) {
    GgufTensorPlan t;
    t.name = tensor_name(g, role, l);
    t.role = role;
    t.layer = l;
    t.matrix = true;
    t.shape = std::move(shape);
    const std::string fused =
        c.layout == WeightLayout::kHf ? hf_fused_experts_name(c, l, role == TensorRole::kDownExps) : "";
    // gpt-oss HF: the stacks model/hf_expert_stacks.h presents, GGUF-shaped like a GGUF source's.
    if (role == TensorRole::kRouter || c.layout == WeightLayout::kGguf || c.hf_moe.gpt_oss_stacks) {
      t.source = tensor_name(c, role, l);
    } else if (source_has && source_has(fused)) {  // transformers v5's fused experts
      t.source = fused;
      if (role != TensorRole::kDownExps) t.expert_half = role == TensorRole::kUpExps ? 1 : 0;
    } else {
      for (int e = 0; e < E; ++e) t.stack_sources.push_back(tensor_name(c, role, l, e));
    }
    out.push_back(std::move(t));
  };
  add(TensorRole::kRouter, {E, d});
  add(TensorRole::kDownExps, {E, d, ff});
  add(TensorRole::kGateExps, {E, ff, d});
  add(TensorRole::kUpExps, {E, ff, d});
  // gpt-oss: the router's and the experts' biases, always F32 (not matrices to quantize).
  auto bias = [&](TensorRole role, std::vector<int64_t> shape) {
    GgufTensorPlan t;
    t.name = tensor_name(g, role, l);
    t.source = tensor_name(c, role, l);
    t.role = role;
    t.layer = l;
    t.shape = std::move(shape);
    out.push_back(std::move(t));
  };
  if (L.has_router_bias) bias(TensorRole::kRouterBias, {E});
  if (L.has_expert_bias) {
    bias(TensorRole::kDownExpsBias, {E, d});
    bias(TensorRole::kGateExpsBias, {E, ff});
    bias(TensorRole::kUpExpsBias, {E, ff});
  }
}

}  // namespace

std::vector<float> permute_rows_to_interleaved(const std::vector<float>& x, int64_t n_heads, int64_t head_dim,
                                               int64_t cols) {
  OG_CHECK(static_cast<int64_t>(x.size()) == n_heads * head_dim * cols && head_dim % 2 == 0,
           "q/k permutation: ", x.size(), " values are not ", n_heads, " heads of ", head_dim, " rows of ", cols);
  std::vector<float> out(x.size());
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t dst = h * head_dim + 2 * i + j, src = h * head_dim + j * half + i;
        std::copy(x.begin() + src * cols, x.begin() + (src + 1) * cols, out.begin() + dst * cols);
      }
  return out;
}

std::vector<GgufTensorPlan> gguf_tensor_plan(const ModelConfig& c,
                                             const std::function<bool(const std::string&)>& source_has) {
  const FamilySpec& fam = writer_of(c);
  ModelConfig g = c;
  g.layout = WeightLayout::kGguf;
  const int64_t d = c.d_model;
  std::vector<GgufTensorPlan> out;
  auto add = [&](TensorRole role, int l, std::vector<int64_t> shape) -> GgufTensorPlan& {
    GgufTensorPlan t;
    t.name = tensor_name(g, role, l);
    t.source = tensor_name(c, role, l);
    t.role = role;
    t.layer = l;
    t.matrix = shape.size() >= 2;
    t.shape = std::move(shape);
    out.push_back(std::move(t));
    return out.back();
  };
  auto norm = [&](TensorRole role, int l, int64_t n) { add(role, l, {n}).add = c.norm_weight_offset; };
  OG_CHECK(c.n_vocab > 0, "GGUF export: the vocabulary size is unknown");
  add(TensorRole::kTokenEmbd, -1, {c.n_vocab, d});
  // Encoders: the token-type and position tables, the embedding LayerNorm.
  if (c.n_token_types > 0) add(TensorRole::kTokenTypes, -1, {c.n_token_types, d});
  if (c.has_pos_embd) add(TensorRole::kPosEmbd, -1, {c.n_ctx, d});
  if (c.has_embd_norm) norm(TensorRole::kEmbdNorm, -1, d);
  if (c.has_embd_norm && c.layer_norm) add(TensorRole::kEmbdNormBias, -1, {d});
  const int64_t P = c.d_per_layer;
  if (P > 0) {
    add(TensorRole::kPerLayerTokenEmbd, -1, {c.n_vocab, c.n_layers() * P});
    add(TensorRole::kPerLayerModelProj, -1, {c.n_layers() * P, d});
    norm(TensorRole::kPerLayerProjNorm, -1, P);
  }
  auto generated = [&](const char* name, const std::vector<float>& values) {
    GgufTensorPlan t;
    t.name = name;
    t.shape = {static_cast<int64_t>(values.size())};
    t.generated = values;
    out.push_back(std::move(t));
  };
  const std::vector<float> ff = shared_freq_factors(c);
  if (!ff.empty()) generated("rope_freqs.weight", ff);
  const auto [long_factors, short_factors] = shared_longrope_factors(c);
  if (!long_factors.empty()) {  // Phi-3's longrope, as the converter writes it
    generated("rope_factors_long.weight", long_factors);
    generated("rope_factors_short.weight", short_factors);
  }
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const int64_t q_dim = int64_t{L.n_heads} * L.head_dim_k, k_dim = int64_t{L.n_kv_heads} * L.head_dim_k;
    const int64_t v_dim = int64_t{L.n_kv_heads} * L.head_dim_v, o_dim = int64_t{L.n_heads} * L.head_dim_v;
    const bool permute = fam.gguf_rope_interleaved && !L.rope_interleaved;
    OG_CHECK(fam.gguf_rope_interleaved || !L.rope_interleaved, "GGUF export: layer ", l,
             " holds interleaved q/k rows but GGUF ", c.architecture, " expects rotate-half rows");
    OG_CHECK(!permute || L.rope_n_rot == L.head_dim_k, "GGUF export: layer ", l, " rotates ", L.rope_n_rot,
             " of ", L.head_dim_k, " dims, which the q/k row permutation does not support");
    auto qk = [&](GgufTensorPlan& t, int heads) {
      if (!permute) return;
      t.permute_heads = heads;
      t.permute_head_dim = L.head_dim_k;
    };
    if (!L.post_norm) norm(TensorRole::kAttnNorm, l, d);
    if (L.qkv_fused) {  // one matrix, rows q then k then v (Phi-3)
      OG_CHECK(!permute && L.kv_donor < 0, "GGUF export: layer ", l,
               " has fused q/k/v, which cannot be row-permuted or share KV");
      add(TensorRole::kQkv, l, {q_dim + k_dim + v_dim, d});
      if (L.has_qkv_bias) add(TensorRole::kQkvBias, l, {q_dim + k_dim + v_dim});
    } else {
      qk(add(TensorRole::kQ, l, {q_dim, d}), L.n_heads);
      if (L.has_qkv_bias) qk(add(TensorRole::kQBias, l, {q_dim}), L.n_heads);
      if (L.kv_donor < 0) {
        qk(add(TensorRole::kK, l, {k_dim, d}), L.n_kv_heads);
        if (L.has_qkv_bias) qk(add(TensorRole::kKBias, l, {k_dim}), L.n_kv_heads);
        add(TensorRole::kV, l, {v_dim, d});
        if (L.has_qkv_bias) add(TensorRole::kVBias, l, {v_dim});
      }
    }
    if (L.has_q_norm) norm(TensorRole::kQNorm, l, L.head_dim_k);
    if (L.has_k_norm && L.kv_donor < 0) norm(TensorRole::kKNorm, l, L.head_dim_k);
    add(TensorRole::kO, l, {d, o_dim});
    if (L.has_o_bias) add(TensorRole::kOBias, l, {d});
    if (L.has_sinks) add(TensorRole::kSinks, l, {L.n_heads});
    if (L.has_post_attn_norm) norm(TensorRole::kPostAttnNorm, l, d);
    if (L.post_norm) {  // encoders: the norm after the attention residual
      norm(TensorRole::kAttnOutNorm, l, d);
      if (c.layer_norm) add(TensorRole::kAttnOutNormBias, l, {d});
    } else {
      norm(TensorRole::kFfnNorm, l, d);
    }
    if (L.n_experts > 0) {
      add_experts(out, c, l, source_has);
    } else if (L.gate_up_fused) {  // [2 d_ff, d], gate rows first (Phi-3's ffn_up)
      add(TensorRole::kDown, l, {d, L.d_ff});
      add(TensorRole::kGateUp, l, {2 * L.d_ff, d});
    } else {
      if (L.ffn_gated) add(TensorRole::kGate, l, {L.d_ff, d});
      add(TensorRole::kUp, l, {L.d_ff, d});
      if (L.has_ffn_bias) add(TensorRole::kUpBias, l, {L.d_ff});
      add(TensorRole::kDown, l, {d, L.d_ff});
      if (L.has_ffn_bias) add(TensorRole::kDownBias, l, {d});
    }
    if (L.post_norm) {
      norm(TensorRole::kLayerOutNorm, l, d);
      if (c.layer_norm) add(TensorRole::kLayerOutNormBias, l, {d});
    }
    if (L.has_post_ffn_norm) norm(TensorRole::kPostFfnNorm, l, d);
    if (P > 0) {
      add(TensorRole::kPerLayerGate, l, {P, d});
      add(TensorRole::kPerLayerProj, l, {d, P});
      norm(TensorRole::kPerLayerPostNorm, l, d);
    }
    if (L.has_output_scale) add(TensorRole::kLayerOutputScale, l, {1});
  }
  if (c.has_output_norm) norm(TensorRole::kOutputNorm, -1, d);
  for (size_t i = 0; i < c.dense.size(); ++i)
    add(TensorRole::kDense, static_cast<int>(i), {c.dense[i].d_out, c.dense[i].d_in});
  if (!c.tied_output && c.has_output_norm) add(TensorRole::kOutput, -1, {c.n_vocab, d});
  if (source_has && source_has(tensor_name(c, TensorRole::kOutputBias))) add(TensorRole::kOutputBias, -1, {c.n_vocab});
  return out;
}

bool gguf_keeps_f32(const std::string& name) {
  return name.find("ffn_gate_inp.weight") != std::string::npos || name == "token_types.weight";
}

int64_t gguf_source_row(const GgufTensorPlan& t, int64_t r) {
  if (t.expert_half >= 0) {
    const int64_t rows = t.shape.at(1);
    return (r / rows) * 2 * rows + t.expert_half * rows + r % rows;
  }
  if (t.permute_heads == 0) return r;
  const int64_t hd = t.permute_head_dim, h = r / hd, rem = r % hd;
  return h * hd + (rem % 2) * (hd / 2) + rem / 2;
}

std::vector<int64_t> gguf_source_shape(const GgufTensorPlan& t) {
  std::vector<int64_t> s = t.shape;
  if (t.expert_half >= 0) s.at(1) *= 2;
  return s;
}

void apply_gguf_fixes(const GgufTensorPlan& t, std::vector<float>& v) {
  if (t.permute_heads > 0) {
    const int64_t cols = t.shape.size() == 2 ? t.shape[1] : 1;
    v = permute_rows_to_interleaved(v, t.permute_heads, t.permute_head_dim, cols);
  }
  if (t.add != 0)
    for (float& x : v) x += t.add;
}

void write_gguf_metadata(const ModelConfig& c, GgufWriter& w) { writer_of(c).to_gguf(c, w); }

std::vector<std::string> as_gguf_runs_it(ModelConfig& c) {
  std::vector<std::string> notes;
  for (int l = 0; l < c.n_layers(); ++l) {
    LayerConfig& L = c.layers[l];
    RopeScaling& s = L.rope_scaling;
    if (s.type != RopeScaling::Type::kYarn || s.yarn_truncate) continue;
    s.yarn_truncate = true;
    L.rope_inv_freq = yarn_rope_inv_freq(L.rope_base, L.rope_n_rot, s);
    if (notes.empty())
      notes.push_back("rope_scaling truncate = false has no GGUF key: the file runs YaRN with the ramp's corners "
                      "rounded to whole pairs, as llama.cpp runs every yarn file");
  }
  return notes;
}

namespace {

bool close(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)); }

template <class T>
void same(const std::string& file, const std::string& field, const T& want, const T& got) {
  OG_CHECK(want == got, file, ": reads back with ", field, " ", got, " but the model has ", want);
}

void same_layer(const std::string& file, int l, const LayerConfig& a, const LayerConfig& b) {
  const std::string p = cat("layer ", l, " ");
  same(file, p + "head count", a.n_heads, b.n_heads);
  same(file, p + "KV head count", a.n_kv_heads, b.n_kv_heads);
  same(file, p + "key length", a.head_dim_k, b.head_dim_k);
  same(file, p + "value length", a.head_dim_v, b.head_dim_v);
  same(file, p + "feed-forward width", a.d_ff, b.d_ff);
  same(file, p + "sliding window", a.window, b.window);
  same(file, p + "RoPE dimension count", a.rope_n_rot, b.rope_n_rot);
  same(file, p + "activation", std::string(activation_name(a.activation)), std::string(activation_name(b.activation)));
  same(file, p + "q norm", a.has_q_norm, b.has_q_norm);
  same(file, p + "k norm", a.has_k_norm, b.has_k_norm);
  same(file, p + "q/k/v bias", a.has_qkv_bias, b.has_qkv_bias);
  same(file, p + "output bias", a.has_o_bias, b.has_o_bias);
  same(file, p + "post-attention norm", a.has_post_attn_norm, b.has_post_attn_norm);
  same(file, p + "post-FFN norm", a.has_post_ffn_norm, b.has_post_ffn_norm);
  same(file, p + "KV donor", a.kv_donor, b.kv_donor);
  same(file, p + "v norm", a.has_v_norm, b.has_v_norm);
  same(file, p + "output scale", a.has_output_scale, b.has_output_scale);
  same(file, p + "post-norm (encoder) block", a.post_norm, b.post_norm);
  same(file, p + "fused q/k/v", a.qkv_fused, b.qkv_fused);
  same(file, p + "gated MLP", a.ffn_gated, b.ffn_gated);
  same(file, p + "MLP biases", a.has_ffn_bias, b.has_ffn_bias);
  same(file, p + "expert count", a.n_experts, b.n_experts);
  same(file, p + "used expert count", a.n_experts_used, b.n_experts_used);
  same(file, p + "expert feed-forward width", a.d_ff_expert, b.d_ff_expert);
  same(file, p + "expert weight renormalisation", a.expert_weights_norm, b.expert_weights_norm);
  same(file, p + "softmax after top-k", a.expert_softmax_after_topk, b.expert_softmax_after_topk);
  same(file, p + "router bias", a.has_router_bias, b.has_router_bias);
  same(file, p + "expert biases", a.has_expert_bias, b.has_expert_bias);
  same(file, p + "clamped SwiGLU experts", a.expert_swiglu_oai, b.expert_swiglu_oai);
  same(file, p + "attention sinks", a.has_sinks, b.has_sinks);
  OG_CHECK(close(a.attn_scale, b.attn_scale, 1e-6), file, ": reads back with ", p, "attention scale ", b.attn_scale,
           " but the model has ", a.attn_scale);
  same(file, p + "fused gate/up", a.gate_up_fused, b.gate_up_fused);
  same(file, p + "longrope table size", a.rope_inv_freq_long.size(), b.rope_inv_freq_long.size());
  same(file, p + "longrope original context", a.rope_long_after, b.rope_long_after);
  OG_CHECK(close(a.rope_attn_factor, b.rope_attn_factor, 1e-6), file, ": reads back with ", p, "RoPE attention factor ",
           b.rope_attn_factor, " but the model has ", a.rope_attn_factor);
  for (size_t i = 0; i < a.rope_inv_freq_long.size(); ++i)
    OG_CHECK(close(a.rope_inv_freq_long[i], b.rope_inv_freq_long[i], 1e-5), file, ": reads back with ", p,
             "long-context RoPE frequency ", i, " = ", b.rope_inv_freq_long[i], " but the model has ",
             a.rope_inv_freq_long[i]);
  same(file, p + "RoPE table size", a.rope_inv_freq.size(), b.rope_inv_freq.size());
  for (size_t i = 0; i < a.rope_inv_freq.size(); ++i)
    OG_CHECK(close(a.rope_inv_freq[i], b.rope_inv_freq[i], 1e-5), file, ": reads back with ", p, "RoPE frequency ",
             i, " = ", b.rope_inv_freq[i], " but the model has ", a.rope_inv_freq[i]);
}

}  // namespace

void check_same_config(const ModelConfig& c, const ModelConfig& w, const std::string& file) {
  const bool as_llama = c.architecture == "mistral" || c.architecture == "mixtral";  // written as GGUF llama
  same(file, "architecture", as_llama ? std::string("llama") : c.architecture, w.architecture);
  same(file, "hidden size", c.d_model, w.d_model);
  same(file, "vocabulary size", c.n_vocab, w.n_vocab);
  same(file, "context length", c.n_ctx, w.n_ctx);
  same(file, "RMSNorm epsilon", c.eps, w.eps);
  same(file, "tied output", c.tied_output, w.tied_output);
  same(file, "layer count", c.n_layers(), w.n_layers());
  same(file, "per-layer input width", c.d_per_layer, w.d_per_layer);
  same(file, "final logit soft-cap", c.final_logit_softcap, w.final_logit_softcap);
  same(file, "pooling", std::string(pooling_name(c.pooling)), std::string(pooling_name(w.pooling)));
  same(file, "causal attention", c.causal, w.causal);
  same(file, "LayerNorm", c.layer_norm, w.layer_norm);
  same(file, "token type count", c.n_token_types, w.n_token_types);
  same(file, "absolute position table", c.has_pos_embd, w.has_pos_embd);
  same(file, "dense projection count", c.dense.size(), w.dense.size());
  for (size_t i = 0; i < c.dense.size(); ++i) {
    same(file, cat("dense projection ", i, " input width"), c.dense[i].d_in, w.dense[i].d_in);
    same(file, cat("dense projection ", i, " output width"), c.dense[i].d_out, w.dense[i].d_out);
  }
  // HF gemma rounds sqrt(d_model) to the embedding dtype; GGUF keeps it in f32.
  OG_CHECK(close(c.embedding_scale, w.embedding_scale, 1e-2), file, ": reads back with embedding scale ",
           w.embedding_scale, " but the model has ", c.embedding_scale);
  for (int l = 0; l < c.n_layers(); ++l) same_layer(file, l, c.layers[l], w.layers[l]);
}

}  // namespace og
