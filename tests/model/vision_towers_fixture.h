// Tiny random Gemma 4 and LLaVA (CLIP + MLP) vision towers in memory under
// transformers' tensor names, for the towers' tests (vision_gemma4_test.cpp,
// vision_llava_test.cpp, vision_encoder_test.cpp).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model/model_test_util.h"
#include "model/vision_gemma4.h"
#include "model/vision_llava.h"
#include "vision_tower_fixture.h"

namespace og::test {

// 4-pixel patches pooled 2x2; 4 heads of 8 over 2 kv heads; a 16-row
// position table; large eps so that an eps taken from elsewhere shows.
inline Gemma4VisionConfig gemma4_tiny_config() {
  Gemma4VisionConfig c;
  c.hidden = 32;
  c.intermediate = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.patch_size = 4;
  c.pooling = 2;
  c.position_table = 16;
  c.rms_norm_eps = 0.05f;
  c.rope_theta = 100.0f;
  c.standardize = true;
  c.clipped_linears = true;
  c.text_hidden = 24;
  c.max_soft_tokens = 12;  // 48 patches
  return c;
}

inline void add_random(MemorySource& src, std::mt19937& rng, const std::string& name, std::vector<int64_t> shape,
                       float lo, float hi) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  src.add(name, std::move(shape), random_values(rng, n, lo, hi));
}

// Every tensor of Gemma4ForConditionalGeneration's vision part under `top`
// ("model." as transformers saves it). With clamps, each clippable linear
// gets bounds tight enough to cut some values (scalars of shape []).
inline void add_gemma4_tower(MemorySource& src, const Gemma4VisionConfig& c, uint32_t seed,
                             const std::string& top = "model.", bool clamps = true) {
  std::mt19937 rng(seed);
  const int64_t d = c.hidden, f = c.intermediate, p = c.patch_size, dh = c.head_dim;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float lo, float hi) {
    add_random(src, rng, name, std::move(shape), lo, hi);
  };
  const std::string vt = top + "vision_tower.";
  add(vt + "patch_embedder.input_proj.weight", {d, 3 * p * p}, -0.2f, 0.2f);
  add(vt + "patch_embedder.position_embedding_table", {2, c.position_table, d}, -0.5f, 0.5f);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string lp = vt + "encoder.layers." + std::to_string(l) + ".";
    for (const char* ln : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                           "post_feedforward_layernorm"})
      add(lp + ln + ".weight", {d}, 0.5f, 1.5f);
    add(lp + "self_attn.q_norm.weight", {dh}, 0.5f, 1.5f);
    add(lp + "self_attn.k_norm.weight", {dh}, 0.5f, 1.5f);
    struct Lin {
      const char* name;
      int64_t out, in;
    };
    const Lin lins[] = {{"self_attn.q_proj", c.n_heads * dh, d},    {"self_attn.k_proj", c.n_kv_heads * dh, d},
                        {"self_attn.v_proj", c.n_kv_heads * dh, d}, {"self_attn.o_proj", d, c.n_heads * dh},
                        {"mlp.gate_proj", f, d},                    {"mlp.up_proj", f, d},
                        {"mlp.down_proj", d, f}};
    for (const Lin& li : lins) {
      add(lp + li.name + ".linear.weight", {li.out, li.in}, -0.3f, 0.3f);
      if (!clamps) continue;
      src.add(lp + li.name + ".input_min", {}, {-1.5f});
      src.add(lp + li.name + ".input_max", {}, {1.5f});
      src.add(lp + li.name + ".output_min", {}, {-1.0f});
      src.add(lp + li.name + ".output_max", {}, {1.0f});
    }
  }
  if (c.standardize) {
    add(vt + "std_bias", {d}, -0.3f, 0.3f);
    add(vt + "std_scale", {d}, 0.5f, 1.5f);
  }
  add(top + "embed_vision.embedding_projection.weight", {c.text_hidden, d}, -0.3f, 0.3f);
}

// A CLIP ViT of 28x28 pixels in 7-pixel patches (16 patches and the class
// token: 17 rows, a partial block of queries), 3 layers read after the 2nd.
inline ClipTowerConfig clip_tiny_config() {
  ClipTowerConfig c;
  c.image_size = 28;
  c.patch_size = 7;
  c.hidden = 32;
  c.intermediate = 48;
  c.n_layers = 3;
  c.n_heads = 4;
  c.layer_norm_eps = 0.05f;
  c.quick_gelu = true;
  c.feature_layers = 2;
  return c;
}

// Every tensor of LlavaForConditionalGeneration's vision tower and projector
// under `top`: the projector [mid, hidden] then [text_hidden, mid].
inline void add_llava_tower(MemorySource& src, const ClipTowerConfig& c, uint32_t seed, const std::string& top = "",
                            int64_t mid = 40, int64_t text_hidden = 24) {
  std::mt19937 rng(seed);
  const int64_t d = c.hidden, f = c.intermediate, p = c.patch_size;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float lo, float hi) {
    add_random(src, rng, name, std::move(shape), lo, hi);
  };
  const std::string vm = top + "vision_tower.vision_model.";
  add(vm + "embeddings.class_embedding", {d}, -0.5f, 0.5f);
  add(vm + "embeddings.patch_embedding.weight", {d, 3, p, p}, -0.1f, 0.1f);
  add(vm + "embeddings.position_embedding.weight", {c.n_patches() + 1, d}, -0.5f, 0.5f);
  add(vm + "pre_layrnorm.weight", {d}, 0.8f, 1.2f);
  add(vm + "pre_layrnorm.bias", {d}, -0.1f, 0.1f);
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
  add(top + "multi_modal_projector.linear_1.weight", {mid, d}, -0.3f, 0.3f);
  add(top + "multi_modal_projector.linear_1.bias", {mid}, -0.1f, 0.1f);
  add(top + "multi_modal_projector.linear_2.weight", {text_hidden, mid}, -0.3f, 0.3f);
  add(top + "multi_modal_projector.linear_2.bias", {text_hidden}, -0.1f, 0.1f);
}

}  // namespace og::test
