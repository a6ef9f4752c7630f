// Tensor names of both layouts and the binding of a config's tensors, with
// presence, shape and dtype checks and the load-time norm fix.
#include "model/weights.h"

#include <cmath>

#include "base/error.h"
#include "kernels/ops.h"

namespace og {
namespace {

std::string gguf_name(TensorRole r, int l) {
  const std::string b = "blk." + std::to_string(l) + ".";
  switch (r) {
    case TensorRole::kTokenEmbd: return "token_embd.weight";
    case TensorRole::kOutputNorm: return "output_norm.weight";
    case TensorRole::kOutput: return "output.weight";
    case TensorRole::kOutputBias: return "output.bias";
    case TensorRole::kAttnNorm: return b + "attn_norm.weight";
    case TensorRole::kQ: return b + "attn_q.weight";
    case TensorRole::kK: return b + "attn_k.weight";
    case TensorRole::kV: return b + "attn_v.weight";
    case TensorRole::kO: return b + "attn_output.weight";
    case TensorRole::kQBias: return b + "attn_q.bias";
    case TensorRole::kKBias: return b + "attn_k.bias";
    case TensorRole::kVBias: return b + "attn_v.bias";
    case TensorRole::kOBias: return b + "attn_output.bias";
    case TensorRole::kQNorm: return b + "attn_q_norm.weight";
    case TensorRole::kKNorm: return b + "attn_k_norm.weight";
    case TensorRole::kPostAttnNorm: return b + "post_attention_norm.weight";
    case TensorRole::kFfnNorm: return b + "ffn_norm.weight";
    case TensorRole::kPostFfnNorm: return b + "post_ffw_norm.weight";
    case TensorRole::kGate: return b + "ffn_gate.weight";
    case TensorRole::kUp: return b + "ffn_up.weight";
    case TensorRole::kDown: return b + "ffn_down.weight";
    case TensorRole::kPerLayerTokenEmbd: return "per_layer_token_embd.weight";
    case TensorRole::kPerLayerModelProj: return "per_layer_model_proj.weight";
    case TensorRole::kPerLayerProjNorm: return "per_layer_proj_norm.weight";
    case TensorRole::kPerLayerGate: return b + "inp_gate.weight";
    case TensorRole::kPerLayerProj: return b + "proj.weight";
    case TensorRole::kPerLayerPostNorm: return b + "post_norm.weight";
    case TensorRole::kLayerOutputScale: return b + "layer_output_scale.weight";
    case TensorRole::kDense: return "dense_" + std::to_string(l + 2) + ".weight";
    case TensorRole::kRouter: return b + "ffn_gate_inp.weight";
    case TensorRole::kGateExps: return b + "ffn_gate_exps.weight";
    case TensorRole::kUpExps: return b + "ffn_up_exps.weight";
    case TensorRole::kDownExps: return b + "ffn_down_exps.weight";
    case TensorRole::kSinks: return b + "attn_sinks.weight";
    case TensorRole::kRouterBias: return b + "ffn_gate_inp.bias";
    case TensorRole::kGateExpsBias: return b + "ffn_gate_exps.bias";
    case TensorRole::kUpExpsBias: return b + "ffn_up_exps.bias";
    case TensorRole::kDownExpsBias: return b + "ffn_down_exps.bias";
    case TensorRole::kGateUp: return b + "ffn_up.weight";
    case TensorRole::kTokenTypes: return "token_types.weight";
    case TensorRole::kPosEmbd: return "position_embd.weight";
    case TensorRole::kEmbdNorm: return "token_embd_norm.weight";
    case TensorRole::kEmbdNormBias: return "token_embd_norm.bias";
    case TensorRole::kQkv: return b + "attn_qkv.weight";
    case TensorRole::kQkvBias: return b + "attn_qkv.bias";
    case TensorRole::kAttnOutNorm: return b + "attn_output_norm.weight";
    case TensorRole::kAttnOutNormBias: return b + "attn_output_norm.bias";
    case TensorRole::kLayerOutNorm: return b + "layer_output_norm.weight";
    case TensorRole::kLayerOutNormBias: return b + "layer_output_norm.bias";
    case TensorRole::kUpBias: return b + "ffn_up.bias";
    case TensorRole::kDownBias: return b + "ffn_down.bias";
  }
  return "";
}

// HF BertModel (prefix "" or "bert."): embeddings.*, encoder.layer.N.*.
std::string hf_bert_name(const ModelConfig& c, TensorRole r, int l) {
  const std::string& p = c.hf_prefix;
  const std::string b = p + "encoder.layer." + std::to_string(l) + ".";
  switch (r) {
    case TensorRole::kTokenEmbd: return p + "embeddings.word_embeddings.weight";
    case TensorRole::kTokenTypes: return p + "embeddings.token_type_embeddings.weight";
    case TensorRole::kPosEmbd: return p + "embeddings.position_embeddings.weight";
    case TensorRole::kEmbdNorm: return p + "embeddings.LayerNorm.weight";
    case TensorRole::kEmbdNormBias: return p + "embeddings.LayerNorm.bias";
    case TensorRole::kQ: return b + "attention.self.query.weight";
    case TensorRole::kK: return b + "attention.self.key.weight";
    case TensorRole::kV: return b + "attention.self.value.weight";
    case TensorRole::kQBias: return b + "attention.self.query.bias";
    case TensorRole::kKBias: return b + "attention.self.key.bias";
    case TensorRole::kVBias: return b + "attention.self.value.bias";
    case TensorRole::kO: return b + "attention.output.dense.weight";
    case TensorRole::kOBias: return b + "attention.output.dense.bias";
    case TensorRole::kAttnOutNorm: return b + "attention.output.LayerNorm.weight";
    case TensorRole::kAttnOutNormBias: return b + "attention.output.LayerNorm.bias";
    case TensorRole::kUp: return b + "intermediate.dense.weight";
    case TensorRole::kUpBias: return b + "intermediate.dense.bias";
    case TensorRole::kDown: return b + "output.dense.weight";
    case TensorRole::kDownBias: return b + "output.dense.bias";
    case TensorRole::kLayerOutNorm: return b + "output.LayerNorm.weight";
    case TensorRole::kLayerOutNormBias: return b + "output.LayerNorm.bias";
    default: return "(no BertModel tensor for this role)";
  }
}

// HF NomicBertModel: embeddings.*, emb_ln, encoder.layers.N.{attn.Wqkv,
// attn.out_proj, norm1, mlp.fc11 (up), mlp.fc12 (gate), mlp.fc2, norm2}.
std::string hf_nomic_name(const ModelConfig& c, TensorRole r, int l) {
  const std::string& p = c.hf_prefix;
  const std::string b = p + "encoder.layers." + std::to_string(l) + ".";
  switch (r) {
    case TensorRole::kTokenEmbd: return p + "embeddings.word_embeddings.weight";
    case TensorRole::kTokenTypes: return p + "embeddings.token_type_embeddings.weight";
    case TensorRole::kEmbdNorm: return p + "emb_ln.weight";
    case TensorRole::kEmbdNormBias: return p + "emb_ln.bias";
    case TensorRole::kQkv: return b + "attn.Wqkv.weight";
    case TensorRole::kQkvBias: return b + "attn.Wqkv.bias";
    case TensorRole::kO: return b + "attn.out_proj.weight";
    case TensorRole::kOBias: return b + "attn.out_proj.bias";
    case TensorRole::kAttnOutNorm: return b + "norm1.weight";
    case TensorRole::kAttnOutNormBias: return b + "norm1.bias";
    case TensorRole::kUp: return b + "mlp.fc11.weight";
    case TensorRole::kGate: return b + "mlp.fc12.weight";
    case TensorRole::kDown: return b + "mlp.fc2.weight";
    case TensorRole::kLayerOutNorm: return b + "norm2.weight";
    case TensorRole::kLayerOutNormBias: return b + "norm2.bias";
    default: return "(no NomicBertModel tensor for this role)";
  }
}

std::string hf_name(const ModelConfig& c, TensorRole r, int l, int e) {
  if (c.hf_names == ModelConfig::HfNames::kBert) return hf_bert_name(c, r, l);
  if (c.hf_names == ModelConfig::HfNames::kNomicBert) return hf_nomic_name(c, r, l);
  const std::string& p = c.hf_prefix;
  const std::string b = p + "layers." + std::to_string(l) + ".";
  const std::string ex = b + c.hf_moe.block + ".experts." + std::to_string(e) + ".";
  const bool gemma_norms = l >= 0 && l < c.n_layers() && c.layers[l].has_post_attn_norm;
  switch (r) {
    case TensorRole::kTokenEmbd: return p + "embed_tokens.weight";
    case TensorRole::kOutputNorm: return p + "norm.weight";
    case TensorRole::kOutput: return "lm_head.weight";
    case TensorRole::kOutputBias: return "lm_head.bias";
    case TensorRole::kAttnNorm: return b + "input_layernorm.weight";
    case TensorRole::kQ: return b + "self_attn.q_proj.weight";
    case TensorRole::kK: return b + "self_attn.k_proj.weight";
    case TensorRole::kV: return b + "self_attn.v_proj.weight";
    case TensorRole::kO: return b + "self_attn.o_proj.weight";
    case TensorRole::kQBias: return b + "self_attn.q_proj.bias";
    case TensorRole::kKBias: return b + "self_attn.k_proj.bias";
    case TensorRole::kVBias: return b + "self_attn.v_proj.bias";
    case TensorRole::kOBias: return b + "self_attn.o_proj.bias";
    case TensorRole::kQNorm: return b + "self_attn.q_norm.weight";
    case TensorRole::kKNorm: return b + "self_attn.k_norm.weight";
    case TensorRole::kPostAttnNorm: return b + "post_attention_layernorm.weight";
    case TensorRole::kFfnNorm:
      return b + (gemma_norms ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight");
    case TensorRole::kPostFfnNorm: return b + "post_feedforward_layernorm.weight";
    case TensorRole::kGate: return b + "mlp.gate_proj.weight";
    case TensorRole::kUp: return b + "mlp.up_proj.weight";
    case TensorRole::kDown: return b + "mlp.down_proj.weight";
    case TensorRole::kPerLayerTokenEmbd: return p + "embed_tokens_per_layer.weight";
    case TensorRole::kPerLayerModelProj: return p + "per_layer_model_projection.weight";
    case TensorRole::kPerLayerProjNorm: return p + "per_layer_projection_norm.weight";
    case TensorRole::kPerLayerGate: return b + "per_layer_input_gate.weight";
    case TensorRole::kPerLayerProj: return b + "per_layer_projection.weight";
    case TensorRole::kPerLayerPostNorm: return b + "post_per_layer_input_norm.weight";
    case TensorRole::kLayerOutputScale: return b + "layer_scalar";
    case TensorRole::kDense:
      return l >= 0 && l < static_cast<int>(c.dense.size()) ? c.dense[l].hf_path + "/linear.weight" : "";
    case TensorRole::kRouter: return b + c.hf_moe.block + "." + c.hf_moe.router + ".weight";
    case TensorRole::kRouterBias: return b + c.hf_moe.block + "." + c.hf_moe.router + ".bias";
    case TensorRole::kSinks: return b + "self_attn.sinks";  // GptOssAttention's
    default: break;
  }
  if (c.hf_moe.gpt_oss_stacks) {  // the stacks model/hf_expert_stacks.h presents
    std::string stack = hf_expert_stack_name(c, l, r);
    if (!stack.empty()) return stack;
  }
  switch (r) {
    case TensorRole::kGateExps: return ex + c.hf_moe.gate + ".weight";
    case TensorRole::kUpExps: return ex + c.hf_moe.up + ".weight";
    case TensorRole::kDownExps: return ex + c.hf_moe.down + ".weight";
    case TensorRole::kGateExpsBias: return ex + c.hf_moe.gate + ".bias";
    case TensorRole::kUpExpsBias: return ex + c.hf_moe.up + ".bias";
    case TensorRole::kDownExpsBias: return ex + c.hf_moe.down + ".bias";
    case TensorRole::kQkv: return b + "self_attn.qkv_proj.weight";  // Phi-3
    case TensorRole::kGateUp: return b + "mlp.gate_up_proj.weight";
    default: return "(no decoder tensor for this role)";
  }
  return "";
}

const TensorInfo& require(const TensorSource& src, const std::string& name) {
  const TensorInfo* t = src.find(name);
  OG_CHECK(t != nullptr, src.source_name(), ": missing tensor ", name);
  return *t;
}

void check_dtype(const TensorSource& src, const TensorInfo& t) {
  const DTypeInfo* info = dtype_info(t.type_id);
  OG_CHECK(t.known_type && info && kernels::weight_dtype_supported(static_cast<DType>(t.type_id)), src.source_name(),
           ": tensor ", t.name, " has type ", t.type_name, ", which offgraph cannot compute with");
}

// A matrix [rows, cols] (exact shape), any supported dtype, as a view into the source.
TensorView matrix(const TensorSource& src, const std::string& name, int64_t rows, int64_t cols) {
  const TensorInfo& t = require(src, name);
  check_dtype(src, t);
  OG_CHECK(t.shape == std::vector<int64_t>({rows, cols}), src.source_name(), ": tensor ", name, " has shape ",
           shape_str(t.shape), ", expected ", shape_str({rows, cols}));
  TensorView v = tensor_view(src, t);
  v.name = name;
  return v;
}

}  // namespace

std::string hf_fused_experts_name(const ModelConfig& c, int layer, bool down) {
  return cat(c.hf_prefix, "layers.", layer, ".", c.hf_moe.block, ".experts.", down ? "down_proj" : "gate_up_proj");
}

std::string hf_expert_stack_name(const ModelConfig& c, int layer, TensorRole role) {
  const char* part = nullptr;
  switch (role) {
    case TensorRole::kGateExps: part = "gate_stack"; break;
    case TensorRole::kUpExps: part = "up_stack"; break;
    case TensorRole::kDownExps: part = "down_stack"; break;
    case TensorRole::kGateExpsBias: part = "gate_stack_bias"; break;
    case TensorRole::kUpExpsBias: part = "up_stack_bias"; break;
    case TensorRole::kDownExpsBias: part = "down_stack_bias"; break;
    default: return "";
  }
  return cat(c.hf_prefix, "layers.", layer, ".", c.hf_moe.block, ".experts.", part);
}

std::string tensor_name(const ModelConfig& c, TensorRole role, int layer, int expert) {
  if (c.layout == WeightLayout::kGguf && role == TensorRole::kFfnNorm && layer >= 0 && layer < c.n_layers() &&
      c.layers[layer].gguf_ffn_norm_is_post_attention)
    return gguf_name(TensorRole::kPostAttnNorm, layer);  // gpt-oss names its pre-FFN norm so
  return c.layout == WeightLayout::kGguf ? gguf_name(role, layer) : hf_name(c, role, layer, expert);
}

std::vector<float> tensor_to_f32(const TensorSource& src, const std::string& name, int64_t n) {
  const TensorInfo& t = require(src, name);
  check_dtype(src, t);
  OG_CHECK(t.shape == std::vector<int64_t>({n}), src.source_name(), ": tensor ", name, " has shape ",
           shape_str(t.shape), ", expected ", shape_str({n}));
  const TensorView v = tensor_view(src, t);
  std::vector<float> out(static_cast<size_t>(n));
  kernels::dequantize_row(v.dtype, v.data, out.data(), n);
  return out;
}

namespace {

// A 2-D f32-convertible tensor [rows, cols] (the experts' bias tables) as rows * cols values.
std::vector<float> bias_table(const TensorSource& src, const std::string& name, int64_t rows, int64_t cols) {
  const TensorInfo& t = require(src, name);
  check_dtype(src, t);
  OG_CHECK(t.shape == std::vector<int64_t>({rows, cols}), src.source_name(), ": tensor ", name, " has shape ",
           shape_str(t.shape), ", expected ", shape_str({rows, cols}), " (experts, width)");
  const TensorView v = tensor_view(src, t);
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    kernels::dequantize_row(v.dtype, static_cast<const uint8_t*>(v.data) + r * dtype_row_bytes(v.dtype, cols),
                            out.data() + r * cols, cols);
  return out;
}

std::vector<float> norm_weight(const ModelConfig& c, const TensorSource& src, TensorRole r, int l, int64_t n) {
  std::vector<float> w = tensor_to_f32(src, tensor_name(c, r, l), n);
  if (c.norm_weight_offset != 0)
    for (float& x : w) x += c.norm_weight_offset;
  return w;
}

TensorView row_slice(const TensorView& m, int64_t r0, int64_t rows, const std::string& what);  // below

// The n_experts matrices [rows, cols] of an expert role: GGUF slices its one
// 3-D tensor [n_experts, rows, cols] (views, nothing copied); HF binds each
// expert's own tensor, or slices the fused experts tensors (hf_fused_experts_name).
std::vector<TensorView> expert_matrices(const ModelConfig& c, const TensorSource& src, TensorRole r, int l,
                                        int64_t rows, int64_t cols) {
  const int n = c.layers[l].n_experts;
  std::vector<TensorView> out;
  const std::string fused = c.layout == WeightLayout::kHf && !c.hf_moe.gpt_oss_stacks
                                ? hf_fused_experts_name(c, l, r == TensorRole::kDownExps) : "";
  if (!fused.empty() && src.find(fused) != nullptr) {
    // [n, rows, cols] (down) or [n, 2 rows, cols] (gate rows, then up rows, per expert): row views.
    const bool half = r != TensorRole::kDownExps;
    const TensorInfo& t = require(src, fused);
    check_dtype(src, t);
    const std::vector<int64_t> want = {n, half ? 2 * rows : rows, cols};
    OG_CHECK(t.shape == want, src.source_name(), ": tensor ", fused, " has shape ", shape_str(t.shape), ", expected ",
             shape_str(want), " (experts, ", half ? "gate and up rows" : "rows", ", columns)");
    TensorView all = tensor_view(src, t);
    all.shape = {t.shape[0] * t.shape[1], cols};
    for (int e = 0; e < n; ++e) {
      const int64_t first = e * want[1] + (r == TensorRole::kUpExps ? rows : 0);
      out.push_back(row_slice(all, first, rows, cat(fused, "[", e, r == TensorRole::kUpExps ? "].up" : "]")));
    }
    return out;
  }
  if (c.layout == WeightLayout::kHf && !c.hf_moe.gpt_oss_stacks) {
    for (int e = 0; e < n; ++e) out.push_back(matrix(src, tensor_name(c, r, l, e), rows, cols));
    return out;
  }
  const std::string name = tensor_name(c, r, l);
  const TensorInfo& t = require(src, name);
  check_dtype(src, t);
  OG_CHECK(t.shape == std::vector<int64_t>({n, rows, cols}), src.source_name(), ": tensor ", name, " has shape ",
           shape_str(t.shape), ", expected ", shape_str({n, rows, cols}), " (experts, rows, columns)");
  const TensorView all = tensor_view(src, t);
  const int64_t expert_bytes = rows * dtype_row_bytes(all.dtype, cols);
  for (int e = 0; e < n; ++e) {
    TensorView v = all;
    v.data = static_cast<const uint8_t*>(all.data) + e * expert_bytes;
    v.shape = {rows, cols};
    v.name = cat(name, "[", e, "]");
    out.push_back(std::move(v));
  }
  return out;
}

// Rows [r0, r0 + rows) of a matrix view, as a view of their own (rows are contiguous).
TensorView row_slice(const TensorView& m, int64_t r0, int64_t rows, const std::string& what) {
  TensorView v = m;
  v.data = static_cast<const uint8_t*>(m.data) + r0 * dtype_row_bytes(m.dtype, m.shape[1]);
  v.shape = {rows, m.shape[1]};
  v.name = what;
  return v;
}

// A fused attn_qkv [q_dim + k_dim + v_dim, d] (and its bias) as the q, k and v
// views, in that row order (llama.cpp's split of the fused tensor).
void bind_fused_qkv(const ModelConfig& c, const TensorSource& src, int l, LayerWeights& w) {
  const LayerConfig& L = c.layers[l];
  OG_CHECK(L.kv_donor < 0, src.source_name(), ": layer ", l, " has a fused q/k/v tensor and a KV donor");
  const int64_t q_dim = int64_t{L.n_heads} * L.head_dim_k, k_dim = int64_t{L.n_kv_heads} * L.head_dim_k;
  const int64_t v_dim = int64_t{L.n_kv_heads} * L.head_dim_v;
  const std::string qkv = tensor_name(c, TensorRole::kQkv, l);
  const TensorView all = matrix(src, qkv, q_dim + k_dim + v_dim, c.d_model);
  w.wq = row_slice(all, 0, q_dim, qkv + "[q]");
  w.wk = row_slice(all, q_dim, k_dim, qkv + "[k]");
  w.wv = row_slice(all, q_dim + k_dim, v_dim, qkv + "[v]");
  if (!L.has_qkv_bias) return;
  const std::vector<float> b = tensor_to_f32(src, tensor_name(c, TensorRole::kQkvBias, l), q_dim + k_dim + v_dim);
  w.bq.assign(b.begin(), b.begin() + q_dim);
  w.bk.assign(b.begin() + q_dim, b.begin() + q_dim + k_dim);
  w.bv.assign(b.begin() + q_dim + k_dim, b.end());
}

LayerWeights bind_layer(const ModelConfig& c, const TensorSource& src, int l) {
  const LayerConfig& L = c.layers[l];
  const int64_t d = c.d_model;
  const int64_t q_dim = int64_t{L.n_heads} * L.head_dim_k;
  const int64_t k_dim = int64_t{L.n_kv_heads} * L.head_dim_k;
  const int64_t v_dim = int64_t{L.n_kv_heads} * L.head_dim_v;
  const int64_t o_dim = int64_t{L.n_heads} * L.head_dim_v;
  auto name = [&](TensorRole r) { return tensor_name(c, r, l); };
  LayerWeights w;
  if (!L.post_norm) w.attn_norm = norm_weight(c, src, TensorRole::kAttnNorm, l, d);
  if (L.qkv_fused) {
    bind_fused_qkv(c, src, l, w);
  } else {
    w.wq = matrix(src, name(TensorRole::kQ), q_dim, d);
    if (L.kv_donor < 0) {
      w.wk = matrix(src, name(TensorRole::kK), k_dim, d);
      w.wv = matrix(src, name(TensorRole::kV), v_dim, d);
    }
  }
  w.wo = matrix(src, name(TensorRole::kO), d, o_dim);
  if (L.has_qkv_bias && !L.qkv_fused) {
    w.bq = tensor_to_f32(src, name(TensorRole::kQBias), q_dim);
    if (L.kv_donor < 0) {
      w.bk = tensor_to_f32(src, name(TensorRole::kKBias), k_dim);
      w.bv = tensor_to_f32(src, name(TensorRole::kVBias), v_dim);
    }
  }
  if (L.has_o_bias) w.bo = tensor_to_f32(src, name(TensorRole::kOBias), d);
  if (L.has_sinks) w.sinks = tensor_to_f32(src, name(TensorRole::kSinks), L.n_heads);
  if (L.has_q_norm) w.q_norm = norm_weight(c, src, TensorRole::kQNorm, l, L.head_dim_k);
  if (L.has_k_norm && L.kv_donor < 0) w.k_norm = norm_weight(c, src, TensorRole::kKNorm, l, L.head_dim_k);
  if (L.has_post_attn_norm) w.post_attn_norm = norm_weight(c, src, TensorRole::kPostAttnNorm, l, d);
  if (!L.post_norm) w.ffn_norm = norm_weight(c, src, TensorRole::kFfnNorm, l, d);
  if (L.post_norm) {
    w.attn_out_norm = norm_weight(c, src, TensorRole::kAttnOutNorm, l, d);
    w.layer_out_norm = norm_weight(c, src, TensorRole::kLayerOutNorm, l, d);
    if (c.layer_norm) {
      w.attn_out_norm_b = tensor_to_f32(src, name(TensorRole::kAttnOutNormBias), d);
      w.layer_out_norm_b = tensor_to_f32(src, name(TensorRole::kLayerOutNormBias), d);
    }
  }
  if (L.has_ffn_bias) {
    w.b_up = tensor_to_f32(src, name(TensorRole::kUpBias), L.d_ff);
    w.b_down = tensor_to_f32(src, name(TensorRole::kDownBias), d);
  }
  if (L.has_post_ffn_norm) w.post_ffn_norm = norm_weight(c, src, TensorRole::kPostFfnNorm, l, d);
  if (L.n_experts > 0) {
    w.w_router = matrix(src, name(TensorRole::kRouter), L.n_experts, d);
    w.w_gate_exps = expert_matrices(c, src, TensorRole::kGateExps, l, L.d_ff_expert, d);
    w.w_up_exps = expert_matrices(c, src, TensorRole::kUpExps, l, L.d_ff_expert, d);
    w.w_down_exps = expert_matrices(c, src, TensorRole::kDownExps, l, d, L.d_ff_expert);
    if (L.has_router_bias) w.b_router = tensor_to_f32(src, name(TensorRole::kRouterBias), L.n_experts);
    if (L.has_expert_bias) {
      w.b_gate_exps = bias_table(src, name(TensorRole::kGateExpsBias), L.n_experts, L.d_ff_expert);
      w.b_up_exps = bias_table(src, name(TensorRole::kUpExpsBias), L.n_experts, L.d_ff_expert);
      w.b_down_exps = bias_table(src, name(TensorRole::kDownExpsBias), L.n_experts, d);
    }
  } else {
    if (L.gate_up_fused) {  // [2 d_ff, d]: gate rows, then up rows (Phi-3)
      const std::string gu = name(TensorRole::kGateUp);
      const TensorView all = matrix(src, gu, 2 * L.d_ff, d);
      w.w_gate = row_slice(all, 0, L.d_ff, gu + "[gate]");
      w.w_up = row_slice(all, L.d_ff, L.d_ff, gu + "[up]");
    } else {
      if (L.ffn_gated) w.w_gate = matrix(src, name(TensorRole::kGate), L.d_ff, d);
      w.w_up = matrix(src, name(TensorRole::kUp), L.d_ff, d);
    }
    w.w_down = matrix(src, name(TensorRole::kDown), d, L.d_ff);
  }
  if (L.has_v_norm) w.v_norm.assign(static_cast<size_t>(L.head_dim_v), 1.0f);
  if (c.d_per_layer > 0) {
    w.w_pl_gate = matrix(src, name(TensorRole::kPerLayerGate), c.d_per_layer, d);
    w.w_pl_proj = matrix(src, name(TensorRole::kPerLayerProj), d, c.d_per_layer);
    w.pl_post_norm = norm_weight(c, src, TensorRole::kPerLayerPostNorm, l, d);
  }
  if (L.has_output_scale) {
    w.output_scale = tensor_to_f32(src, name(TensorRole::kLayerOutputScale), 1)[0];
    OG_CHECK(std::isfinite(w.output_scale), src.source_name(), ": tensor ", name(TensorRole::kLayerOutputScale),
             " holds ", w.output_scale, ", not a finite number");
  }
  return w;
}

// The per-layer input tensors of a config with d_per_layer > 0.
void bind_per_layer_inputs(const ModelConfig& c, const TensorSource& src, Weights& w) {
  const int64_t width = c.n_layers() * c.d_per_layer;
  w.per_layer_token_embd = matrix(src, tensor_name(c, TensorRole::kPerLayerTokenEmbd), c.n_vocab, width);
  w.per_layer_model_proj = matrix(src, tensor_name(c, TensorRole::kPerLayerModelProj), width, c.d_model);
  w.per_layer_proj_norm = norm_weight(c, src, TensorRole::kPerLayerProjNorm, -1, c.d_per_layer);
}

// The final norm, the output matrix (the embedding when tied) and its optional bias.
void bind_output(ModelConfig& c, const TensorSource& src, Weights& w) {
  w.output_norm = norm_weight(c, src, TensorRole::kOutputNorm, -1, c.d_model);

  const std::string out_name = tensor_name(c, TensorRole::kOutput);
  if (!c.tied_output) {
    if (src.find(out_name) == nullptr) {
      OG_CHECK(c.layout == WeightLayout::kGguf, src.source_name(), ": missing tensor ", out_name,
               " (tie_word_embeddings is false)");
      c.tied_output = true;  // llama.cpp's fallback: no output.weight means tied
    }
  }
  w.output = c.tied_output ? w.token_embd : matrix(src, out_name, c.n_vocab, c.d_model);
  const std::string out_bias = tensor_name(c, TensorRole::kOutputBias);
  c.has_output_bias = src.find(out_bias) != nullptr;
  if (c.has_output_bias) w.output_bias = tensor_to_f32(src, out_bias, c.n_vocab);

}

}  // namespace

Weights bind_weights(ModelConfig& c, const TensorSource& src) {
  Weights w;
  const std::string embd_name = tensor_name(c, TensorRole::kTokenEmbd);
  const TensorInfo& embd = require(src, embd_name);
  OG_CHECK(embd.shape.size() == 2 && embd.shape[1] == c.d_model, src.source_name(), ": tensor ", embd_name,
           " has shape ", shape_str(embd.shape), ", expected [n_vocab, ", c.d_model, "]");
  if (c.n_vocab == 0) {
    OG_CHECK(embd.shape[0] > 0 && embd.shape[0] <= INT32_MAX, src.source_name(), ": tensor ", embd_name,
             " has an invalid row count ", embd.shape[0]);
    c.n_vocab = static_cast<int32_t>(embd.shape[0]);
  }
  OG_CHECK(embd.shape[0] == c.n_vocab, src.source_name(), ": vocabulary size ", c.n_vocab,
           " contradicts the embedding rows of ", embd_name, " ", shape_str(embd.shape));
  w.token_embd = matrix(src, embd_name, c.n_vocab, c.d_model);
  if (c.n_token_types > 0) {
    const TensorView types = matrix(src, tensor_name(c, TensorRole::kTokenTypes), c.n_token_types, c.d_model);
    w.token_type0.resize(static_cast<size_t>(c.d_model));
    kernels::get_row(types, 0, w.token_type0.data());
  }
  if (c.has_pos_embd) w.pos_embd = matrix(src, tensor_name(c, TensorRole::kPosEmbd), c.n_ctx, c.d_model);
  if (c.has_embd_norm) {
    w.embd_norm = norm_weight(c, src, TensorRole::kEmbdNorm, -1, c.d_model);
    if (c.layer_norm) w.embd_norm_b = tensor_to_f32(src, tensor_name(c, TensorRole::kEmbdNormBias), c.d_model);
  }
  for (int l = 0; l < c.n_layers(); ++l) w.layers.push_back(bind_layer(c, src, l));
  if (c.has_output_norm) bind_output(c, src, w);  // an encoder has no final norm and no output matrix
  if (c.d_per_layer > 0) bind_per_layer_inputs(c, src, w);
  for (size_t i = 0; i < c.dense.size(); ++i)
    w.dense.push_back(matrix(src, tensor_name(c, TensorRole::kDense, static_cast<int>(i)), c.dense[i].d_out,
                             c.dense[i].d_in));
  return w;
}

}  // namespace og
