// Family "gemma4" (text model; ../shared/design/GEMMA4.md): sliding and full
// layers from a per-layer pattern, each type with its own head size, RoPE
// base and rotation (full layers rotate only part of each head: GGUF
// rope_freqs / HF "proportional"); q/k norms, the weightless v norm,
// attention scale 1, post-norms, GELU-tanh, per-layer FFN widths; per-layer
// inputs (a looked-up table plus a projection); KV sharing: the last
// `shared` layers read the cache of the last owner layer of their own type;
// an optional per-layer output scale; final logit soft-capping; tied output.
// GGUF arch gemma4; HF Gemma4ForConditionalGeneration / Gemma4ForCausalLM
// (text weights only; other towers are skipped with a note).
#include <cmath>

#include "base/error.h"
#include "model/families/common.h"
#include "model/weights.h"

namespace og {
namespace {

// What both layouts describe per layer type, with the key names each layout
// uses (so a contradiction with the tensors can name the key).
struct Gemma4Keys {
  std::vector<bool> sliding;  // [n_layers]
  int hd_swa = 0, hd_full = 0;
  int n_rot_swa = 0;          // rotated dims of sliding layers (full rotation unless partial)
  int kv_swa = 0, kv_full = 0;
  double base_swa = 10000, base_full = 10000;
  std::vector<float> inv_freq_full;  // [hd_full / 2] with 0 for pairs that do not rotate
  std::vector<float> ff_full;        // the full layers' per-pair factors (GGUF rope_freqs.weight); empty = none
  int window = 0;
  int64_t shared = 0;
  // Image spans open in the sliding layers (transformers: text_config
  // use_bidirectional_attention = "vision"); false: causal in every layer.
  bool vision_spans = false;
  std::string where;  // the file, for messages
  std::string key_hd_swa, key_hd_full, key_shared;
};

// A RoPE frequency factor this large means "does not rotate" (the converter
// writes 1e30 for the pairs of full layers beyond the partial rotary factor).
constexpr float kNoRotationFactor = 1e20f;

// The HF rule: sharing layer l reads the last owner layer of its own type.
void set_kv_donors(ModelConfig& c, const Gemma4Keys& k) {
  const int n = c.n_layers();
  OG_CHECK(k.shared >= 0 && k.shared < n, k.where, ": ", k.key_shared, " = ", k.shared,
           " must leave at least one of the ", n, " layers owning its KV");
  const int first_shared = n - static_cast<int>(k.shared);
  for (int l = first_shared; l < n; ++l) {
    int donor = -1;
    for (int j = first_shared - 1; j >= 0 && donor < 0; --j)
      if (k.sliding[j] == k.sliding[l]) donor = j;
    OG_CHECK(donor >= 0, k.where, ": ", k.key_shared, " = ", k.shared, " makes layer ", l, " (",
             k.sliding[l] ? "sliding" : "full", ") share KV, but no earlier layer of that type owns a cache");
    c.layers[l].kv_donor = donor;
  }
}

// Per-layer fields every gemma4 layer gets from the type tables.
void apply_layer_types(ModelConfig& c, const Gemma4Keys& k) {
  for (int l = 0; l < c.n_layers(); ++l) {
    LayerConfig& L = c.layers[l];
    const bool swa = k.sliding[l];
    L.window = swa ? k.window : 0;
    L.opens_image_spans = swa && k.vision_spans;
    L.n_kv_heads = swa ? k.kv_swa : k.kv_full;
    L.head_dim_k = L.head_dim_v = swa ? k.hd_swa : k.hd_full;
    L.rope_interleaved = false;
    L.rope_base = swa ? k.base_swa : k.base_full;
    L.rope_n_rot = swa ? k.n_rot_swa : k.hd_full;
    L.rope_inv_freq = swa ? rope_inv_freq(k.base_swa, k.n_rot_swa) : k.inv_freq_full;
    L.rope_scaling = RopeScaling{};
    L.rope_freq_factors = swa ? std::vector<float>{} : k.ff_full;
    L.attn_scale = 1.0f;  // q and k are RMS-normed; no 1/sqrt(head_dim)
    L.has_q_norm = L.has_k_norm = L.has_v_norm = true;
    L.has_post_attn_norm = L.has_post_ffn_norm = true;
    L.has_qkv_bias = L.has_o_bias = false;
    L.activation = Activation::kGeluTanh;
    L.kv_donor = -1;
  }
  set_kv_donors(c, k);
  c.embedding_scale = std::sqrt(static_cast<float>(c.d_model));  // f32, as llama.cpp (HF bf16 rounds it)
  c.norm_weight_offset = 0;  // Gemma 4 norms multiply by w as stored, in both layouts
}

// The tensors' shapes against the keys: a head size, sharing count or
// per-layer width that contradicts them is named with the tensor.
void check_tensors_against_keys(const ModelConfig& c, const TensorSource& src, const Gemma4Keys& k,
                                const std::string& key_pl) {
  const std::string s = src.source_name();
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const std::string& hd_key = k.sliding[l] ? k.key_hd_swa : k.key_hd_full;
    const std::string kind = k.sliding[l] ? "sliding" : "full";
    const std::string qn = tensor_name(c, TensorRole::kQ, l), qnn = tensor_name(c, TensorRole::kQNorm, l);
    if (const TensorInfo* q = src.find(qn); q && q->shape != std::vector<int64_t>{L.n_heads * int64_t{L.head_dim_k}, c.d_model})
      fail(s, ": tensor ", qn, " has shape ", shape_str(q->shape), ", but ", hd_key, " = ", L.head_dim_k, " (", kind,
           " layer ", l, ") needs ", shape_str({L.n_heads * int64_t{L.head_dim_k}, c.d_model}));
    if (const TensorInfo* q = src.find(qnn); q && q->shape != std::vector<int64_t>{L.head_dim_k})
      fail(s, ": tensor ", qnn, " has shape ", shape_str(q->shape), ", but ", hd_key, " = ", L.head_dim_k, " (",
           kind, " layer ", l, ") needs ", shape_str({L.head_dim_k}));
    if (L.kv_donor >= 0) continue;  // a sharer's own K/V tensors, when present, are never used
    const std::string kn = tensor_name(c, TensorRole::kK, l);
    const TensorInfo* kt = src.find(kn);
    OG_CHECK(kt != nullptr, s, ": ", k.key_shared, " = ", k.shared, " makes layer ", l, " own its KV, but tensor ", kn,
             " is missing");
    const std::vector<int64_t> want = {L.n_kv_heads * int64_t{L.head_dim_k}, c.d_model};
    OG_CHECK(kt->shape == want, s, ": tensor ", kn, " has shape ", shape_str(kt->shape), ", but ", hd_key, " = ",
             L.head_dim_k, " (", kind, " layer ", l, ") needs ", shape_str(want));
  }
  const std::string table = tensor_name(c, TensorRole::kPerLayerTokenEmbd);
  const TensorInfo* t = src.find(table);
  OG_CHECK(c.d_per_layer > 0 || t == nullptr, s, ": ", key_pl, " is 0 (no per-layer inputs), but the file holds ",
           table);
  OG_CHECK(c.d_per_layer == 0 || t == nullptr || (t->shape.size() == 2 && t->shape[1] == c.n_layers() * c.d_per_layer),
           s, ": tensor ", table, " has shape ", t ? shape_str(t->shape) : "", ", but ", key_pl, " = ",
           c.d_per_layer, " for ", c.n_layers(), " layers needs rows of ", c.n_layers() * c.d_per_layer);
}

void set_output_scales(ModelConfig& c, const TensorSource& src) {
  for (int l = 0; l < c.n_layers(); ++l)
    c.layers[l].has_output_scale = src.find(tensor_name(c, TensorRole::kLayerOutputScale, l)) != nullptr;
}

// ---- GGUF ----

std::vector<bool> gguf_sliding_pattern(const GgufFile& f, const std::string& key, int n) {
  const GgufValue* v = f.get(key);
  OG_CHECK(v != nullptr, f.source_name(), ": missing required key ", key);
  if (v->type == GgufType::BOOL) return std::vector<bool>(static_cast<size_t>(n), v->b);  // every layer alike
  OG_CHECK(v->type == GgufType::ARRAY && v->arr.type() == GgufType::BOOL && static_cast<int>(v->arr.size()) == n,
           f.source_name(), ": ", key, " must be an array of ", n, " booleans (one per layer)");
  std::vector<bool> out;
  for (const GgufValue& e : v->arr) out.push_back(e.b);
  return out;
}

int gguf_dim(const GgufFile& f, const std::string& key, std::optional<int64_t> fallback) {
  std::optional<int64_t> v = f.get_int(key);
  if (!v) v = fallback;
  OG_CHECK(v.has_value(), f.source_name(), ": missing required key ", key);
  OG_CHECK(*v > 0 && *v <= (int64_t{1} << 24), f.source_name(), ": ", key, " = ", *v, " is out of range");
  return static_cast<int>(*v);
}

void gemma4_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  read_gguf_common(f, arch, c, true);
  const std::string p = arch + ".", src = f.source_name();
  const int n = c.n_layers();
  Gemma4Keys k;
  k.where = src;
  k.key_hd_full = p + "attention.key_length";
  k.key_hd_swa = p + "attention.key_length_swa";
  k.key_shared = p + "attention.shared_kv_layers";
  k.sliding = gguf_sliding_pattern(f, p + "attention.sliding_window_pattern", n);
  k.hd_full = gguf_dim(f, k.key_hd_full, std::nullopt);
  k.hd_swa = gguf_dim(f, k.key_hd_swa, std::nullopt);
  OG_CHECK(gguf_dim(f, p + "attention.value_length", k.hd_full) == k.hd_full, src, ": ", p,
           "attention.value_length must equal ", k.key_hd_full, " (", k.hd_full, ")");
  OG_CHECK(gguf_dim(f, p + "attention.value_length_swa", k.hd_swa) == k.hd_swa, src, ": ", p,
           "attention.value_length_swa must equal ", k.key_hd_swa, " (", k.hd_swa, ")");
  k.n_rot_swa = gguf_dim(f, p + "rope.dimension_count_swa", k.hd_swa);
  OG_CHECK(k.n_rot_swa <= k.hd_swa && k.n_rot_swa % 2 == 0, src, ": ", p, "rope.dimension_count_swa ", k.n_rot_swa,
           " must be even and at most ", k.key_hd_swa, " ", k.hd_swa);
  const int n_rot_full = gguf_dim(f, p + "rope.dimension_count", k.hd_full);
  OG_CHECK(n_rot_full == k.hd_full, src, ": ", p, "rope.dimension_count ", n_rot_full, " must equal ", k.key_hd_full,
           " ", k.hd_full, " (partial rotation of full layers is written as rope_freqs.weight)");
  k.base_full = f.get_float(p + "rope.freq_base").value_or(10000.0);
  k.base_swa = f.get_float(p + "rope.freq_base_swa").value_or(10000.0);
  OG_CHECK(std::isfinite(k.base_swa) && k.base_swa > 1, src, ": ", p, "rope.freq_base_swa = ", k.base_swa,
           " must be > 1");
  std::vector<float>& ff = k.ff_full;
  if (f.find("rope_freqs.weight") != nullptr) ff = tensor_to_f32(f, "rope_freqs.weight", k.hd_full / 2);
  k.inv_freq_full = rope_inv_freq(k.base_full, k.hd_full);
  for (size_t i = 0; i < ff.size(); ++i) {
    OG_CHECK(std::isfinite(ff[i]) && ff[i] > 0, src, ": rope_freqs.weight[", i, "] = ", ff[i], " must be positive");
    k.inv_freq_full[i] = ff[i] >= kNoRotationFactor ? 0.0f : k.inv_freq_full[i] / ff[i];
  }
  const int64_t window = f.get_int(p + "attention.sliding_window").value_or(0);
  OG_CHECK(window > 0 && window <= INT32_MAX, src, ": ", p, "attention.sliding_window = ", window,
           " must be positive (gemma4 has sliding layers)");
  k.window = static_cast<int>(window);
  k.shared = f.get_int(k.key_shared).value_or(0);
  // head_count_kv may differ by type (num_global_key_value_heads): read_gguf_common kept it per layer.
  k.kv_swa = k.kv_full = 0;
  for (int l = 0; l < n; ++l) (k.sliding[l] ? k.kv_swa : k.kv_full) = c.layers[l].n_kv_heads;
  const std::string key_pl = p + "embedding_length_per_layer_input";
  const std::optional<int64_t> pl = f.get_int(key_pl);
  OG_CHECK(pl.has_value(), src, ": missing required key ", key_pl);
  OG_CHECK(*pl >= 0 && *pl <= (int64_t{1} << 24), src, ": ", key_pl, " = ", *pl, " is out of range");
  c.d_per_layer = *pl;
  // llama.cpp caps at 30 when the key is absent.
  const double cap = f.get_float(p + "final_logit_softcapping").value_or(30.0);
  OG_CHECK(std::isfinite(cap) && cap >= 0, src, ": ", p, "final_logit_softcapping = ", cap, " must be >= 0");
  c.final_logit_softcap = static_cast<float>(cap);
  // llama.cpp's converter stores no key for use_bidirectional_attention: the
  // models that set "vision" (26B-A4B, 31B) are the ones without per-layer
  // inputs, E2B/E4B (per-layer inputs) leave it unset (docs/vision.md).
  k.vision_spans = c.d_per_layer == 0;
  apply_layer_types(c, k);
  for (int l = 0; l < n; ++l)
    OG_CHECK(c.layers[l].n_kv_heads == (k.sliding[l] ? k.kv_swa : k.kv_full), src, ": ", p,
             "attention.head_count_kv differs between layers of the same type (layer ", l, ")");
  check_tensors_against_keys(c, f, k, key_pl);
  set_output_scales(c, f);
}

