// Gemma 4's tower as llama.cpp's mmproj GGUF (mmproj_gguf_gemma4.h).
#include "model/mmproj_gguf_gemma4.h"

#include <utility>
#include <vector>

#include "base/error.h"
#include "model/tensor_codec.h"

namespace og {
namespace {

// HF name pieces -> llama.cpp's, applied in order (the layer prefix first).
const std::vector<std::pair<std::string, std::string>>& name_map() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"vision_tower.patch_embedder.input_proj.weight", "v.patch_embd.weight"},
      {"vision_tower.patch_embedder.position_embedding_table", "v.position_embd.weight"},
      {"vision_tower.std_bias", "v.std_bias"},
      {"vision_tower.std_scale", "v.std_scale"},
      {"embed_vision.embedding_projection.", "mm.input_projection."},
      {"vision_tower.encoder.layers.", "v.blk."},
      {".input_layernorm.", ".ln1."},
      {".post_attention_layernorm.", ".attn_post_norm."},
      {".pre_feedforward_layernorm.", ".ln2."},
      {".post_feedforward_layernorm.", ".ffn_post_norm."},
      {".self_attn.q_norm.", ".attn_q_norm."},
      {".self_attn.k_norm.", ".attn_k_norm."},
      {".self_attn.q_proj.", ".attn_q."},
      {".self_attn.k_proj.", ".attn_k."},
      {".self_attn.v_proj.", ".attn_v."},
      {".self_attn.o_proj.", ".attn_out."},
      {".mlp.gate_proj.", ".ffn_gate."},
      {".mlp.up_proj.", ".ffn_up."},
      {".mlp.down_proj.", ".ffn_down."},
      {".linear.weight", ".weight"},
  };
  return m;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

}  // namespace

std::string gemma4_mmproj_name(const std::string& hf_name, const std::string& top) {
  if (!starts_with(hf_name, top)) return "";
  std::string n = hf_name.substr(top.size());
  if (!starts_with(n, "vision_tower.") && !starts_with(n, "embed_vision.")) return "";
  for (const auto& m : name_map()) {
    const size_t at = n.find(m.first);
    if (at != std::string::npos) n.replace(at, m.first.size(), m.second);
  }
  return n;
}

void add_gemma4_mmproj(const Gemma4VisionConfig& c, const TensorSource& hf, const MmprojWriteOptions& o,
                       GgufWriter& w) {
  check_mmproj_matrices(o);
  bind_gemma4_vision(c, hf);  // every tensor present with its shape, or the loader's own error
  const std::string top = gemma4_vision_prefix(hf);
  ClipHeader h;
  h.type_key = "clip.vision.projector_type";
  h.projector_type = "gemma4v";
  h.image_size = 224;  // unused by gemma4v; the converter writes 224 for the loader
  h.patch_size = c.patch_size;
  h.hidden = c.hidden;
  h.intermediate = c.intermediate;
  h.n_layers = c.n_layers;
  h.n_heads = c.n_heads;
  h.projection_dim = c.text_hidden;
  h.eps = c.rms_norm_eps;
  set_clip_header(w, h, o);
  // llama.cpp reads a grouped tower's kv heads from this key (default: the heads)
  // and cannot load a grouped tower without it; released Gemma 4 towers are not grouped.
  if (c.n_kv_heads != c.n_heads) set_clip_u32(w, "clip.vision.attention.head_count_kv", c.n_kv_heads);
  if (c.pooling != 3) set_clip_u32(w, "clip.vision.projector.scale_factor", c.pooling);
  const int64_t d = c.hidden, p = c.patch_size;
  for (const TensorInfo& t : hf.tensors()) {
    const std::string name = gemma4_mmproj_name(t.name, top);
    if (name.empty()) continue;
    if (!c.standardize && starts_with(name, "v.std_")) continue;
    const bool clamp = ends_with(name, "_min") || ends_with(name, "_max");
    if (clamp && !c.clipped_linears) continue;  // bounds the HF model does not apply
    const bool patch = name == "v.patch_embd.weight";
    const bool matrix = t.shape.size() == 2 && !patch;
    const DType dt = matrix ? o.matrices : DType::F32;
    std::vector<int64_t> shape = t.shape;
    if (patch) shape = {d, 3, p, p};
    if (shape.empty()) shape = {1};  // a clamp scalar
    const TensorInfo* tp = &t;
    w.add_tensor(name, dt, shape, GgufWriter::Producer([&hf, tp, dt, patch, d, p] {
                   std::vector<float> v = mmproj_values_of(hf, *tp);
                   if (patch) {  // (row, column, channel) -> the conv's (channel, row, column)
                     std::vector<float> conv(v.size());
                     for (int64_t o2 = 0; o2 < d; ++o2)
                       for (int64_t y = 0; y < p; ++y)
                         for (int64_t x = 0; x < p; ++x)
                           for (int64_t ch = 0; ch < 3; ++ch)
                             conv[((o2 * 3 + ch) * p + y) * p + x] = v[o2 * 3 * p * p + (y * p + x) * 3 + ch];
                     v = std::move(conv);
                   }
                   const int64_t cols = tp->shape.empty() ? 1 : tp->shape.back();
                   return encode_rows(dt, v.data(), static_cast<int64_t>(v.size()) / cols, cols);
                 }));
  }
}

}  // namespace og
