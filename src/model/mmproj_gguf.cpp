// Gemma 3's tower as llama.cpp's mmproj GGUF (mmproj_gguf.h).
#include "model/mmproj_gguf.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"
#include "format/hf_config.h"
#include "format/hf_image_processor.h"
#include "kernels/ops.h"
#include "model/tensor_codec.h"

namespace og {
namespace {

// HF name pieces -> llama.cpp's, applied in order (the layer prefix before the
// per-layer parts). fc1 is ffn_up and fc2 ffn_down, as current converters write.
const std::vector<std::pair<std::string, std::string>>& name_map() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"vision_tower.vision_model.embeddings.patch_embedding.", "v.patch_embd."},
      {"vision_tower.vision_model.embeddings.position_embedding.", "v.position_embd."},
      {"vision_tower.vision_model.post_layernorm.", "v.post_ln."},
      {"multi_modal_projector.mm_soft_emb_norm.weight", "mm.soft_emb_norm.weight"},
      {"multi_modal_projector.mm_input_projection_weight", "mm.input_projection.weight"},
      {"vision_tower.vision_model.encoder.layers.", "v.blk."},
      {".layer_norm1.", ".ln1."},
      {".layer_norm2.", ".ln2."},
      {".self_attn.q_proj.", ".attn_q."},
      {".self_attn.k_proj.", ".attn_k."},
      {".self_attn.v_proj.", ".attn_v."},
      {".self_attn.out_proj.", ".attn_out."},
      {".mlp.fc1.", ".ffn_up."},
      {".mlp.fc2.", ".ffn_down."},
  };
  return m;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

GgufValue f32_array(const std::array<float, 3>& a) {
  std::vector<GgufValue> v;
  for (float x : a) v.push_back(GgufValue::make_f32(x));
  return GgufValue::make_array(GgufType::F32, std::move(v));
}

}  // namespace

std::vector<float> mmproj_values_of(const TensorSource& src, const TensorInfo& t) {
  const TensorView v = tensor_view(src, t);
  std::vector<float> out(static_cast<size_t>(v.numel()));
  const int64_t cols = v.cols();
  for (int64_t r = 0; r < v.rows(); ++r) kernels::dequantize_row(v.dtype, v.row(r), out.data() + r * cols, cols);
  return out;
}

void set_clip_u32(GgufWriter& w, const char* key, int64_t v) {
  w.set(key, GgufValue::make_u32(static_cast<uint32_t>(v)));
}

void check_mmproj_matrices(const MmprojWriteOptions& o) {
  OG_CHECK(o.matrices == DType::F32 || o.matrices == DType::F16 || o.matrices == DType::BF16,
           "mmproj: the tower's matrices are written as f32, f16 or bf16, not ", dtype_name(static_cast<uint32_t>(o.matrices)));
}

void set_clip_header(GgufWriter& w, const ClipHeader& h, const MmprojWriteOptions& o) {
  w.set("general.architecture", GgufValue::make_string("clip"));
  if (!o.name.empty()) w.set("general.name", GgufValue::make_string(o.name));
  w.set("clip.has_vision_encoder", GgufValue::make_bool(true));
  w.set(h.type_key, GgufValue::make_string(h.projector_type));
  set_clip_u32(w, "clip.vision.image_size", h.image_size);
  set_clip_u32(w, "clip.vision.patch_size", h.patch_size);
  set_clip_u32(w, "clip.vision.embedding_length", h.hidden);
  set_clip_u32(w, "clip.vision.feed_forward_length", h.intermediate);
  set_clip_u32(w, "clip.vision.block_count", h.n_layers);
  set_clip_u32(w, "clip.vision.attention.head_count", h.n_heads);
  set_clip_u32(w, "clip.vision.projection_dim", h.projection_dim);
  w.set("clip.vision.attention.layer_norm_epsilon", GgufValue::make_f32(h.eps));
  w.set("clip.vision.image_mean", f32_array(o.image_mean));
  w.set("clip.vision.image_std", f32_array(o.image_std));
}

std::string gemma3_mmproj_name(const std::string& hf_name, const std::string& top) {
  if (!starts_with(hf_name, top)) return "";
  std::string n = hf_name.substr(top.size());
  if (!starts_with(n, "vision_tower.vision_model.") && !starts_with(n, "multi_modal_projector.")) return "";
  for (const auto& [from, to] : name_map()) {
    const size_t at = n.find(from);
    if (at != std::string::npos) n.replace(at, from.size(), to);
  }
  return n;
}

