// Family "gpt-oss" (gpt-oss-20b, gpt-oss-120b) as llama.cpp's converter
// writes it (GGUF arch "gpt-oss"): a mixture of experts on every layer with
// the router's top-k taken on the logits and a softmax over the chosen ones,
// biases on q/k/v/o, the router and the experts, gpt-oss's clamped SwiGLU,
// attention sinks (blk.N.attn_sinks), sliding-window (even layers) and full
// (odd layers) attention alternating, YaRN RoPE (rotate-half), and the pre-FFN
// norm stored as blk.N.post_attention_norm. HF GptOssForCausalLM: the same
// model from config.json (layer_types, sliding_window, yarn rope_scaling,
// swiglu_limit 7), its router mlp.router and its experts fused
// (GptOssExperts' gate_up_proj / down_proj, bf16 or MXFP4 blocks), which the
// loader reads through model/hf_expert_stacks.h.
#include <cmath>

#include "model/families/common.h"

namespace og {
namespace {

constexpr const char* kArch = "gpt-oss";

// Layer l slides iff l is even (llama.cpp's swa pattern 2: every second layer is full).
bool sliding(int l) { return l % 2 == 0; }

// The gpt-oss layer flags every layer shares, whichever file it came from.
void set_gpt_oss_layer(LayerConfig& L) {
  L.has_qkv_bias = L.has_o_bias = true;
  L.has_sinks = true;
  L.gguf_ffn_norm_is_post_attention = true;
  L.expert_weights_norm = false;
  L.expert_softmax_after_topk = true;
  L.has_router_bias = L.has_expert_bias = true;
  L.expert_swiglu_oai = true;
}

void gpt_oss_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  const std::string src = f.source_name(), p = arch + ".";
  read_gguf_common(f, arch, c, false, true);
  read_gguf_experts(f, arch, c, true);
  OG_CHECK(c.layers[0].n_experts > 0, src, ": missing required key ", p, "expert_count");
  const std::optional<int64_t> window = f.get_int(p + "attention.sliding_window");
  OG_CHECK(window && *window > 0, src, ": missing required key ", p, "attention.sliding_window (> 0)");
  if (auto v = f.get_int(p + "attention.sliding_window_pattern"); v && *v != 2)
    fail(src, ": ", p, "attention.sliding_window_pattern = ", *v, " is not supported (gpt-oss alternates: 2)");
  if (auto v = f.get_bool(p + "expert_weights_norm"); v && *v)
    fail(src, ": ", p, "expert_weights_norm = true is not supported (gpt-oss weighs the chosen experts by a "
         "softmax over their logits)");
  for (int l = 0; l < c.n_layers(); ++l) {
    LayerConfig& L = c.layers[l];
    L.window = sliding(l) ? static_cast<int>(*window) : 0;
    // llama.cpp requires every one of these tensors; binding names any that is missing.
    set_gpt_oss_layer(L);
  }
}

void gpt_oss_from_hf(const HfInput& in, ModelConfig& c) {
  const nlohmann::json& cfg = in.config;
  const std::string& file = in.file;
  OG_CHECK(json_bool(cfg, "attention_bias", file).value_or(true), file,
           ": attention_bias = false is not supported (gpt-oss has q/k/v/o biases)");
  read_hf_common(in, c, 1e-5, false, true);
  read_hf_experts(in, c, HfExpertFields{"num_local_experts", "intermediate_size", nullptr, false});
  OG_CHECK(c.layers[0].n_experts > 0, file, ": missing required field num_local_experts");
  // GptOssExperts hard-codes alpha 1.702 and clamps at swiglu_limit (GptOssConfig: 7).
  if (auto limit = json_number(cfg, "swiglu_limit", file); limit && *limit != 7.0)
    fail(file, ": swiglu_limit = ", *limit, " is not supported (only 7, the clamp gpt-oss was trained with)");
  const RopeScaling& rope = c.layers[0].rope_scaling;
  if (rope.type == RopeScaling::Type::kYarn) {
    // transformers derives the factor as max_position_embeddings / original_max_position_embeddings.
    const double derived = static_cast<double>(c.n_ctx) / rope.original_max_positions;
    OG_CHECK(std::fabs(derived - rope.factor) <= 1e-6 * rope.factor, file, ": rope_scaling.factor ", rope.factor,
             " disagrees with max_position_embeddings / original_max_position_embeddings = ", derived);
  }
  const int64_t window = json_int(cfg, "sliding_window", file).value_or(128);  // GptOssConfig's default
  OG_CHECK(window > 0 && window <= INT32_MAX, file, ": sliding_window = ", window, " is out of range");
  const std::optional<std::vector<bool>> types = hf_layer_types(cfg, file, c.n_layers());
  for (int l = 0; l < c.n_layers(); ++l) {
    LayerConfig& L = c.layers[l];
    const bool slides = types ? (*types)[l] : sliding(l);  // GptOssConfig's default alternates so
    L.window = slides ? static_cast<int>(window) : 0;
    set_gpt_oss_layer(L);
  }
  c.hf_moe.block = "mlp";
  c.hf_moe.router = "router";
  c.hf_moe.gpt_oss_stacks = true;
}

void gpt_oss_to_gguf(const ModelConfig& c, GgufWriter& w) {
  const std::string p = std::string(kArch) + ".";
  int window = 0;
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    auto need = [&](bool ok, const char* what) {
      OG_CHECK(ok, "cannot write ", c.architecture, " as GGUF ", kArch, ": layer ", l, " ", what);
    };
    need(L.n_experts > 0 && L.expert_softmax_after_topk && !L.expert_weights_norm && L.expert_swiglu_oai &&
             L.has_router_bias && L.has_expert_bias,
         "is not a gpt-oss mixture of experts (softmax after top-k, clamped SwiGLU, biases)");
    need(L.has_qkv_bias && L.has_o_bias && L.has_sinks && L.gguf_ffn_norm_is_post_attention &&
             !L.has_q_norm && !L.has_post_attn_norm && !L.has_post_ffn_norm && !L.rope_interleaved,
         "is not a gpt-oss attention block (q/k/v/o biases, sinks, one pre-FFN norm, rotate-half RoPE)");
    if (sliding(l) && window == 0) window = L.window;
    need(sliding(l) ? L.window > 0 && L.window == window : L.window == 0,
         "breaks gpt-oss's alternation of sliding (even layers, one window) and full (odd layers) attention");
  }
  GgufCommonOptions o;
  o.windows = false;
  write_gguf_common(c, kArch, w, o);
  // The chosen experts are weighed by a softmax, never renormalised: the arch implies it, no key.
  ModelConfig keyless = c;
  for (LayerConfig& L : keyless.layers) L.expert_weights_norm = true;
  write_gguf_experts(keyless, kArch, w, true);
  w.set(p + "attention.sliding_window", GgufValue::make_u32(static_cast<uint32_t>(window)));
}

}  // namespace

const FamilySpec& gpt_oss_family() {
  static const FamilySpec spec{"gpt-oss",       {"gpt-oss"},     {"GptOssForCausalLM"}, gpt_oss_from_gguf,
                               gpt_oss_from_hf, gpt_oss_to_gguf, false};
  return spec;
}

}  // namespace og
