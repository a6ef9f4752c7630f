// The LLaVA-style CLIP tower and MLP projector (vision_llava.h), through the
// kernel tables like the other towers. tests/model/vision_llava_test.cpp holds
// it to a plain twin in double.
#include "model/vision_llava.h"

#include <cmath>
#include <functional>

#include "base/error.h"
#include "format/hf_config.h"
#include "kernels/ops.h"
#include "model/vision_parts.h"

namespace og {

namespace {

int64_t need_int(const nlohmann::json& obj, const char* key, const std::string& file) {
  const std::optional<int64_t> v = json_int(obj, key, file);
  OG_CHECK(v.has_value(), file, ": vision_config.", key, " is missing (needed for the vision tower)");
  return *v;
}

// Where the tensors are: the HF module tails of a layer's tensors map to a
// file's names through `layer`.
struct ClipNames {
  std::string patch_w, patch_b, class_embd, pos, pre_w, pre_b, post_w, post_b, mm1, mm2;
  std::function<std::string(int64_t, const std::string&)> layer;
  bool patch_bias_optional = false;
};

std::vector<float> optional_f32(const TensorSource& src, const std::string& name, int64_t n) {
  if (src.find(name) == nullptr) return {};
  return vision_parts::f32(src, name, {n});
}

ClipTowerWeights bind_clip(const ClipTowerConfig& c, const TensorSource& src, const ClipNames& n) {
  c.check();
  using vision_parts::f32;
  using vision_parts::matrix;
  const int64_t d = c.hidden, p = c.patch_size, ff = c.intermediate;
  ClipTowerWeights w;
  w.patch = tensor_view(src, vision_parts::require(src, n.patch_w, {d, 3, p, p}));
  OG_CHECK(kernels::weight_dtype_supported(w.patch.dtype), src.source_name(), ": vision tensor ", n.patch_w,
           " has a dtype without matmul kernels");
  w.patch.shape = {d, 3 * p * p};
  if (!n.patch_b.empty()) w.patch_b = optional_f32(src, n.patch_b, d);
  w.class_embd = f32(src, n.class_embd, {d});
  w.pos = f32(src, n.pos, {c.n_patches() + 1, d});
  w.pre_w = f32(src, n.pre_w, {d});
  w.pre_b = f32(src, n.pre_b, {d});
  for (int64_t l = 0; l < c.feature_layers; ++l) {
    auto name = [&](const char* part) { return n.layer(l, part); };
    ClipLayerWeights L;
    L.ln1_w = f32(src, name("layer_norm1.weight"), {d});
    L.ln1_b = f32(src, name("layer_norm1.bias"), {d});
    L.ln2_w = f32(src, name("layer_norm2.weight"), {d});
    L.ln2_b = f32(src, name("layer_norm2.bias"), {d});
    L.wq = matrix(src, name("self_attn.q_proj.weight"), d, d);
    L.wk = matrix(src, name("self_attn.k_proj.weight"), d, d);
    L.wv = matrix(src, name("self_attn.v_proj.weight"), d, d);
    L.wo = matrix(src, name("self_attn.out_proj.weight"), d, d);
    L.bq = f32(src, name("self_attn.q_proj.bias"), {d});
    L.bk = f32(src, name("self_attn.k_proj.bias"), {d});
    L.bv = f32(src, name("self_attn.v_proj.bias"), {d});
    L.bo = f32(src, name("self_attn.out_proj.bias"), {d});
    L.fc1 = matrix(src, name("mlp.fc1.weight"), ff, d);
    L.b1 = f32(src, name("mlp.fc1.bias"), {ff});
    L.fc2 = matrix(src, name("mlp.fc2.weight"), d, ff);
    L.b2 = f32(src, name("mlp.fc2.bias"), {d});
    w.layers.push_back(std::move(L));
  }
  if (c.post_norm) {
    w.post_w = f32(src, n.post_w, {d});
    w.post_b = f32(src, n.post_b, {d});
  }
  // The projector's widths are its weights' own: linear_1 [mid, hidden], linear_2 [text, mid].
  const TensorInfo* m1 = src.find(n.mm1 + ".weight");
  const TensorInfo* m2 = src.find(n.mm2 + ".weight");
  OG_CHECK(m1 != nullptr && m2 != nullptr, src.source_name(), ": projector tensors ", n.mm1, ".weight and ", n.mm2,
           ".weight are needed");
  OG_CHECK(m1->shape.size() == 2 && m2->shape.size() == 2, src.source_name(), ": projector weights must be 2-D");
  const int64_t mid = m1->shape[0];
  w.text_hidden = m2->shape[0];
  w.mm1 = matrix(src, n.mm1 + ".weight", mid, d);
  w.mm2 = matrix(src, n.mm2 + ".weight", w.text_hidden, mid);
  w.mm1_b = optional_f32(src, n.mm1 + ".bias", mid);
  w.mm2_b = optional_f32(src, n.mm2 + ".bias", w.text_hidden);
  return w;
}

void quick_gelu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-1.702f * x[i]));
}

}  // namespace

