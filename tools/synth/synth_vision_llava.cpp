// LLaVA-style vision models for tests (og-synth --family llama --vision
// --format gguf --mmproj-out P.gguf, or --format hf; docs/tools.md): the tiny
// llama text model, the stories vocabulary given LLaVA's <image> token and a
// LLaVA-1.5-style template ("USER: <image>\n... ASSISTANT:"), and a tiny
// random CLIP tower with the two-layer MLP projector. Its HF tensors are
// generated once (llava_hf_tensors); the HF form stores them as
// LlavaForConditionalGeneration, the GGUF form writes them through
// add_llava_mmproj as llama.cpp's "mlp" mmproj (the tower cut at its feature
// layer, no post-LayerNorm), so both forms hold the same values.
#include <random>

#include "base/error.h"
#include "model/mmproj_gguf_llava.h"
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
const std::array<float, 3> kClipMean{0.48145466f, 0.4578275f, 0.40821073f};
const std::array<float, 3> kClipStd{0.26862954f, 0.26130258f, 0.27577711f};

constexpr int64_t kImageSize = 28, kPatch = 7;  // 4 x 4 patches: 16 tokens per image
constexpr int64_t kImageTokenId = 512;          // <image>, the first token the stories vocabulary gains

int64_t projector_mid(const SynthSpec& s) { return 2 * s.vision_hidden; }

}  // namespace

