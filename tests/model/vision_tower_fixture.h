// A tiny random Gemma 3 vision tower in memory under transformers' tensor
// names, for the tower's tests and the image-input tests of the runtime.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model/model_test_util.h"
#include "model/vision_tower.h"

namespace og::test {

// A tiny tower: 84x84 pixels in 14x14 patches (a 6x6 grid: 36 patches, more
// than two blocks of queries and a partial one), pooled 2x2 to 9 tokens.
inline VisionTowerConfig tiny_config(int64_t text_hidden = 24) {
  VisionTowerConfig c;
  c.image_size = 84;
  c.patch_size = 14;
  c.hidden = 32;
  c.intermediate = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.layer_norm_eps = 0.05f;  // large, so that an eps taken from elsewhere shows
  c.mm_tokens_per_image = 9;
  c.text_hidden = text_hidden;
  return c;
}

inline std::vector<float> random_values(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// Every tensor of Gemma3ForConditionalGeneration's vision part under `top`.
inline void add_tower(MemorySource& src, const VisionTowerConfig& c, uint32_t seed, const std::string& top = "") {
  std::mt19937 rng(seed);
  const int64_t d = c.hidden, f = c.intermediate, p = c.patch_size;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float lo, float hi) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    src.add(name, shape, random_values(rng, n, lo, hi));
  };
  const std::string vm = top + "vision_tower.vision_model.";
  add(vm + "embeddings.patch_embedding.weight", {d, 3, p, p}, -0.05f, 0.05f);
  add(vm + "embeddings.patch_embedding.bias", {d}, -0.1f, 0.1f);
  add(vm + "embeddings.position_embedding.weight", {c.n_patches(), d}, -0.5f, 0.5f);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string lp = vm + "encoder.layers." + std::to_string(l) + ".";
    for (const char* ln : {"layer_norm1", "layer_norm2"}) {
      add(lp + ln + ".weight", {d}, 0.8f, 1.2f);
      add(lp + ln + ".bias", {d}, -0.1f, 0.1f);
    }
    for (const char* m : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      add(lp + "self_attn." + m + ".weight", {d, d}, -0.3f, 0.3f);
      add(lp + "self_attn." + m + ".bias", {d}, -0.1f, 0.1f);
    }
    add(lp + "mlp.fc1.weight", {f, d}, -0.3f, 0.3f);
    add(lp + "mlp.fc1.bias", {f}, -0.1f, 0.1f);
    add(lp + "mlp.fc2.weight", {d, f}, -0.3f, 0.3f);
    add(lp + "mlp.fc2.bias", {d}, -0.1f, 0.1f);
  }
  add(vm + "post_layernorm.weight", {d}, 0.8f, 1.2f);
  add(vm + "post_layernorm.bias", {d}, -0.1f, 0.1f);
  add(top + "multi_modal_projector.mm_soft_emb_norm.weight", {d}, -0.2f, 0.2f);
  add(top + "multi_modal_projector.mm_input_projection_weight", {d, c.text_hidden}, -0.3f, 0.3f);
}

}  // namespace og::test