void ClipTowerConfig::check() const {
  OG_CHECK(image_size > 0 && patch_size > 0 && hidden > 0 && intermediate > 0 && n_layers > 0 && n_heads > 0,
           "clip vision: image_size, patch_size, hidden_size, intermediate_size, num_hidden_layers and "
           "num_attention_heads must be positive");
  OG_CHECK(image_size % patch_size == 0, "clip vision: patch_size ", patch_size, " does not divide image_size ",
           image_size);
  OG_CHECK(hidden % n_heads == 0, "clip vision: num_attention_heads ", n_heads, " does not divide hidden_size ",
           hidden);
  OG_CHECK(feature_layers >= 0 && feature_layers <= n_layers, "clip vision: the feature layer ", feature_layers,
           " is outside the tower's 0..", n_layers, " hidden states");
  OG_CHECK(layer_norm_eps > 0, "clip vision: layer_norm_eps must be positive");
}

ClipTowerConfig llava_vision_config(const nlohmann::json& config, const std::string& file) {
  OG_CHECK(config.contains("vision_config") && config["vision_config"].is_object(), file,
           ": vision_config is missing (the model has no vision tower)");
  const nlohmann::json& v = config["vision_config"];
  ClipTowerConfig c;
  c.hidden = need_int(v, "hidden_size", file);
  c.intermediate = need_int(v, "intermediate_size", file);
  c.n_layers = need_int(v, "num_hidden_layers", file);
  c.n_heads = need_int(v, "num_attention_heads", file);
  c.patch_size = need_int(v, "patch_size", file);
  c.image_size = need_int(v, "image_size", file);
  if (const auto eps = json_number(v, "layer_norm_eps", file)) c.layer_norm_eps = static_cast<float>(*eps);
  const std::string act = json_string(v, "hidden_act", file).value_or("quick_gelu");
  OG_CHECK(act == "quick_gelu" || act == "gelu", file, ": vision_config.hidden_act is \"", act,
           "\"; only quick_gelu and gelu are supported");
  c.quick_gelu = act == "quick_gelu";
  const std::string pact = json_string(config, "projector_hidden_act", file).value_or("gelu");
  OG_CHECK(pact == "gelu", file, ": projector_hidden_act is \"", pact, "\"; only gelu is supported");
  int64_t layer = -2;
  if (config.contains("vision_feature_layer")) {
    OG_CHECK(config["vision_feature_layer"].is_number_integer(), file,
             ": vision_feature_layer must be one integer (a list of layers is not supported)");
    layer = config["vision_feature_layer"].get<int64_t>();
  }
  // hidden_states holds n_layers + 1 entries: the embeddings (after the
  // pre-LayerNorm), then each layer's output; -2 is the penultimate layer's.
  c.feature_layers = layer >= 0 ? layer : c.n_layers + 1 + layer;
  const std::string strategy = json_string(config, "vision_feature_select_strategy", file).value_or("default");
  OG_CHECK(strategy == "default" || strategy == "full", file, ": vision_feature_select_strategy is \"", strategy,
           "\"; only default and full are supported");
  c.keep_class = strategy == "full";
  OG_CHECK(c.feature_layers >= 0 && c.feature_layers <= c.n_layers, file, ": vision_feature_layer ", layer,
           " is outside the tower's ", c.n_layers + 1, " hidden states");
  c.check();
  return c;
}

