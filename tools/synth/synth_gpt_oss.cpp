// Synthetic gpt-oss models: the spec's ModelConfig as the gpt-oss reader
// gives it back, and its tensor plan under the GGUF names themselves (the
// values are generated per GGUF name). GGUF: experts in the spec's weight
// dtype (MXFP4 for the real model), the other matrices in
// gpt_oss_dense_dtype. HF (GptOssForCausalLM): the same values under
// transformers' names, the experts fused as GptOssExperts holds them
// (gate_up_proj [E, d, 2 ff] with gate at even and up at odd columns,
// down_proj [E, ff, d]; BF16 with --dtype bf16, else F32), or with --dtype
// mxfp4 in the released MXFP4 form (_blocks / _scales: the GGUF's MXFP4
// blocks re-laid, so both files hold the same values); the rest F32.
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "model/families/common.h"
#include "model/tensor_codec.h"
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
  // o200k_harmony's 201088 ids (control tokens at their real ids), so the
  // embedding and output are the real 201088 x 2880. The tiny model keeps the
  // 512-token stories vocabulary: at 201088 rows every test fixture was ~100 MB.
  s.tokenizer = "harmony";
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

namespace {

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The HF form of expert stacks parts[p] [E, rows, cols] (one part: down; two:
// gate and up, whose rows interleave) in MXFP4: the GGUF blocks of each row,
// re-laid as <name>_blocks [E, R, cols / 32, 16] (want_scales false: byte i
// holds element 2i low, 2i + 1 high) or <name>_scales [E, R, cols / 32].
std::vector<uint8_t> hf_mxfp4(const SynthSpec& s, const std::vector<PlannedTensor>& parts, bool want_scales) {
  const int64_t E = parts[0].shape[0], rows = parts[0].shape[1], cols = parts[0].shape[2], nb = cols / 32;
  const int64_t P = static_cast<int64_t>(parts.size());
  std::vector<std::vector<uint8_t>> enc;
  for (const PlannedTensor& t : parts) {
    const std::vector<float> v = hf_values(s, t);
    enc.push_back(encode_rows(DType::MXFP4, v.data(), E * rows, cols));
  }
  std::vector<uint8_t> out(static_cast<size_t>(E * rows * P * nb * (want_scales ? 1 : 16)));
  size_t at = 0;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t* blk = enc[p].data() + ((e * rows + r) * nb + b) * 17;  // BlockMXFP4: e, qs[16]
          if (want_scales) {
            out[at++] = blk[0];
            continue;
          }
          auto code = [&](int k) { return (blk[1 + k % 16] >> (4 * (k / 16))) & 0x0F; };
          for (int i = 0; i < 16; ++i) out[at++] = static_cast<uint8_t>(code(2 * i) | (code(2 * i + 1) << 4));
        }
  return out;
}

// gate / up [E, ff, d] -> gate_up_proj [E, d, 2 ff] (gate at even columns); down [E, d, ff] -> [E, ff, d].
std::vector<float> hf_float_experts(const SynthSpec& s, const std::vector<PlannedTensor>& parts) {
  const int64_t E = parts[0].shape[0], rows = parts[0].shape[1], cols = parts[0].shape[2];
  const int64_t P = static_cast<int64_t>(parts.size());
  std::vector<std::vector<float>> v;
  for (const PlannedTensor& t : parts) v.push_back(hf_values(s, t));
  std::vector<float> out(static_cast<size_t>(E * rows * cols * P));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t p = 0; p < P; ++p) out[((e * cols + c) * rows + r) * P + p] = v[p][(e * rows + r) * cols + c];
  return out;
}

}  // namespace

nlohmann::ordered_json gpt_oss_hf_config(const SynthSpec& s, const TokenizerInfo& tok) {
  OG_CHECK(static_cast<double>(s.n_ctx) == s.yarn_factor * static_cast<double>(s.yarn_original),
           "synthetic model: gpt-oss's HF form needs n_ctx (", s.n_ctx, ") = yarn factor (", s.yarn_factor,
           ") x original context (", s.yarn_original, "), as transformers derives the factor");
  nlohmann::ordered_json c;
  c["architectures"] = {"GptOssForCausalLM"};
  c["model_type"] = "gpt_oss";
  c["hidden_size"] = s.d_model;
  c["intermediate_size"] = s.d_ff_expert;
  c["num_hidden_layers"] = s.n_layers;
  c["num_attention_heads"] = s.n_heads;
  c["num_key_value_heads"] = s.n_kv_heads;
  c["head_dim"] = s.head_dim;
  c["max_position_embeddings"] = s.n_ctx;
  c["initial_context_length"] = s.yarn_original;
  c["rms_norm_eps"] = s.rms_eps;
  c["rope_theta"] = s.rope_base;
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", s.yarn_factor}, {"beta_fast", 32.0}, {"beta_slow", 1.0},
                       {"original_max_position_embeddings", s.yarn_original}};
  c["vocab_size"] = n_vocab(s);
  c["tie_word_embeddings"] = s.tied;
  c["attention_bias"] = true;
  c["hidden_act"] = "silu";
  c["num_local_experts"] = s.n_experts;
  c["num_experts_per_tok"] = s.n_experts_used;
  c["experts_per_token"] = s.n_experts_used;
  c["swiglu_limit"] = 7.0;
  c["sliding_window"] = s.window;
  nlohmann::ordered_json types = nlohmann::ordered_json::array();
  for (int64_t l = 0; l < s.n_layers; ++l) types.push_back(l % 2 == 0 ? "sliding_attention" : "full_attention");
  c["layer_types"] = types;
  c["bos_token_id"] = tok.bos;
  c["eos_token_id"] = tok.eos;
  c["torch_dtype"] = "float32";
  if (s.weight_dtype == DType::MXFP4)
    c["quantization_config"] = {{"quant_method", "mxfp4"},
                                {"modules_to_not_convert",
                                 {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                  "lm_head"}}};
  return c;
}