void add_gemma3_mmproj(const VisionTowerConfig& c, const TensorSource& hf, const MmprojWriteOptions& o,
                       GgufWriter& w) {
  check_mmproj_matrices(o);
  bind_gemma3_vision(c, hf);  // every tensor present with its shape, or the loader's own error
  const std::string top = gemma3_vision_prefix(hf);
  ClipHeader h;
  h.projector_type = "gemma3";
  h.image_size = c.image_size;
  h.patch_size = c.patch_size;
  h.hidden = c.hidden;
  h.intermediate = c.intermediate;
  h.n_layers = c.n_layers;
  h.n_heads = c.n_heads;
  h.projection_dim = c.text_hidden;
  h.eps = c.layer_norm_eps;
  set_clip_header(w, h, o);
  w.set("clip.use_gelu", GgufValue::make_bool(true));
  const int64_t scale = c.patches_per_side() / c.tokens_per_side();
  if (scale != 4) set_clip_u32(w, "clip.vision.projector.scale_factor", scale);
  for (const TensorInfo& t : hf.tensors()) {
    const std::string name = gemma3_mmproj_name(t.name, top);
    if (name.empty() || starts_with(name, "vision_tower.vision_model.head.")) continue;  // SigLIP's unused head
    const bool matrix = t.shape.size() == 2 && name.find("_embd.") == std::string::npos;
    const bool soft_norm = name == "mm.soft_emb_norm.weight";
    const DType dt = matrix ? o.matrices : DType::F32;
    const TensorInfo* tp = &t;
    w.add_tensor(name, dt, t.shape, GgufWriter::Producer([&hf, tp, dt, soft_norm] {
                   std::vector<float> v = mmproj_values_of(hf, *tp);
                   if (soft_norm)
                     for (float& x : v) x += 1.0f;  // llama.cpp's file holds Gemma's 1 + weight
                   const int64_t cols = tp->shape.back();
                   return encode_rows(dt, v.data(), static_cast<int64_t>(v.size()) / cols, cols);
                 }));
  }
}

const HfCheckpoint& hf_checkpoint_with_tower(const ModelSource& src) {
  const HfCheckpoint* hf = src.hf();
  OG_CHECK(hf != nullptr, src.path(), ": --mmproj-out reads a Hugging Face checkpoint directory");
  OG_CHECK(hf->config.contains("vision_config"), src.path(),
           ": --mmproj-out: the model has no vision tower (config.json has no vision_config)");
  OG_CHECK(src.tensors() != nullptr, src.path(), ": --mmproj-out: the directory was opened without its weights");
  return *hf;
}

void write_mmproj_file(const std::string& out_path, bool overwrite, const std::function<void(GgufWriter&)>& add,
                       const std::function<void(const GgufFile&)>& read_back) {
  AtomicOutput out(out_path, overwrite);
  GgufWriter w;
  add(w);
  w.write(out.path());
  if (!out.in_place()) read_back(*GgufFile::open(out.path()));  // as --mmproj reads it: the config and every tensor
  out.commit();
}

VisionTowerConfig hf_mmproj_config(const ModelSource& src) {
  const HfCheckpoint& hf = hf_checkpoint_with_tower(src);
  const std::string type = json_string(hf.config, "model_type", hf.config_path).value_or("");
  OG_CHECK(type == "gemma3", src.path(), ": --mmproj-out writes Gemma 3's tower (model_type gemma3), not model_type ",
           type.empty() ? std::string("(none)") : type);
  return gemma3_vision_config(hf.config, hf.config_path);
}

VisionTowerConfig export_hf_mmproj(const ModelSource& src, const std::string& out_path, MmprojWriteOptions o,
                                   bool overwrite) {
  const VisionTowerConfig c = hf_mmproj_config(src);
  if (const std::optional<HfImageProcessor> p = read_hf_image_processor(src.hf()->dir)) {
    if (p->mean) o.image_mean = *p->mean;
    if (p->std) o.image_std = *p->std;
  }
  if (o.name.empty()) o.name = std::filesystem::path(src.path()).filename().string();
  write_mmproj_file(
      out_path, overwrite, [&](GgufWriter& w) { add_gemma3_mmproj(c, *src.tensors(), o, w); },
      [](const GgufFile& f) { bind_gemma3_mmproj(gemma3_mmproj_config(f), f); });
  return c;
}

}  // namespace og