ClipTowerConfig llava_mmproj_config(const GgufFile& f) {
  const std::string file = f.source_name();
  auto need = [&](const char* key) {
    const std::optional<int64_t> v = f.get_int(key);
    OG_CHECK(v.has_value(), file, ": ", key, " is missing (needed for the vision tower)");
    return *v;
  };
  OG_CHECK(!f.get_int_array("clip.vision.feature_layer").has_value(), file,
           ": clip.vision.feature_layer (features from several layers) is not supported");
  ClipTowerConfig c;
  c.image_size = need("clip.vision.image_size");
  c.patch_size = need("clip.vision.patch_size");
  c.hidden = need("clip.vision.embedding_length");
  c.intermediate = need("clip.vision.feed_forward_length");
  c.n_layers = need("clip.vision.block_count");
  c.n_heads = need("clip.vision.attention.head_count");
  if (const auto eps = f.get_float("clip.vision.attention.layer_norm_epsilon"))
    c.layer_norm_eps = static_cast<float>(*eps);
  c.quick_gelu = !f.get_bool("clip.use_gelu").value_or(false);
  c.feature_layers = c.n_layers;
  c.post_norm = f.find("v.post_ln.weight") != nullptr;
  c.keep_class = false;
  c.check();
  return c;
}

ClipTowerWeights bind_llava_vision(const ClipTowerConfig& c, const TensorSource& src) {
  std::string top;
  if (src.find("model.vision_tower.vision_model.embeddings.patch_embedding.weight")) top = "model.";
  else
    OG_CHECK(src.find("vision_tower.vision_model.embeddings.patch_embedding.weight"), src.source_name(),
             ": vision tensor vision_tower.vision_model.embeddings.patch_embedding.weight is missing "
             "(not a LLaVA checkpoint with a vision tower)");
  const std::string vm = top + "vision_tower.vision_model.";
  ClipNames n;
  n.patch_w = vm + "embeddings.patch_embedding.weight";
  n.class_embd = vm + "embeddings.class_embedding";
  n.pos = vm + "embeddings.position_embedding.weight";
  n.pre_w = vm + "pre_layrnorm.weight";  // transformers' CLIP spells it so
  n.pre_b = vm + "pre_layrnorm.bias";
  n.post_w = vm + "post_layernorm.weight";
  n.post_b = vm + "post_layernorm.bias";
  n.mm1 = top + "multi_modal_projector.linear_1";
  n.mm2 = top + "multi_modal_projector.linear_2";
  n.layer = [&](int64_t l, const std::string& part) { return vm + "encoder.layers." + std::to_string(l) + "." + part; };
  return bind_clip(c, src, n);
}

ClipTowerWeights bind_llava_mmproj(const ClipTowerConfig& c, const TensorSource& src) {
  // fc1 is ffn_up in current files; older converters swapped the two. The
  // shapes decide where the widths differ, as for Gemma 3's files.
  bool fc1_is_down = false;
  if (c.intermediate != c.hidden) {
    const TensorInfo* down = src.find("v.blk.0.ffn_down.weight");
    fc1_is_down = down != nullptr && down->shape == std::vector<int64_t>{c.intermediate, c.hidden};
  }
  static const std::pair<const char*, const char*> kParts[] = {
      {"layer_norm1.", "ln1."},         {"layer_norm2.", "ln2."},          {"self_attn.q_proj.", "attn_q."},
      {"self_attn.k_proj.", "attn_k."}, {"self_attn.v_proj.", "attn_v."}, {"self_attn.out_proj.", "attn_out."},
      {"mlp.fc1.", "ffn_up."},          {"mlp.fc2.", "ffn_down."}};
  ClipNames n;
  n.patch_w = "v.patch_embd.weight";
  n.patch_b = "v.patch_embd.bias";
  n.class_embd = "v.class_embd";
  n.pos = "v.position_embd.weight";
  n.pre_w = "v.pre_ln.weight";
  n.pre_b = "v.pre_ln.bias";
  n.post_w = "v.post_ln.weight";
  n.post_b = "v.post_ln.bias";
  n.mm1 = "mm.0";
  n.mm2 = "mm.2";
  n.layer = [fc1_is_down](int64_t l, const std::string& part) {
    for (const auto& entry : kParts) {
      const std::string h = entry.first;
      if (part.compare(0, h.size(), h) != 0) continue;
      std::string g = entry.second;
      if (fc1_is_down && h == "mlp.fc1.") g = "ffn_down.";
      if (fc1_is_down && h == "mlp.fc2.") g = "ffn_up.";
      return "v.blk." + std::to_string(l) + "." + g + part.substr(h.size());
    }
    throw Error("clip vision: no mmproj name for " + part);
  };
  return bind_clip(c, src, n);
}

LlavaVisionTower::LlavaVisionTower(ClipTowerConfig c, ClipTowerWeights w) : c_(c), w_(std::move(w)) {
  c_.check();
  OG_CHECK(static_cast<int64_t>(w_.layers.size()) == c_.feature_layers, "clip vision: ", w_.layers.size(),
           " layers bound, the feature layer needs ", c_.feature_layers);
}

