// Family "gemma3": 5 sliding-window layers to 1 global (pattern P), local RoPE
// base 10000 and global base 1e6 with linear scaling on global layers only,
// q/k norms, norms before and after attention and MLP, GELU-tanh gate,
// embeddings x sqrt(d_model), tied output. HF Gemma3ForCausalLM (text) and
// Gemma3ForConditionalGeneration (text_config; vision tensors are ignored).
// EmbeddingGemma is this family with bidirectional attention: HF
// Gemma3TextModel with use_bidirectional_attention, GGUF arch gemma-embedding.
#include <cmath>

#include "base/error.h"
#include "model/families/common.h"

namespace og {
namespace {

// Every gemma3 layer: the structural facts that have no key in either format.
void gemma_structure(ModelConfig& c) {
  for (LayerConfig& L : c.layers) {
    L.has_q_norm = L.has_k_norm = true;
    L.has_post_attn_norm = L.has_post_ffn_norm = true;
    L.activation = Activation::kGeluTanh;
  }
}

// Local (sliding) layers: base_local, no scaling, window; global: base with scaling, full.
void gemma_layers(ModelConfig& c, const std::vector<bool>& sliding, int window, double base, double base_local,
                  const RopeScaling& global_scaling) {
  for (int l = 0; l < c.n_layers(); ++l) {
    LayerConfig& L = c.layers[l];
    const bool local = sliding[l] && window > 0;
    L.window = local ? window : 0;
    set_rope(L, local ? base_local : base, local ? RopeScaling{} : global_scaling, {});
  }
}

// The query_pre_attn_scalar a GGUF file implies (no key): head_dim, except
// the 62-layer causal gemma3 (27B): d_model / n_heads.
double implied_attn_scalar(const ModelConfig& c, const LayerConfig& L) {
  return c.n_layers() == 62 && c.causal ? static_cast<double>(c.d_model) / L.n_heads : L.head_dim_k;
}

// The GGUF arch of a config: a bidirectional gemma3 is llama.cpp's gemma-embedding.
std::string gguf_arch(const ModelConfig& c) { return c.causal ? "gemma3" : "gemma-embedding"; }

void gemma3_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  read_gguf_common(f, arch, c);
  const std::string p = arch + ".";
  gemma_structure(c);
  const int64_t pattern = f.get_int(p + "attention.sliding_window_pattern").value_or(6);
  OG_CHECK(pattern > 0, f.source_name(), ": ", p, "attention.sliding_window_pattern = ", pattern, " must be positive");
  const int64_t window = f.get_int(p + "attention.sliding_window").value_or(0);
  const double base = f.get_float(p + "rope.freq_base").value_or(1e6);
  const double base_local = f.get_float(p + "rope.freq_base_swa").value_or(10000.0);
  OG_CHECK(std::isfinite(base_local) && base_local > 1, f.source_name(), ": ", p, "rope.freq_base_swa = ",
           base_local, " must be > 1");
  std::vector<bool> sliding(c.layers.size());
  for (int l = 0; l < c.n_layers(); ++l) sliding[l] = l % pattern < pattern - 1;
  gemma_layers(c, sliding, static_cast<int>(window), base, base_local, gguf_rope_scaling(f, arch));
  // gemma-embedding (EmbeddingGemma): bidirectional, always 1/sqrt(head_dim).
  if (arch == "gemma-embedding") c.causal = false;
  // llama.cpp has no key for query_pre_attn_scalar: 1/sqrt(head_dim), except
  // the 62-layer gemma3 (27B), which uses 1/sqrt(d_model / n_heads).
  for (LayerConfig& L : c.layers) {
    const double q = implied_attn_scalar(c, L);
    L.attn_scale = static_cast<float>(1.0 / std::sqrt(q));
  }
  c.embedding_scale = std::sqrt(static_cast<float>(c.d_model));  // in f32, as llama.cpp
  c.norm_weight_offset = 0;  // the converter folded 1 + w
}

// Gemma3TextConfig defaults for fields a (multimodal text_config) may omit.
nlohmann::json with_gemma_defaults(const nlohmann::json& cfg) {
  nlohmann::json j = cfg;
  const nlohmann::json defaults = {
      {"vocab_size", 262208}, {"hidden_size", 2304}, {"intermediate_size", 9216}, {"num_hidden_layers", 26},
      {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"head_dim", 256},
      {"hidden_activation", "gelu_pytorch_tanh"}, {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6},
      {"query_pre_attn_scalar", 256}, {"rope_local_base_freq", 10000.0}, {"sliding_window_pattern", 6}};
  for (auto it = defaults.begin(); it != defaults.end(); ++it)
    if (!j.contains(it.key())) j[it.key()] = it.value();
  if (!j.contains("sliding_window")) j["sliding_window"] = 4096;
  // hidden_act (older name) wins over the default hidden_activation only when given alone.
  if (cfg.contains("hidden_act") && !cfg.contains("hidden_activation")) j.erase("hidden_activation");
  return j;
}

void gemma3_from_hf(const HfInput& raw, ModelConfig& c) {
  const nlohmann::json cfg = with_gemma_defaults(raw.config);
  const HfInput in{cfg, raw.file, raw.weights};
  const std::string& file = in.file;
  // rope_parameters (transformers v5) is keyed by layer type for gemma3.
  const bool nested = json_has(cfg, "rope_parameters") && json_has(cfg.at("rope_parameters"), "full_attention");
  nlohmann::json flat = cfg;
  if (nested) flat.erase("rope_parameters");
  read_hf_common(HfInput{flat, file, in.weights}, c, 1e-6, true);
  gemma_structure(c);
  // A hidden_act other than the tanh GELU was refused by read_hf_common unless it was silu.
  for (const LayerConfig& L : c.layers)
    OG_CHECK(L.activation == Activation::kGeluTanh, file, ": gemma3 hidden_activation must be gelu_pytorch_tanh");

  double base = hf_rope_theta(flat, file, 1e6);
  double base_local = json_number(cfg, "rope_local_base_freq", file).value_or(10000.0);
  RopeScaling global_scaling;
  if (nested) {
    const nlohmann::json& rp = cfg.at("rope_parameters");
    global_scaling = parse_hf_rope(rp.at("full_attention"), file + ": rope_parameters.full_attention");
    if (auto t = json_number(rp.at("full_attention"), "rope_theta", file)) base = *t;
    if (json_has(rp, "sliding_attention")) {
      const RopeScaling local =
          parse_hf_rope(rp.at("sliding_attention"), file + ": rope_parameters.sliding_attention");
      OG_CHECK(local.type == RopeScaling::Type::kNone, file,
               ": rope_parameters.sliding_attention scaling is not supported (gemma3 local layers are unscaled)");
      if (auto t = json_number(rp.at("sliding_attention"), "rope_theta", file)) base_local = *t;
    }
  } else if (json_has(cfg, "rope_scaling")) {
    global_scaling = parse_hf_rope(cfg.at("rope_scaling"), file + ": rope_scaling");
  }
  OG_CHECK(std::isfinite(base_local) && base_local > 1, file, ": local RoPE base ", base_local, " must be > 1");

  const int64_t window = json_int(cfg, "sliding_window", file).value_or(0);
  OG_CHECK(window >= 0 && window <= INT32_MAX, file, ": sliding_window = ", window, " is out of range");
  std::vector<bool> sliding(c.layers.size());
  if (auto types = hf_layer_types(cfg, file, c.n_layers())) {
    sliding = *types;
  } else {
    const int64_t pattern = json_int(cfg, "sliding_window_pattern", file).value_or(6);
    OG_CHECK(pattern > 0, file, ": sliding_window_pattern = ", pattern, " must be positive");
    for (int l = 0; l < c.n_layers(); ++l) sliding[l] = (l + 1) % pattern != 0;
  }
  gemma_layers(c, sliding, static_cast<int>(window), base, base_local, global_scaling);

  const double qpas = json_number(cfg, "query_pre_attn_scalar", file).value_or(256);
  OG_CHECK(std::isfinite(qpas) && qpas > 0, file, ": query_pre_attn_scalar = ", qpas, " must be positive");
  for (LayerConfig& L : c.layers) L.attn_scale = static_cast<float>(1.0 / std::sqrt(qpas));

  // transformers casts sqrt(d) to the embedding dtype before scaling.
  float scale = std::sqrt(static_cast<float>(c.d_model));
  if (const TensorInfo* e = in.weights.find(c.hf_prefix + "embed_tokens.weight")) {
    if (e->type_id == static_cast<uint32_t>(DType::BF16)) scale = bf16_to_f32(f32_to_bf16(scale));
    if (e->type_id == static_cast<uint32_t>(DType::F16)) scale = f16_to_f32(f32_to_f16(scale));
  }
  c.embedding_scale = scale;
  c.norm_weight_offset = 1.0f;  // HF stores w of a (1 + w) norm
}

// The GGUF form: every P-th layer global (full attention, rope.freq_base with
// the scaling), the others local (the one window, rope.freq_base_swa,
// unscaled). Norms and the embedding scale follow llama.cpp's convention (the
// tensors carry 1 + w; sqrt(d_model) in f32), so they need no key.
void gemma3_to_gguf(const ModelConfig& c, GgufWriter& w) {
  const int n = c.n_layers();
  const std::string what = "cannot write gemma3 as GGUF: ";
  int pattern = 0;
  for (int p = 1; p <= n + 1 && pattern == 0; ++p) {
    bool fits = true;
    for (int l = 0; l < n; ++l) fits = fits && (c.layers[l].window > 0) == (l % p < p - 1);
    if (fits) pattern = p;
  }
  OG_CHECK(pattern > 0, what, "the sliding layers do not follow 'every P-th layer is global'");
  int global = -1, local = -1;
  for (int l = 0; l < n; ++l) {
    int& first = c.layers[l].window > 0 ? local : global;  // the first layer of each kind
    if (first < 0) first = l;
  }
  for (int l = 0; l < n; ++l) {
    const LayerConfig& L = c.layers[l];
    const LayerConfig& ref = c.layers[L.window > 0 ? local : global];
    OG_CHECK(L.window == ref.window && L.rope_base == ref.rope_base, what, "layer ", l, " has window ", L.window,
             " and RoPE base ", L.rope_base, " but layer ", L.window > 0 ? local : global, " of the same kind has ",
             ref.window, " and ", ref.rope_base);
    OG_CHECK(L.window == 0 || L.rope_scaling.type == RopeScaling::Type::kNone, what, "local layer ", l,
             " has RoPE scaling (the format scales global layers only)");
    const double q = implied_attn_scalar(c, L);
    const float want = static_cast<float>(1.0 / std::sqrt(q));
    OG_CHECK(std::fabs(L.attn_scale - want) <= 1e-6f * want, what, "layer ", l, " has attention scale ",
             L.attn_scale, " but the format implies ", want, " (query_pre_attn_scalar must be ", q, ")");
  }
  const std::string arch = gguf_arch(c);
  GgufCommonOptions o;
  o.windows = false;
  o.attn_scale = false;
  o.rope_layer = global >= 0 ? global : 0;
  o.causal_key = c.causal;  // gemma-embedding is non-causal by its arch
  write_gguf_common(c, arch, w, o);
  if (local >= 0) {
    w.set(arch + ".attention.sliding_window", GgufValue::make_u32(static_cast<uint32_t>(c.layers[local].window)));
    w.set(arch + ".rope.freq_base_swa", GgufValue::make_f32(static_cast<float>(c.layers[local].rope_base)));
  }
  w.set(arch + ".attention.sliding_window_pattern", GgufValue::make_u32(static_cast<uint32_t>(pattern)));
}

}  // namespace

const FamilySpec& gemma3_family() {
  static const FamilySpec spec{"gemma3",
                               {"gemma3", "gemma-embedding"},
                               {"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3TextModel"},
                               gemma3_from_gguf, gemma3_from_hf, gemma3_to_gguf, false, true};
  return spec;
}

}  // namespace og
