// The tiny HF Gemma 4 and LLaVA towers of vision_towers_fixture.h written as
// llama.cpp's mmproj GGUF files, the way its converter renames and reshapes
// them (clip.projector_type gemma4v / mlp; docs/vision.md names the keys).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "format/gguf.h"
#include "model/model_test_util.h"
#include "model/vision_gemma4.h"
#include "model/vision_llava.h"

namespace og::test {

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline std::vector<float> values_of(const TensorInfo& t) {
  const float* f = reinterpret_cast<const float*>(t.data);
  return std::vector<float>(f, f + t.nbytes / sizeof(float));
}

inline void replace_once(std::string& s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
}

// Gemma 4: model.vision_tower.encoder.layers.N.* -> v.blk.N.*, ".linear" dropped,
// input_proj reshaped to a conv [hidden, 3, p, p] (its (row, column, channel)
// values permuted to (channel, row, column)), scalars as [1].
// The converter names the projector under clip.vision.projector_type (its
// Gemma 4 files may hold an audio tower too), not clip.projector_type.
inline std::vector<uint8_t> gemma4_mmproj_of(const MemorySource& hf, const Gemma4VisionConfig& c,
                                             const std::string& type = "gemma4v",
                                             const std::string& type_key = "clip.vision.projector_type") {
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("clip"));
  w.set("clip.has_vision_encoder", GgufValue::make_bool(true));
  w.set(type_key, GgufValue::make_string(type));
  w.set("clip.vision.image_size", GgufValue::make_u32(224));
  w.set("clip.vision.patch_size", GgufValue::make_u32(uint32_t(c.patch_size)));
  w.set("clip.vision.embedding_length", GgufValue::make_u32(uint32_t(c.hidden)));
  w.set("clip.vision.feed_forward_length", GgufValue::make_u32(uint32_t(c.intermediate)));
  w.set("clip.vision.block_count", GgufValue::make_u32(uint32_t(c.n_layers)));
  w.set("clip.vision.attention.head_count", GgufValue::make_u32(uint32_t(c.n_heads)));
  w.set("clip.vision.projection_dim", GgufValue::make_u32(uint32_t(c.text_hidden)));
  w.set("clip.vision.attention.layer_norm_epsilon", GgufValue::make_f32(c.rms_norm_eps));
  w.set("clip.vision.projector.scale_factor", GgufValue::make_u32(uint32_t(c.pooling)));
  static const std::pair<const char*, const char*> kMap[] = {
      {"model.vision_tower.patch_embedder.input_proj.weight", "v.patch_embd.weight"},
      {"model.vision_tower.patch_embedder.position_embedding_table", "v.position_embd.weight"},
      {"model.vision_tower.std_", "v.std_"},
      {"model.embed_vision.embedding_projection", "mm.input_projection"},
      {"model.vision_tower.encoder.layers.", "v.blk."},
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
      {".linear.weight", ".weight"}};
  const int64_t p = c.patch_size, d = c.hidden;
  for (const TensorInfo& t : hf.tensors()) {
    std::string name = t.name;
    for (const auto& m : kMap) replace_once(name, m.first, m.second);
    std::vector<float> v = values_of(t);
    std::vector<int64_t> shape = t.shape;
    if (name == "v.patch_embd.weight") {
      std::vector<float> conv(v.size());
      for (int64_t o = 0; o < d; ++o)
        for (int64_t y = 0; y < p; ++y)
          for (int64_t x = 0; x < p; ++x)
            for (int64_t ch = 0; ch < 3; ++ch)
              conv[((o * 3 + ch) * p + y) * p + x] = v[o * 3 * p * p + (y * p + x) * 3 + ch];
      v = conv;
      shape = {d, 3, p, p};
    }
    if (shape.empty()) shape = {1};
    w.add_tensor(name, DType::F32, shape, f32_bytes(v));
  }
  return w.serialize();
}

// LLaVA: the tower cut after c.feature_layers layers without its
// post-LayerNorm (as the converters store a penultimate-layer tower),
// fc1 as ffn_up (or, legacy_ffn, as ffn_down), the projector as mm.0 / mm.2.
inline std::vector<uint8_t> llava_mmproj_of(const MemorySource& hf, const ClipTowerConfig& c, bool legacy_ffn,
                                            const std::string& type = "mlp") {
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("clip"));
  w.set("clip.projector_type", GgufValue::make_string(type));
  w.set("clip.has_vision_encoder", GgufValue::make_bool(true));
  w.set("clip.use_gelu", GgufValue::make_bool(!c.quick_gelu));
  w.set("clip.vision.image_size", GgufValue::make_u32(uint32_t(c.image_size)));
  w.set("clip.vision.patch_size", GgufValue::make_u32(uint32_t(c.patch_size)));
  w.set("clip.vision.embedding_length", GgufValue::make_u32(uint32_t(c.hidden)));
  w.set("clip.vision.feed_forward_length", GgufValue::make_u32(uint32_t(c.intermediate)));
  w.set("clip.vision.block_count", GgufValue::make_u32(uint32_t(c.feature_layers)));
  w.set("clip.vision.attention.head_count", GgufValue::make_u32(uint32_t(c.n_heads)));
  w.set("clip.vision.projection_dim", GgufValue::make_u32(24));
  w.set("clip.vision.attention.layer_norm_epsilon", GgufValue::make_f32(c.layer_norm_eps));
  static const std::pair<const char*, const char*> kMap[] = {
      {"vision_tower.vision_model.embeddings.class_embedding", "v.class_embd"},
      {"vision_tower.vision_model.embeddings.patch_embedding.", "v.patch_embd."},
      {"vision_tower.vision_model.embeddings.position_embedding.", "v.position_embd."},
      {"vision_tower.vision_model.pre_layrnorm.", "v.pre_ln."},
      {"multi_modal_projector.linear_1.", "mm.0."},
      {"multi_modal_projector.linear_2.", "mm.2."},
      {"vision_tower.vision_model.encoder.layers.", "v.blk."},
      {".layer_norm1.", ".ln1."},
      {".layer_norm2.", ".ln2."},
      {".self_attn.q_proj.", ".attn_q."},
      {".self_attn.k_proj.", ".attn_k."},
      {".self_attn.v_proj.", ".attn_v."},
      {".self_attn.out_proj.", ".attn_out."}};
  for (const TensorInfo& t : hf.tensors()) {
    if (t.name.find("post_layernorm") != std::string::npos) continue;
    std::string name = t.name;
    for (const auto& m : kMap) replace_once(name, m.first, m.second);
    replace_once(name, ".mlp.fc1.", legacy_ffn ? ".ffn_down." : ".ffn_up.");
    replace_once(name, ".mlp.fc2.", legacy_ffn ? ".ffn_up." : ".ffn_down.");
    if (name.rfind("v.blk.", 0) == 0 && std::stoll(name.substr(6)) >= c.feature_layers) continue;
    w.add_tensor(name, DType::F32, t.shape, f32_bytes(values_of(t)));
  }
  return w.serialize();
}

}  // namespace og::test
