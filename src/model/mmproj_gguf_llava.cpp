// LLaVA's tower as llama.cpp's mlp mmproj GGUF (mmproj_gguf_llava.h).
#include "model/mmproj_gguf_llava.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "base/error.h"
#include "format/hf_config.h"
#include "model/tensor_codec.h"
#include "model/vision_llava_pixels.h"

namespace og {
namespace {

// The pieces LLaVA's CLIP names have beyond what gemma3_mmproj_name maps
// (the SigLIP-shaped layers, embeddings and post-LayerNorm the two share).
const std::vector<std::pair<std::string, std::string>>& llava_pieces() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"vision_tower.vision_model.embeddings.class_embedding", "v.class_embd"},
      {"vision_tower.vision_model.pre_layrnorm.", "v.pre_ln."},
      {"multi_modal_projector.linear_1.", "mm.0."},
      {"multi_modal_projector.linear_2.", "mm.2."},
  };
  return m;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// "v.blk.N." -> N; -1 for a tensor outside the layers.
int64_t layer_of(const std::string& name) {
  if (!starts_with(name, "v.blk.")) return -1;
  return std::stoll(name.substr(6));
}

// The checkpoint's prefix: "model." (newer transformers) or "".
std::string llava_prefix(const TensorSource& src) {
  return src.find("model.vision_tower.vision_model.embeddings.patch_embedding.weight") ? "model." : "";
}

void check_writable(const ClipTowerConfig& c, const std::string& where) {
  OG_CHECK(!c.keep_class, where,
           ": --mmproj-out: vision_feature_select_strategy \"full\" (the class token kept) cannot be written as an "
           "mlp mmproj, whose readers drop it");
  OG_CHECK(c.feature_layers > 0, where, ": --mmproj-out: vision_feature_layer 0 (the embeddings) cannot be written "
           "as an mlp mmproj (block_count 0)");
  OG_CHECK(!c.post_norm, where, ": --mmproj-out: a tower whose features pass the post-LayerNorm is not an HF LLaVA tower");
}

}  // namespace

std::string llava_mmproj_name(const std::string& hf_name, const std::string& top) {
  std::string n = gemma3_mmproj_name(hf_name, top);
  for (const auto& [from, to] : llava_pieces()) {
    const size_t at = n.find(from);
    if (at != std::string::npos) n.replace(at, from.size(), to);
  }
  return n;
}

void add_llava_mmproj(const ClipTowerConfig& c, const TensorSource& hf, const MmprojWriteOptions& o, GgufWriter& w) {
  check_mmproj_matrices(o);
  check_writable(c, hf.source_name());
  const ClipTowerWeights bound = bind_llava_vision(c, hf);  // every tensor present with its shape
  const std::string top = llava_prefix(hf);
  ClipHeader h;
  h.projector_type = "mlp";
  h.image_size = c.image_size;
  h.patch_size = c.patch_size;
  h.hidden = c.hidden;
  h.intermediate = c.intermediate;
  h.n_layers = c.feature_layers;  // the tower cut at its feature layer
  h.n_heads = c.n_heads;
  h.projection_dim = bound.text_hidden;
  h.eps = c.layer_norm_eps;
  set_clip_header(w, h, o);
  w.set("clip.use_gelu", GgufValue::make_bool(!c.quick_gelu));
  for (const TensorInfo& t : hf.tensors()) {
    const std::string name = llava_mmproj_name(t.name, top);
    if (name.empty() || starts_with(name, "v.post_ln.") || layer_of(name) >= c.feature_layers) continue;
    const bool matrix = t.shape.size() == 2 && name.find("_embd.") == std::string::npos;
    const DType dt = matrix ? o.matrices : DType::F32;
    const TensorInfo* tp = &t;
    w.add_tensor(name, dt, t.shape, GgufWriter::Producer([&hf, tp, dt] {
                   const std::vector<float> v = mmproj_values_of(hf, *tp);
                   const int64_t cols = tp->shape.back();
                   return encode_rows(dt, v.data(), static_cast<int64_t>(v.size()) / cols, cols);
                 }));
  }
}

bool hf_is_llava(const ModelSource& src) {
  const HfCheckpoint* hf = src.hf();
  return hf != nullptr && json_string(hf->config, "model_type", hf->config_path).value_or("") == "llava";
}

namespace {

// The directory's image processor settings as its own tower reads them.
VisionPixels processor_pixels(const ModelSource& src, const ClipTowerConfig& c) {
  const std::string pre = src.hf()->dir + "/preprocessor_config.json";
  std::error_code ec;
  const nlohmann::json processor = std::filesystem::exists(pre, ec) ? read_json_file(pre) : nlohmann::json();
  return llava_hf_pixels(c.image_size, processor, pre);
}

}  // namespace

ClipTowerConfig hf_llava_mmproj_config(const ModelSource& src) {
  const HfCheckpoint& hf = hf_checkpoint_with_tower(src);
  const ClipTowerConfig c = llava_vision_config(hf.config, hf.config_path);
  check_writable(c, src.path());
  bind_llava_vision(c, *src.tensors());  // a stripped or partial tower is named before anything is written
  processor_pixels(src, c);               // and settings the tower cannot take
  return c;
}

ClipTowerConfig export_hf_llava_mmproj(const ModelSource& src, const std::string& out_path, MmprojWriteOptions o,
                                       bool overwrite) {
  const ClipTowerConfig c = hf_llava_mmproj_config(src);
  const VisionPixels px = processor_pixels(src, c);
  o.image_mean = px.mean;
  o.image_std = px.std;
  if (o.name.empty()) o.name = std::filesystem::path(src.path()).filename().string();
  write_mmproj_file(
      out_path, overwrite, [&](GgufWriter& w) { add_llava_mmproj(c, *src.tensors(), o, w); },
      [](const GgufFile& f) { bind_llava_mmproj(llava_mmproj_config(f), f); });
  return c;
}

}  // namespace og