std::vector<SafetensorsTensor> gpt_oss_hf_tensors(const SynthSpec& s) {
  OG_CHECK(s.weight_dtype == DType::F32 || s.weight_dtype == DType::BF16 || s.weight_dtype == DType::MXFP4,
           "synthetic model: gpt-oss's HF form holds F32, BF16 or MXFP4 experts, not ",
           dtype_name(static_cast<uint32_t>(s.weight_dtype)));
  const ModelConfig g = gpt_oss_model_config(s);  // GGUF names: the plan's
  ModelConfig h = g;
  h.layout = WeightLayout::kHf;
  h.hf_prefix = "model.";
  h.hf_moe.router = "router";
  std::map<std::string, PlannedTensor> by_name;
  for (PlannedTensor& t : plan_gpt_oss(s)) by_name.emplace(t.hf_name, std::move(t));
  auto planned = [&](TensorRole r, int l) { return by_name.at(tensor_name(g, r, l)); };
  std::vector<SafetensorsTensor> out;
  auto add = [&](std::string name, std::string dtype, std::vector<int64_t> shape,
                 std::function<std::vector<uint8_t>()> make) {
    out.push_back(SafetensorsTensor{std::move(name), std::move(dtype), std::move(shape), {}, std::move(make)});
  };
  auto as_is = [&](TensorRole r, int l) {
    const PlannedTensor t = planned(r, l);
    add(tensor_name(h, r, l), "F32", t.shape, [&s, t] { return f32_bytes(hf_values(s, t)); });
  };
  as_is(TensorRole::kTokenEmbd, -1);
  const int64_t E = s.n_experts, ff = s.d_ff_expert, d = s.d_model;
  for (int l = 0; l < s.n_layers; ++l) {
    for (TensorRole r : {TensorRole::kAttnNorm, TensorRole::kQ, TensorRole::kQBias, TensorRole::kK, TensorRole::kKBias,
                         TensorRole::kV, TensorRole::kVBias, TensorRole::kO, TensorRole::kOBias, TensorRole::kSinks,
                         TensorRole::kFfnNorm, TensorRole::kRouter, TensorRole::kRouterBias})
      as_is(r, l);
    const std::string base = cat("model.layers.", l, ".mlp.experts.");
    const std::vector<PlannedTensor> gate_up = {planned(TensorRole::kGateExps, l), planned(TensorRole::kUpExps, l)};
    const std::vector<PlannedTensor> down = {planned(TensorRole::kDownExps, l)};
    const std::vector<PlannedTensor> gate_up_bias = {planned(TensorRole::kGateExpsBias, l),
                                                     planned(TensorRole::kUpExpsBias, l)};
    add(base + "gate_up_proj_bias", "F32", {E, 2 * ff}, [&s, gate_up_bias] {
      // [E, ff] each, interleaved: the float form's transpose of a [E, ff, 1] stack.
      std::vector<PlannedTensor> parts = gate_up_bias;
      for (PlannedTensor& p : parts) p.shape = {p.shape[0], p.shape[1], 1};
      return f32_bytes(hf_float_experts(s, parts));
    });
    const PlannedTensor db = planned(TensorRole::kDownExpsBias, l);
    add(base + "down_proj_bias", "F32", {E, d}, [&s, db] { return f32_bytes(hf_values(s, db)); });
    if (s.weight_dtype == DType::MXFP4) {
      OG_CHECK(d % 32 == 0 && ff % 32 == 0, "synthetic model: MXFP4 experts need d_model (", d,
               ") and d_ff_expert (", ff, ") multiples of 32");
      add(base + "gate_up_proj_blocks", "U8", {E, 2 * ff, d / 32, 16}, [&s, gate_up] { return hf_mxfp4(s, gate_up, false); });
      add(base + "gate_up_proj_scales", "U8", {E, 2 * ff, d / 32}, [&s, gate_up] { return hf_mxfp4(s, gate_up, true); });
      add(base + "down_proj_blocks", "U8", {E, d, ff / 32, 16}, [&s, down] { return hf_mxfp4(s, down, false); });
      add(base + "down_proj_scales", "U8", {E, d, ff / 32}, [&s, down] { return hf_mxfp4(s, down, true); });
      continue;
    }
    const DType dt = s.weight_dtype;
    const std::string dt_name = dt == DType::BF16 ? "BF16" : "F32";
    add(base + "gate_up_proj", dt_name, {E, d, 2 * ff}, [&s, gate_up, dt, E, d, ff] {
      const std::vector<float> v = hf_float_experts(s, gate_up);
      return encode_rows(dt, v.data(), E * d, 2 * ff);
    });
    add(base + "down_proj", dt_name, {E, ff, d}, [&s, down, dt, E, d, ff] {
      const std::vector<float> v = hf_float_experts(s, down);
      return encode_rows(dt, v.data(), E * ff, d);
    });
  }
  as_is(TensorRole::kOutputNorm, -1);
  if (!s.tied) as_is(TensorRole::kOutput, -1);
  return out;
}

}  // namespace og::synth