// ---- HF config.json ----

// inv_freq of one rope_parameters entry ("default" or "proportional").
std::vector<float> hf_inv_freq(const nlohmann::json& rp, const std::string& where, int head_dim,
                               double partial_factor, double* base, int* n_rot, std::vector<float>* factors) {
  std::string type = "default";
  if (json_has(rp, "rope_type")) {
    OG_CHECK(rp.at("rope_type").is_string(), where, ".rope_type must be a string");
    type = rp.at("rope_type").get<std::string>();
  }
  if (auto t = json_number(rp, "rope_theta", where)) *base = *t;
  OG_CHECK(std::isfinite(*base) && *base > 1, where, ".rope_theta = ", *base, " must be > 1");
  const double factor = json_number(rp, "partial_rotary_factor", where).value_or(partial_factor);
  OG_CHECK(factor > 0 && factor <= 1, where, ".partial_rotary_factor = ", factor, " must be in (0, 1]");
  if (type == "proportional") {
    // Frequencies over the whole head; pairs past factor * head_dim / 2 do not rotate.
    *n_rot = head_dim;
    std::vector<float> f = rope_inv_freq(*base, head_dim);
    const int rotated = static_cast<int>(std::floor(factor * head_dim / 2));
    for (int i = rotated; i < head_dim / 2; ++i) f[i] = 0.0f;
    // The same as GGUF's rope_freqs.weight: 1 rotates, 1e30 (the converter's value) does not.
    factors->assign(static_cast<size_t>(head_dim / 2), 1.0f);
    for (int i = rotated; i < head_dim / 2; ++i) (*factors)[i] = 1e30f;
    return f;
  }
  OG_CHECK(type == "default", where, ".rope_type '", type, "' is not supported (supported: default, proportional)");
  *n_rot = static_cast<int>(std::lround(head_dim * factor)) / 2 * 2;
  OG_CHECK(*n_rot > 0, where, ": partial_rotary_factor ", factor, " leaves no dims to rotate");
  return rope_inv_freq(*base, *n_rot);
}