// The HF tower: one layer past the features (LLaVA 1.5 reads layer -2).
ClipTowerConfig llava_synth_vision_config(const SynthSpec& s) {
  ClipTowerConfig c;
  c.image_size = kImageSize;
  c.patch_size = kPatch;
  c.hidden = s.vision_hidden;
  c.intermediate = s.vision_d_ff;
  c.n_layers = s.vision_layers + 1;
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

std::shared_ptr<RandomTensors> llava_hf_tensors(const SynthSpec& s) {
  validate_llava_vision(s);
  const ClipTowerConfig c = llava_synth_vision_config(s);
  auto t = std::make_shared<RandomTensors>("synthetic llava tower");
  std::mt19937 rng(static_cast<uint32_t>(s.seed * 7919 + 15));
  const int64_t d = c.hidden, f = c.intermediate, p = c.patch_size, mid = projector_mid(s);
  const std::string vm = "model.vision_tower.vision_model.", mm = "model.multi_modal_projector.";
  auto layer = [&](int64_t l) {
    const std::string b = vm + "encoder.layers." + std::to_string(l) + ".";
    for (const char* ln : {"layer_norm1", "layer_norm2"}) {
      t->add(rng, b + ln + ".weight", {d}, 0.2f, 1);
      t->add(rng, b + ln + ".bias", {d}, 0.1f, 0);
    }
    for (const char* m : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      t->add(rng, b + "self_attn." + m + ".weight", {d, d}, 0.3f, 0);
      t->add(rng, b + "self_attn." + m + ".bias", {d}, 0.1f, 0);
    }
    t->add(rng, b + "mlp.fc1.weight", {f, d}, 0.3f, 0);
    t->add(rng, b + "mlp.fc1.bias", {f}, 0.1f, 0);
    t->add(rng, b + "mlp.fc2.weight", {d, f}, 0.3f, 0);
    t->add(rng, b + "mlp.fc2.bias", {d}, 0.1f, 0);
  };
  // Drawn in the order the mmproj holds them (so its values are those of
  // earlier og-synth versions); the layer past the features and the
  // post-LayerNorm, which the mmproj leaves out, last.
  t->add(rng, vm + "embeddings.class_embedding", {d}, 0.5f, 0);
  t->add(rng, vm + "embeddings.patch_embedding.weight", {d, 3, p, p}, 0.1f, 0);
  t->add(rng, vm + "embeddings.position_embedding.weight", {c.n_patches() + 1, d}, 0.5f, 0);
  t->add(rng, vm + "pre_layrnorm.weight", {d}, 0.2f, 1);
  t->add(rng, vm + "pre_layrnorm.bias", {d}, 0.1f, 0);
  for (int64_t l = 0; l < c.feature_layers; ++l) layer(l);
  t->add(rng, mm + "linear_1.weight", {mid, d}, 0.3f, 0);
  t->add(rng, mm + "linear_1.bias", {mid}, 0.1f, 0);
  t->add(rng, mm + "linear_2.weight", {s.d_model, mid}, 0.3f, 0);
  t->add(rng, mm + "linear_2.bias", {s.d_model}, 0.1f, 0);
  for (int64_t l = c.feature_layers; l < c.n_layers; ++l) layer(l);
  t->add(rng, vm + "post_layernorm.weight", {d}, 0.2f, 1);
  t->add(rng, vm + "post_layernorm.bias", {d}, 0.1f, 0);
  return t;
}

void write_llava_mmproj(const SynthSpec& s, const std::string& path) {
  const std::shared_ptr<RandomTensors> hf = llava_hf_tensors(s);
  MmprojWriteOptions o;
  o.matrices = s.weight_dtype == DType::F16 ? DType::F16 : DType::F32;  // the HF form's f32 otherwise
  o.image_mean = kClipMean;
  o.image_std = kClipStd;
  o.name = "synthetic-llava-mmproj";
  GgufWriter w;
  add_llava_mmproj(llava_synth_vision_config(s), *hf, o, w);
  w.write(path);
}

nlohmann::ordered_json llava_hf_config(const SynthSpec& s, const nlohmann::ordered_json& text) {
  const ClipTowerConfig c = llava_synth_vision_config(s);
  nlohmann::ordered_json t = text;
  t.erase("architectures");
  t["model_type"] = "llama";
  nlohmann::ordered_json cfg;
  cfg["architectures"] = {"LlavaForConditionalGeneration"};
  cfg["model_type"] = "llava";
  cfg["image_token_index"] = kImageTokenId;
  cfg["image_seq_length"] = c.n_tokens();
  cfg["projector_hidden_act"] = "gelu";
  cfg["vision_feature_layer"] = -2;
  cfg["vision_feature_select_strategy"] = "default";
  cfg["text_config"] = t;
  cfg["vision_config"] = {{"model_type", "clip_vision_model"},
                          {"hidden_size", c.hidden},
                          {"intermediate_size", c.intermediate},
                          {"num_hidden_layers", c.n_layers},
                          {"num_attention_heads", c.n_heads},
                          {"patch_size", c.patch_size},
                          {"image_size", c.image_size},
                          {"num_channels", 3},
                          {"layer_norm_eps", c.layer_norm_eps},
                          {"hidden_act", "quick_gelu"},
                          {"projection_dim", s.d_model}};
  cfg["tie_word_embeddings"] = text.value("tie_word_embeddings", false);
  cfg["torch_dtype"] = "float32";
  return cfg;
}

// transformers >= 4.52's layout: the decoder under model.language_model., the head at the top.
std::string llava_hf_name(const std::string& text_name) {
  if (text_name.rfind("model.", 0) == 0) return "model.language_model." + text_name.substr(6);
  return text_name;
}

void write_llava_preprocessor_config(const SynthSpec& s, const std::string& dir) {
  (void)s;
  const nlohmann::ordered_json p = {
      {"image_processor_type", "CLIPImageProcessor"},
      {"processor_class", "LlavaProcessor"},
      {"do_resize", true},
      {"size", {{"shortest_edge", kImageSize}}},
      {"resample", 3},
      {"do_center_crop", true},
      {"crop_size", {{"height", kImageSize}, {"width", kImageSize}}},
      {"do_rescale", true},
      {"rescale_factor", 1.0 / 255.0},
      {"do_normalize", true},
      {"image_mean", kClipMean},
      {"image_std", kClipStd},
      {"do_convert_rgb", true},
  };
  write_text_file(join_path(dir, "preprocessor_config.json"), p.dump(2) + "\n");
}

}  // namespace og::synth
