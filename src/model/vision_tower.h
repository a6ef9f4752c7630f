// Gemma 3's vision tower: a SigLIP ViT encoder and Gemma 3's multimodal
// projector, from preprocessed pixels (vision/preprocess.h, planar [3, H, W])
// to the rows a Session takes as an image (model.h BatchRow::embedding):
// [mm_tokens_per_image, text hidden]. It runs its matmuls through the kernel
// tables and its attention through the attend kernels, so it lives at the
// model layer, beside the text forward (docs/vision.md "The tower").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/tensor_source.h"
#include "tensor/tensor_view.h"

namespace og {

class HugePageBuffer;

// The tower's shape. From an HF config: vision_config's fields, the top
// level's mm_tokens_per_image and text_config's hidden_size.
struct VisionTowerConfig {
  int64_t image_size = 0;       // square input side in pixels
  int64_t patch_size = 0;       // the patch conv's kernel and stride
  int64_t hidden = 0;           // vision width
  int64_t intermediate = 0;     // MLP width
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  // The LayerNorms' eps, and the projector's RMSNorm's too (transformers
  // builds mm_soft_emb_norm with vision_config.layer_norm_eps).
  float layer_norm_eps = 1e-6f;
  int64_t mm_tokens_per_image = 256;  // soft tokens after pooling (a square number)
  int64_t text_hidden = 0;            // the text model's d_model

  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t n_patches() const { return patches_per_side() * patches_per_side(); }
  int64_t tokens_per_side() const;  // sqrt(mm_tokens_per_image)
  int64_t head_dim() const { return hidden / n_heads; }
  // og::Error naming the field unless the shape is consistent: every size
  // positive, the patch divides the image, heads divide the width, the token
  // count a square whose side divides the patch grid.
  void check() const;
};

// The config of an HF Gemma3ForConditionalGeneration config.json (`file` in messages).
VisionTowerConfig gemma3_vision_config(const nlohmann::json& config, const std::string& file);

struct VisionLayerWeights {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;  // [hidden]
  TensorView wq, wk, wv, wo;                      // [hidden, hidden]
  std::vector<float> bq, bk, bv, bo;              // [hidden]
  TensorView fc1;                                 // [intermediate, hidden]
  std::vector<float> b1;                          // [intermediate]
  TensorView fc2;                                 // [hidden, intermediate]
  std::vector<float> b2;                          // [hidden]
};

// The weights. Matrices are views into the source, which must outlive the
// tower (VisionTower copies those it repacks); vectors and the small tables
// are f32 copies.
struct VisionTowerWeights {
  TensorView patch;                   // [hidden, 3 * p * p] (the conv's [hidden, 3, p, p] flattened)
  std::vector<float> patch_b;         // [hidden]
  std::vector<float> pos;             // [n_patches, hidden]
  std::vector<VisionLayerWeights> layers;
  std::vector<float> post_w, post_b;  // [hidden]
  std::vector<float> soft_norm;       // [hidden], 1 + weight (Gemma's RMSNorm rule, folded at load)
  std::vector<float> proj;            // [text_hidden, hidden]: mm_input_projection_weight transposed
};

// The tensor name prefix transformers saves a Gemma 3 checkpoint under
// ("" or "model."): the one whose patch embedding the source holds.
std::string gemma3_vision_prefix(const TensorSource& src);
// Binds every tensor by the HF names (vision_tower.vision_model.*,
// multi_modal_projector.*), checking presence and shape: one og::Error naming
// the source and the tensor for each problem.
VisionTowerWeights bind_gemma3_vision(const VisionTowerConfig& c, const TensorSource& src);

// llama.cpp's mmproj GGUF of a Gemma 3 tower: clip.projector_type "gemma3",
// the clip.vision.* sizes (projection_dim is the text hidden size; the
// pooling side is clip.vision.projector.scale_factor, 4 when absent), and the
// v.* / mm.* tensors (mm.soft_emb_norm.weight already holds 1 + weight;
// ffn_up / ffn_down are told apart by shape, as older files swapped them).
VisionTowerConfig gemma3_mmproj_config(const GgufFile& f);
VisionTowerWeights bind_gemma3_mmproj(const VisionTowerConfig& c, const TensorSource& src);

// Seconds spent in each phase of encode() (offgraph bench, bench/vision_bench):
// patch_embed the patch conv and positions; attention the LayerNorm, q/k/v and
// output projections (attn_proj) plus the scores/softmax/weighted sums
// (attn_core); mlp its LayerNorm, fc1, GELU and fc2; project the post-norm,
// pooling, soft norm and projection. Summed over calls when passed again.
struct VisionTowerTimes {
  double patch_embed = 0, attn_proj = 0, attn_core = 0, mlp = 0, project = 0;
  double total() const { return patch_embed + attn_proj + attn_core + mlp + project; }
};

class VisionTower {
 public:
  VisionTower(VisionTowerConfig c, VisionTowerWeights w);
  const VisionTowerConfig& config() const { return c_; }
  // pixels: planar [3, image_size, image_size]; returns [mm_tokens_per_image,
  // text_hidden] row-major. og::Error when pixels has another size.
  // times: when not null, each phase's seconds are added to it.
  std::vector<float> encode(std::span<const float> pixels, VisionTowerTimes* times = nullptr) const;
  // The encoder alone: [n_patches, hidden] after the post-LayerNorm.
  std::vector<float> encode_patches(std::span<const float> pixels, VisionTowerTimes* times = nullptr) const;
  // The projector alone on encoder output [n_patches, hidden].
  std::vector<float> project(std::span<const float> patches) const;

 private:
  struct Scratch;      // the activations of one encode (vision_tower.cpp)
  struct ScratchSlot;  // the scratch kept between encodes, behind a mutex
  void layer(const VisionLayerWeights& l, Scratch& s, VisionTowerTimes* times) const;
  VisionTowerConfig c_;
  VisionTowerWeights w_;
  // Allocated by the first encode and reused (no allocation per layer or per
  // image: for Gemma 3's 4096 patches ~220 MB, whose first touch alone took
  // about a second on the 2-core VM); encodes of one tower take turns on it.
  std::shared_ptr<ScratchSlot> scratch_;
  // The matrices whose dtype the matmul kernels want in another layout
  // (kernels::matmul_layout: Q8_0 -> Q8_0_R on x86, ...), copied and
  // repacked at construction as the text model's weights are; w_'s views
  // point here for those, into the source for the others.
  std::shared_ptr<HugePageBuffer> repacked_;
};

}  // namespace og