void refuse_hf_variants(const nlohmann::json& cfg, const std::string& file) {
  for (const char* key : {"attention_k_eq_v", "enable_moe_block"})
    if (json_has(cfg, key) && cfg.at(key) != false)
      fail(file, ": ", key, " = ", cfg.at(key).dump(), " is not supported (gemma4 E2B/E4B-style models only)");
  if (json_has(cfg, "use_bidirectional_attention")) {
    const nlohmann::json& v = cfg.at("use_bidirectional_attention");
    OG_CHECK(v == false || v == "vision", file, ": use_bidirectional_attention = ", v.dump(),
             " is not supported (causal text attention only)");
  }
  const std::string act = cfg.value("hidden_activation", std::string("gelu_pytorch_tanh"));
  OG_CHECK(act == "gelu_pytorch_tanh" || act == "gelu_tanh", file, ": hidden_activation '", act,
           "' is not supported for gemma4 (supported: gelu_pytorch_tanh)");
}

int hf_required_dim(const nlohmann::json& cfg, const char* key, const std::string& file, int64_t fallback) {
  const int64_t v = json_int(cfg, key, file).value_or(fallback);
  OG_CHECK(v > 0 && v <= (int64_t{1} << 24), file, ": ", key, " = ", v, " is out of range");
  return static_cast<int>(v);
}

