// The LLaVA-style tower: a CLIP ViT (class token, learned positions, a
// pre-LayerNorm, pre-norm layers with biased q/k/v/out and a quick-GELU or
// GELU MLP) read at a chosen layer, the class token dropped or kept, and a
// two-layer MLP projector (linear, GELU, linear) into the text width. As
// transformers' LlavaForConditionalGeneration with vision_feature_layer and
// vision_feature_select_strategy, and llama.cpp's mmproj with
// clip.projector_type "mlp" (docs/vision.md "LLaVA's tower").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/tensor_source.h"
#include "tensor/tensor_view.h"

namespace og {

struct ClipTowerConfig {
  int64_t image_size = 0;
  int64_t patch_size = 0;
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t n_layers = 0;        // layers the checkpoint holds
  int64_t n_heads = 0;
  float layer_norm_eps = 1e-5f;
  bool quick_gelu = true;      // hidden_act "quick_gelu" (x * sigmoid(1.702 x)); false: exact GELU
  int64_t feature_layers = 0;  // layers run before the features are read (LLaVA 1.5: n_layers - 1)
  bool post_norm = false;      // the post-LayerNorm applies to the features (mmproj files that hold it)
  bool keep_class = false;     // vision_feature_select_strategy "full" (default: "default", dropped)
  bool projector_gelu_erf = true;  // projector_hidden_act "gelu"

  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t n_patches() const { return patches_per_side() * patches_per_side(); }
  int64_t n_tokens() const { return n_patches() + (keep_class ? 1 : 0); }
  int64_t head_dim() const { return hidden / n_heads; }
  void check() const;  // og::Error naming the field
};

// From an HF LlavaForConditionalGeneration config.json: vision_config's sizes
// (hidden_act and layer_norm_eps default to CLIP's quick_gelu and 1e-5),
// vision_feature_layer (an integer, -2 by default: a negative one counts
// from the end of the hidden states), vision_feature_select_strategy.
ClipTowerConfig llava_vision_config(const nlohmann::json& config, const std::string& file);
// From llama.cpp's mmproj (clip.projector_type "mlp"): clip.vision.* sizes,
// clip.use_gelu (GELU when true, else quick GELU), every layer the file holds
// run and v.post_ln applied where present (the converter already cut the
// tower at the feature layer).
ClipTowerConfig llava_mmproj_config(const GgufFile& f);

struct ClipLayerWeights {
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
  TensorView wq, wk, wv, wo, fc1, fc2;
  std::vector<float> bq, bk, bv, bo, b1, b2;
};

struct ClipTowerWeights {
  TensorView patch;                 // [hidden, 3 * p * p] (the conv's weight flattened)
  std::vector<float> patch_b;       // empty: CLIP's conv has no bias
  std::vector<float> class_embd;    // [hidden]
  std::vector<float> pos;           // [n_patches + 1, hidden]
  std::vector<float> pre_w, pre_b;  // pre_layrnorm
  std::vector<ClipLayerWeights> layers;  // the first feature_layers
  std::vector<float> post_w, post_b;
  TensorView mm1, mm2;              // [proj_hidden, hidden], [text_hidden, proj_hidden]
  std::vector<float> mm1_b, mm2_b;  // empty without projector biases
  int64_t text_hidden = 0;          // from mm2's shape
};

// The HF prefix of the vision model ("vision_tower.vision_model." or the
// same under "model.") and of the projector.
ClipTowerWeights bind_llava_vision(const ClipTowerConfig& c, const TensorSource& src);
ClipTowerWeights bind_llava_mmproj(const ClipTowerConfig& c, const TensorSource& src);

class LlavaVisionTower {
 public:
  LlavaVisionTower(ClipTowerConfig c, ClipTowerWeights w);
  const ClipTowerConfig& config() const { return c_; }
  int64_t text_hidden() const { return w_.text_hidden; }
  // pixels: planar [3, image_size, image_size] (CLIP's normalization).
  // Returns [n_tokens(), text_hidden] rows.
  std::vector<float> encode(std::span<const float> pixels) const;
  // The features before the projector: [n_tokens(), hidden].
  std::vector<float> features(std::span<const float> pixels) const;

 private:
  void layer(const ClipLayerWeights& l, std::vector<float>& x) const;
  ClipTowerConfig c_;
  ClipTowerWeights w_;
};

}  // namespace og