void LlavaVisionTower::layer(const ClipLayerWeights& l, std::vector<float>& x) const {
  const int64_t n = c_.n_patches() + 1, d = c_.hidden, ff = c_.intermediate;
  std::vector<float> h(x.size()), q(x.size()), k(x.size()), v(x.size()), a(x.size());
  for (int64_t i = 0; i < n; ++i)
    kernels::layer_norm(x.data() + i * d, l.ln1_w.data(), l.ln1_b.data(), c_.layer_norm_eps, d, h.data() + i * d);
  vision_parts::linear(l.wq, l.bq, h.data(), n, q.data());
  vision_parts::linear(l.wk, l.bk, h.data(), n, k.data());
  vision_parts::linear(l.wv, l.bv, h.data(), n, v.data());
  vision_parts::AttendShape s;
  s.n = n;
  s.n_heads = s.n_kv_heads = c_.n_heads;
  s.head_dim = c_.head_dim();
  s.q_stride = s.kv_stride = d;
  s.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  vision_parts::attend_all(s, q.data(), k.data(), v.data(), a.data());
  vision_parts::linear(l.wo, l.bo, a.data(), n, h.data());
  kernels::add(x.data(), h.data(), n * d);
  for (int64_t i = 0; i < n; ++i)
    kernels::layer_norm(x.data() + i * d, l.ln2_w.data(), l.ln2_b.data(), c_.layer_norm_eps, d, h.data() + i * d);
  std::vector<float> u(static_cast<size_t>(n * ff));
  vision_parts::linear(l.fc1, l.b1, h.data(), n, u.data());
  if (c_.quick_gelu) quick_gelu(u.data(), n * ff);
  else kernels::gelu_erf(u.data(), n * ff);
  vision_parts::linear(l.fc2, l.b2, u.data(), n, h.data());
  kernels::add(x.data(), h.data(), n * d);
}

std::vector<float> LlavaVisionTower::features(std::span<const float> pixels) const {
  const int64_t side = c_.image_size, p = c_.patch_size, g = c_.patches_per_side(), np = c_.n_patches();
  const int64_t d = c_.hidden, pp = 3 * p * p, n = np + 1;
  OG_CHECK(static_cast<int64_t>(pixels.size()) == 3 * side * side, "clip vision: expected ", side, "x", side,
           " RGB pixels (", 3 * side * side, " values), got ", pixels.size(), " values");
  std::vector<float> unfolded(static_cast<size_t>(np * pp));
  for (int64_t py = 0; py < g; ++py)
    for (int64_t px = 0; px < g; ++px)
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t y = 0; y < p; ++y)
          std::copy_n(pixels.data() + (ch * side + py * p + y) * side + px * p, p,
                      unfolded.data() + (py * g + px) * pp + (ch * p + y) * p);
  // Row 0 is the class token, rows 1.. the patches; positions added to all.
  std::vector<float> x(static_cast<size_t>(n * d));
  std::copy(w_.class_embd.begin(), w_.class_embd.end(), x.begin());
  vision_parts::linear(w_.patch, w_.patch_b, unfolded.data(), np, x.data() + d);
  kernels::add(x.data(), w_.pos.data(), n * d);
  for (int64_t i = 0; i < n; ++i)
    kernels::layer_norm(x.data() + i * d, w_.pre_w.data(), w_.pre_b.data(), c_.layer_norm_eps, d, x.data() + i * d);
  for (const ClipLayerWeights& l : w_.layers) layer(l, x);
  if (c_.post_norm)
    for (int64_t i = 0; i < n; ++i)
      kernels::layer_norm(x.data() + i * d, w_.post_w.data(), w_.post_b.data(), c_.layer_norm_eps, d,
                          x.data() + i * d);
  if (!c_.keep_class) x.erase(x.begin(), x.begin() + d);
  return x;
}

std::vector<float> LlavaVisionTower::encode(std::span<const float> pixels) const {
  const std::vector<float> f = features(pixels);
  const int64_t t = c_.n_tokens(), mid = w_.mm1.shape[0];
  std::vector<float> h(static_cast<size_t>(t * mid)), out(static_cast<size_t>(t * w_.text_hidden));
  vision_parts::linear(w_.mm1, w_.mm1_b, f.data(), t, h.data());
  kernels::gelu_erf(h.data(), t * mid);
  vision_parts::linear(w_.mm2, w_.mm2_b, h.data(), t, out.data());
  return out;
}

}  // namespace og
