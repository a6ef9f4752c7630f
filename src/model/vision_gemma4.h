// Gemma 4's vision encoder and its multimodal embedder, from preprocessed
// pixels of a variable-size image to the rows a Session takes as an image:
// [soft tokens, text hidden]. A ViT with a linear patch embedding, learned
// x / y position tables, 2-D RoPE, Gemma-style RMSNorm sandwich layers with
// q/k/v norms and a gated GELU MLP, k x k average pooling scaled by
// sqrt(hidden), optional standardization, then a weightless RMSNorm and the
// projection into the text width (docs/vision.md "Gemma 4's tower"). Loaded
// from transformers' Gemma4ForConditionalGeneration names or llama.cpp's
// mmproj GGUF (clip.projector_type "gemma4v").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/tensor_source.h"
#include "model/vision_parts.h"
#include "tensor/tensor_view.h"

namespace og {

struct Gemma4VisionConfig {
  int64_t hidden = 0;        // vision_config.hidden_size
  int64_t intermediate = 0;  // vision_config.intermediate_size
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t patch_size = 16;
  int64_t pooling = 3;                 // pooling_kernel_size: k x k patches per soft token
  int64_t position_table = 10240;      // position_embedding_size: rows of each of the x and y tables
  float rms_norm_eps = 1e-6f;          // every RMSNorm of the tower and of the embedder
  float rope_theta = 100.0f;           // rope_parameters.rope_theta
  bool standardize = false;            // (x - std_bias) * std_scale after pooling
  bool clipped_linears = false;        // use_clipped_linears: clamp bounds from the checkpoint
  int64_t text_hidden = 0;             // text_config.hidden_size
  int64_t max_soft_tokens = 280;       // the processor's budget per image (70, 140, 280, 560 or 1120)

  int64_t max_patches() const { return max_soft_tokens * pooling * pooling; }
  // og::Error naming the field unless every size is positive and consistent
  // (heads divide into kv heads, head_dim even per spatial half).
  void check() const;
};

// From an HF Gemma4ForConditionalGeneration config.json (`file` in messages).
Gemma4VisionConfig gemma4_vision_config(const nlohmann::json& config, const std::string& file);
// From llama.cpp's mmproj (clip.projector_type or clip.vision.projector_type
// "gemma4v"); head width and kv heads come from the q / k weights' shapes,
// the position table's rows from its shape.
Gemma4VisionConfig gemma4_mmproj_config(const GgufFile& f);

struct Gemma4VisionLayer {
  std::vector<float> ln_in, ln_post_attn, ln_pre_ff, ln_post_ff;  // [hidden]
  std::vector<float> q_norm, k_norm;                              // [head_dim]
  TensorView wq, wk, wv, wo, gate, up, down;
  vision_parts::Clamp cq, ck, cv, co, cgate, cup, cdown;
};

struct Gemma4VisionWeights {
  TensorView patch;               // [hidden, 3 * p * p]
  bool patch_channel_first = false;  // patch values in (c, y, x) order (mmproj's conv) vs HF's (y, x, c)
  std::vector<float> pos;         // [2, position_table, hidden]: x table, then y table
  std::vector<Gemma4VisionLayer> layers;
  std::vector<float> std_bias, std_scale;  // [hidden] when standardize
  TensorView proj;                // [text_hidden, hidden]
  vision_parts::Clamp cproj;
};

// The HF checkpoint's prefix ("model." or ""): where the patch embedder is.
std::string gemma4_vision_prefix(const TensorSource& src);
Gemma4VisionWeights bind_gemma4_vision(const Gemma4VisionConfig& c, const TensorSource& src);
Gemma4VisionWeights bind_gemma4_mmproj(const Gemma4VisionConfig& c, const TensorSource& src);

// The size Gemma 4's image processor resizes a height x width image to: the
// largest keeping the aspect ratio within max_patches() patches whose sides
// are multiples of pooling * patch_size (transformers'
// get_aspect_ratio_preserving_size). Returns {height, width}.
std::pair<int64_t, int64_t> gemma4_image_size(const Gemma4VisionConfig& c, int64_t height, int64_t width);

class Gemma4VisionTower {
 public:
  Gemma4VisionTower(Gemma4VisionConfig c, Gemma4VisionWeights w);
  const Gemma4VisionConfig& config() const { return c_; }
  // Soft tokens of a height x width input: (height / p / k) * (width / p / k).
  int64_t tokens_for(int64_t height, int64_t width) const;
  // pixels: planar [3, height, width] normalized to [-1, 1] (mean = std =
  // 0.5, which equals transformers' 2 * (x - 0.5) on its [0, 1] pixels);
  // both sides multiples of patch_size * pooling, at most max_patches()
  // patches. Returns [tokens_for(height, width), text_hidden] row-major.
  std::vector<float> encode(std::span<const float> pixels, int64_t height, int64_t width) const;
  // The encoder alone: [patches, hidden] after the last layer (row-major patches).
  std::vector<float> encode_patches(std::span<const float> pixels, int64_t height, int64_t width) const;

 private:
  void layer(const Gemma4VisionLayer& l, std::vector<float>& x, int64_t gh, int64_t gw) const;
  Gemma4VisionConfig c_;
  Gemma4VisionWeights w_;
  std::vector<float> inv_freq_;  // [head_dim / 4]: one spatial half's rotary frequencies
};

}  // namespace og