// Notes the tensors that are not part of the text model (vision/audio towers).
void note_skipped_towers(const HfInput& in, ModelConfig& c) {
  int64_t skipped = 0;
  for (const TensorInfo& t : in.weights.tensors())
    if (!t.name.starts_with(c.hf_prefix) && t.name != "lm_head.weight") ++skipped;
  if (skipped > 0)
    c.notes.push_back(cat(skipped, " tensors outside the text model (vision/audio towers) are ignored"));
}

void gemma4_from_hf(const HfInput& in, ModelConfig& c) {
  const std::string& file = in.file;
  const nlohmann::json& cfg = in.config;
  refuse_hf_variants(cfg, file);
  nlohmann::json flat = cfg;  // the fields read_hf_common knows; the rest is read here
  for (const char* key : {"rope_parameters", "rope_scaling", "final_logit_softcapping", "partial_rotary_factor"})
    flat.erase(key);
  if (!json_has(flat, "hidden_activation")) flat["hidden_activation"] = "gelu_pytorch_tanh";
  if (!json_has(flat, "head_dim")) flat["head_dim"] = 256;  // Gemma4TextConfig default
  read_hf_common(HfInput{flat, file, in.weights}, c, 1e-6, true);
  const int n = c.n_layers();
  Gemma4Keys k;
  k.where = file;
  k.key_hd_swa = "head_dim";
  k.key_hd_full = "global_head_dim";
  k.key_shared = "num_kv_shared_layers";
  const std::optional<std::vector<bool>> types = hf_layer_types(cfg, file, n);
  OG_CHECK(types.has_value(), file, ": missing required field layer_types");
  k.sliding = *types;
  k.hd_swa = hf_required_dim(flat, "head_dim", file, 256);
  k.hd_full = hf_required_dim(cfg, "global_head_dim", file, 512);
  k.kv_swa = c.layers[0].n_kv_heads;
  k.kv_full = hf_required_dim(cfg, "num_global_key_value_heads", file, k.kv_swa);
  OG_CHECK(c.layers[0].n_heads % k.kv_full == 0, file, ": num_global_key_value_heads ", k.kv_full,
           " does not divide num_attention_heads ", c.layers[0].n_heads);
  const double partial = json_number(cfg, "partial_rotary_factor", file).value_or(1.0);
  nlohmann::json rp = json_has(cfg, "rope_parameters") ? cfg.at("rope_parameters") : nlohmann::json::object();
  OG_CHECK(rp.is_object(), file, ": rope_parameters must be an object keyed by layer type");
  const nlohmann::json none = nlohmann::json::object();
  int n_rot_full = 0;
  k.base_full = 1e6;
  k.inv_freq_full = hf_inv_freq(rp.contains("full_attention") ? rp.at("full_attention") : none,
                                file + ": rope_parameters.full_attention", k.hd_full, 1.0, &k.base_full, &n_rot_full,
                                &k.ff_full);
  OG_CHECK(n_rot_full == k.hd_full, file, ": rope_parameters.full_attention must rotate whole heads or be "
           "\"proportional\" (partial \"default\" rotation of full layers is not supported)");
  k.base_swa = 10000;
  std::vector<float> ff_swa;
  hf_inv_freq(rp.contains("sliding_attention") ? rp.at("sliding_attention") : none,
              file + ": rope_parameters.sliding_attention", k.hd_swa, partial, &k.base_swa, &k.n_rot_swa, &ff_swa);
  OG_CHECK(ff_swa.empty(), file, ": rope_parameters.sliding_attention \"proportional\" is not supported (sliding "
           "layers rotate fully or by partial_rotary_factor)");
  k.window = hf_required_dim(cfg, "sliding_window", file, 512);
  k.shared = json_int(cfg, k.key_shared.c_str(), file).value_or(0);
  OG_CHECK(k.shared >= 0 && k.shared < n, file, ": ", k.key_shared, " = ", k.shared,
           " must leave at least one of the ", n, " layers owning its KV");
  const std::optional<int64_t> pl = json_int(cfg, "hidden_size_per_layer_input", file);
  OG_CHECK(!pl || (*pl >= 0 && *pl <= (int64_t{1} << 24)), file, ": hidden_size_per_layer_input is out of range");
  c.d_per_layer = pl.value_or(0);
  if (auto v = json_int(cfg, "vocab_size_per_layer_input", file); v && c.d_per_layer > 0)
    OG_CHECK(*v == c.n_vocab, file, ": vocab_size_per_layer_input = ", *v, " differs from vocab_size ", c.n_vocab,
             " (not supported)");
  const double cap = json_number(cfg, "final_logit_softcapping", file).value_or(0.0);
  OG_CHECK(std::isfinite(cap) && cap >= 0, file, ": final_logit_softcapping = ", cap, " must be >= 0");
  c.final_logit_softcap = static_cast<float>(cap);
  // use_double_wide_mlp: the KV-sharing layers have twice the FFN width.
  const bool double_wide = json_has(cfg, "use_double_wide_mlp") && cfg.at("use_double_wide_mlp") == true;
  for (int l = 0; l < n; ++l)
    if (double_wide && l >= n - k.shared) c.layers[l].d_ff *= 2;
  k.vision_spans = json_has(cfg, "use_bidirectional_attention") && cfg.at("use_bidirectional_attention") == "vision";
  apply_layer_types(c, k);
  check_tensors_against_keys(c, in.weights, k, "hidden_size_per_layer_input");
  set_output_scales(c, in.weights);
  note_skipped_towers(in, c);
}

