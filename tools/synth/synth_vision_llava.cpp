// LLaVA-style vision models for tests (og-synth --family llama --vision
// --format gguf --mmproj-out P.gguf; docs/tools.md): the tiny llama text
// model, the stories vocabulary given LLaVA's <image> token and a LLaVA-1.5
// style template ("USER: <image>\n... ASSISTANT:"), and a tiny random CLIP
// tower with the two-layer MLP projector written directly as llama.cpp's
// "mlp" mmproj (the names and keys its converter writes for LLaVA 1.5, the
// tower already cut at its feature layer, no post-LayerNorm).
#include <random>

#include "base/error.h"
#include "model/tensor_codec.h"
#include "model/vision_llava.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

constexpr const char* kLlavaVisionTemplate =
    "{{- bos_token -}}{%- for m in messages -%}"
    "{{- ('USER: ' if m['role'] == 'user' else ('ASSISTANT: ' if m['role'] == 'assistant' else '')) -}}"
    "{%- if m['content'] is string -%}{{- m['content'] -}}"
    "{%- else -%}{%- for p in m['content'] -%}"
    "{%- if p['type'] == 'image' -%}{{- '<image>\\n' -}}"
    "{%- elif p['type'] == 'text' -%}{{- p['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- eos_token if m['role'] == 'assistant' else ' ' -}}"
    "{%- endfor -%}{%- if add_generation_prompt -%}{{- 'ASSISTANT:' -}}{%- endif -%}";

// CLIP's normalization (the LLaVA 1.5 processor's).
constexpr float kClipMean[] = {0.48145466f, 0.4578275f, 0.40821073f};
constexpr float kClipStd[] = {0.26862954f, 0.26130258f, 0.27577711f};

constexpr int64_t kImageSize = 28, kPatch = 7;  // 4 x 4 patches: 16 tokens per image

int64_t projector_mid(const SynthSpec& s) { return 2 * s.vision_hidden; }

}  // namespace

ClipTowerConfig llava_synth_vision_config(const SynthSpec& s) {
  ClipTowerConfig c;
  c.image_size = kImageSize;
  c.patch_size = kPatch;
  c.hidden = s.vision_hidden;
  c.intermediate = s.vision_d_ff;
  c.n_layers = s.vision_layers;
  c.n_heads = s.vision_heads;
  c.layer_norm_eps = 1e-5f;
  c.quick_gelu = true;  // CLIP ViT-L/14's quick_gelu
  c.feature_layers = s.vision_layers;
  return c;
}

void validate_llava_vision(const SynthSpec& s) {
  OG_CHECK(s.tokenizer == "stories", "synthetic model: llama --vision needs the stories tokenizer (it gains LLaVA's "
           "<image> token), not ", s.tokenizer);
  OG_CHECK(s.vision_heads > 0 && s.vision_hidden % s.vision_heads == 0,
           "synthetic model: the vision width must split into its heads");
  llava_synth_vision_config(s).check();
}

std::string llava_vision_chat_template() { return kLlavaVisionTemplate; }

void write_llava_mmproj(const SynthSpec& s, const std::string& path) {
  validate_llava_vision(s);
  const ClipTowerConfig c = llava_synth_vision_config(s);
  const DType dt = s.weight_dtype == DType::F16 ? DType::F16 : DType::F32;  // matrices; the rest f32
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("clip"));
  w.set("general.name", GgufValue::make_string("synthetic-llava-mmproj"));
  w.set("clip.projector_type", GgufValue::make_string("mlp"));
  w.set("clip.has_vision_encoder", GgufValue::make_bool(true));
  w.set("clip.use_gelu", GgufValue::make_bool(!c.quick_gelu));
  w.set("clip.vision.image_size", GgufValue::make_u32(static_cast<uint32_t>(c.image_size)));
  w.set("clip.vision.patch_size", GgufValue::make_u32(static_cast<uint32_t>(c.patch_size)));
  w.set("clip.vision.embedding_length", GgufValue::make_u32(static_cast<uint32_t>(c.hidden)));
  w.set("clip.vision.feed_forward_length", GgufValue::make_u32(static_cast<uint32_t>(c.intermediate)));
  w.set("clip.vision.block_count", GgufValue::make_u32(static_cast<uint32_t>(c.feature_layers)));
  w.set("clip.vision.attention.head_count", GgufValue::make_u32(static_cast<uint32_t>(c.n_heads)));
  w.set("clip.vision.projection_dim", GgufValue::make_u32(static_cast<uint32_t>(s.d_model)));
  w.set("clip.vision.attention.layer_norm_epsilon", GgufValue::make_f32(c.layer_norm_eps));
  std::vector<GgufValue> mean, stdv;
  for (float x : kClipMean) mean.push_back(GgufValue::make_f32(x));
  for (float x : kClipStd) stdv.push_back(GgufValue::make_f32(x));
  w.set("clip.vision.image_mean", GgufValue::make_array(GgufType::F32, mean));
  w.set("clip.vision.image_std", GgufValue::make_array(GgufType::F32, stdv));

  std::mt19937 rng(static_cast<uint32_t>(s.seed * 7919 + 15));
  const int64_t d = c.hidden, f = c.intermediate, p = c.patch_size, mid = projector_mid(s);
  // Uniform values in center +- half; `matrix` ones in the spec's matrix type.
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float half, float center, bool matrix) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    std::uniform_real_distribution<float> u(center - half, center + half);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(rng);
    const DType t = matrix ? dt : DType::F32;
    const int64_t cols = shape.back();
    w.add_tensor(name, t, shape, encode_rows(t, v.data(), n / cols, cols));
  };
  add("v.class_embd", {d}, 0.5f, 0, false);
  add("v.patch_embd.weight", {d, 3, p, p}, 0.1f, 0, false);
  add("v.position_embd.weight", {c.n_patches() + 1, d}, 0.5f, 0, false);
  add("v.pre_ln.weight", {d}, 0.2f, 1, false);
  add("v.pre_ln.bias", {d}, 0.1f, 0, false);
  for (int64_t l = 0; l < c.feature_layers; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    for (const char* ln : {"ln1", "ln2"}) {
      add(b + ln + ".weight", {d}, 0.2f, 1, false);
      add(b + ln + ".bias", {d}, 0.1f, 0, false);
    }
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      add(b + m + ".weight", {d, d}, 0.3f, 0, true);
      add(b + m + ".bias", {d}, 0.1f, 0, false);
    }
    add(b + "ffn_up.weight", {f, d}, 0.3f, 0, true);  // HF fc1
    add(b + "ffn_up.bias", {f}, 0.1f, 0, false);
    add(b + "ffn_down.weight", {d, f}, 0.3f, 0, true);  // HF fc2
    add(b + "ffn_down.bias", {d}, 0.1f, 0, false);
  }
  add("mm.0.weight", {mid, d}, 0.3f, 0, true);
  add("mm.0.bias", {mid}, 0.1f, 0, false);
  add("mm.2.weight", {s.d_model, mid}, 0.3f, 0, true);
  add("mm.2.bias", {s.d_model}, 0.1f, 0, false);
  w.write(path);
}

}  // namespace og::synth