// ---- writing GGUF ----

GgufValue u32_of(int64_t v) { return GgufValue::make_u32(static_cast<uint32_t>(v)); }

// One u32 when every layer agrees, else an array (the reader takes both).
void set_per_layer(const ModelConfig& c, GgufWriter& w, const std::string& key, int64_t (*get)(const LayerConfig&)) {
  bool same = true;
  for (const LayerConfig& L : c.layers) same = same && get(L) == get(c.layers[0]);
  if (same) return w.set(key, u32_of(get(c.layers[0])));
  std::vector<GgufValue> a;
  for (const LayerConfig& L : c.layers) a.push_back(u32_of(get(L)));
  w.set(key, GgufValue::make_array(GgufType::U32, std::move(a)));
}

// What every gemma4 layer must be for the format (it has no key for these).
void check_writable_layer(const ModelConfig& c, int l, const LayerConfig& ref) {
  const LayerConfig& L = c.layers[l];
  const std::string what = cat("cannot write ", c.architecture, " as GGUF gemma4: layer ", l, " ");
  OG_CHECK(L.head_dim_k == ref.head_dim_k && L.head_dim_v == L.head_dim_k && L.rope_n_rot == ref.rope_n_rot &&
               L.rope_base == ref.rope_base && L.window == ref.window && L.n_kv_heads == ref.n_kv_heads &&
               L.rope_inv_freq == ref.rope_inv_freq,
           what, "differs from the first layer of its type in head size, RoPE or window (the format stores one "
           "value per type)");
  OG_CHECK(L.attn_scale == 1.0f && L.has_q_norm && L.has_k_norm && L.has_v_norm && L.has_post_attn_norm &&
               L.has_post_ffn_norm && !L.has_qkv_bias && !L.has_o_bias && !L.rope_interleaved &&
               L.activation == Activation::kGeluTanh,
           what, "is not a gemma4 layer (attention scale 1, q/k/v norms, post-norms, GELU, no biases)");
}

void gemma4_to_gguf(const ModelConfig& c, GgufWriter& w) {
  const int n = c.n_layers();
  const std::string a = "gemma4.";
  int swa = -1, full = -1;  // the first layer of each type
  int shared = 0;
  std::vector<GgufValue> pattern;
  for (int l = 0; l < n; ++l) {
    int& first = c.layers[l].window > 0 ? swa : full;
    if (first < 0) first = l;
    pattern.push_back(GgufValue::make_bool(c.layers[l].window > 0));
    shared += c.layers[l].kv_donor >= 0 ? 1 : 0;
  }
  OG_CHECK(swa >= 0, "cannot write ", c.architecture, " as GGUF gemma4: no sliding layer");
  const LayerConfig& S = c.layers[swa];
  const LayerConfig& F = c.layers[full >= 0 ? full : swa];
  for (int l = 0; l < n; ++l) check_writable_layer(c, l, c.layers[l].window > 0 ? S : F);
  // GGUF has no use_bidirectional_attention key: the reader derives it from
  // the per-layer inputs (gemma4_from_gguf), so only that form is writable.
  for (int l = 0; l < n; ++l)
    OG_CHECK(c.layers[l].opens_image_spans == (c.layers[l].window > 0 && c.d_per_layer == 0), "cannot write ",
             c.architecture, " as GGUF gemma4: its image-token attention (use_bidirectional_attention ",
             c.d_per_layer == 0 ? "unset" : "\"vision\"", " with", c.d_per_layer == 0 ? "out" : "",
             " per-layer inputs) has no GGUF key and would read back otherwise");
  w.set("general.architecture", GgufValue::make_string("gemma4"));
  w.set(a + "context_length", u32_of(c.n_ctx));
  w.set(a + "embedding_length", u32_of(c.d_model));
  w.set(a + "block_count", u32_of(n));
  w.set(a + "vocab_size", u32_of(c.n_vocab));
  set_per_layer(c, w, a + "feed_forward_length", [](const LayerConfig& L) { return L.d_ff; });
  set_per_layer(c, w, a + "attention.head_count", [](const LayerConfig& L) { return int64_t{L.n_heads}; });
  set_per_layer(c, w, a + "attention.head_count_kv", [](const LayerConfig& L) { return int64_t{L.n_kv_heads}; });
  w.set(a + "attention.key_length", u32_of(F.head_dim_k));
  w.set(a + "attention.value_length", u32_of(F.head_dim_v));
  w.set(a + "attention.key_length_swa", u32_of(S.head_dim_k));
  w.set(a + "attention.value_length_swa", u32_of(S.head_dim_v));
  w.set(a + "rope.dimension_count", u32_of(F.rope_n_rot));
  w.set(a + "rope.dimension_count_swa", u32_of(S.rope_n_rot));
  w.set(a + "rope.freq_base", GgufValue::make_f32(static_cast<float>(F.rope_base)));
  w.set(a + "rope.freq_base_swa", GgufValue::make_f32(static_cast<float>(S.rope_base)));
  w.set(a + "attention.layer_norm_rms_epsilon", GgufValue::make_f32(c.eps));
  w.set(a + "attention.sliding_window", u32_of(S.window));
  w.set(a + "attention.sliding_window_pattern", GgufValue::make_array(GgufType::BOOL, std::move(pattern)));
  w.set(a + "attention.shared_kv_layers", u32_of(shared));
  w.set(a + "embedding_length_per_layer_input", u32_of(c.d_per_layer));
  w.set(a + "final_logit_softcapping", GgufValue::make_f32(c.final_logit_softcap));
}

}  // namespace

const FamilySpec& gemma4_family() {
  static const FamilySpec spec{"gemma4",         {"gemma4"}, {"Gemma4ForConditionalGeneration", "Gemma4ForCausalLM"},
                               gemma4_from_gguf, gemma4_from_hf, gemma4_to_gguf, false, true};
  return spec;
}

}  // namespace og
