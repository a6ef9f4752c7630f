// Gemma 4 vision models for tests (og-synth --family gemma4 --vision --format
// gguf --mmproj-out P.gguf; docs/tools.md): the gemma4 text model, its
// tokenizer given Gemma 4's image tokens (<|image>, <|image|>, <image|>) and a
// chat template that writes <|image|> for an image part as Gemma 4's own does,
// and a tiny random Gemma 4 vision encoder and embedder written as llama.cpp's
// gemma4v mmproj by model/mmproj_gguf_gemma4.h from transformers' tensor names.
// The HF form (--format hf) holds the same tensors in a
// Gemma4ForConditionalGeneration directory with a full vision_config and the
// image processor's settings (the text-only directory keeps a stand-in).
#include <random>

#include "base/error.h"
#include "model/mmproj_gguf_gemma4.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

// Gemma 4's prompt format for the synthetic models: bos, roles user/model in
// <|turn> ... <turn|>, a message's content a string or a list of parts where
// an image part is <|image|> (the processor expands it to <|image> + one
// <|image|> per soft token + <image|>, no newlines) and a text part its
// trimmed text, as google/gemma-4-31B-it's template renders them.
constexpr const char* kGemma4VisionTemplate =
    "{{- bos_token -}}{%- for message in messages -%}{%- set role = 'model' if message['role'] == 'assistant' "
    "else message['role'] -%}{{- '<|turn>' + role + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] | trim -}}"
    "{%- else -%}{%- for p in message['content'] -%}"
    "{%- if p['type'] == 'text' -%}{{- p['text'] | trim -}}"
    "{%- elif p['type'] == 'image' -%}{{- '<|image|>' -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<turn|>\\n' -}}{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|turn>model\\n' -}}{%- endif -%}";

constexpr const char* kGemma4ImageTokens[] = {"<|image>", "<|image|>", "<image|>"};

constexpr int64_t kMaxSoftTokens = 280;  // the processor's default budget, what an mmproj assumes

}  // namespace

// The tower's HF tensors (Gemma4ForConditionalGeneration's "model." names),
// generated from the spec's seed, held as f32.
std::shared_ptr<RandomTensors> gemma4_hf_vision_tensors(const SynthSpec& s) {
  validate_gemma4_vision(s);
  const Gemma4VisionConfig c = gemma4_synth_vision_config(s);
  auto t = std::make_shared<RandomTensors>("synthetic gemma4 vision tower");
  std::mt19937 rng(static_cast<uint32_t>(s.seed * 7919 + 4));
  const int64_t d = c.hidden, f = c.intermediate, p = c.patch_size, dh = c.head_dim;
  const std::string vt = "model.vision_tower.";
  t->add(rng, vt + "patch_embedder.input_proj.weight", {d, 3 * p * p}, 0.2f, 0);
  t->add(rng, vt + "patch_embedder.position_embedding_table", {2, c.position_table, d}, 0.5f, 0);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string lp = vt + "encoder.layers." + std::to_string(l) + ".";
    for (const char* ln : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                           "post_feedforward_layernorm"})
      t->add(rng, lp + ln + ".weight", {d}, 0.5f, 1);
    t->add(rng, lp + "self_attn.q_norm.weight", {dh}, 0.5f, 1);
    t->add(rng, lp + "self_attn.k_norm.weight", {dh}, 0.5f, 1);
    t->add(rng, lp + "self_attn.q_proj.linear.weight", {c.n_heads * dh, d}, 0.3f, 0);
    t->add(rng, lp + "self_attn.k_proj.linear.weight", {c.n_kv_heads * dh, d}, 0.3f, 0);
    t->add(rng, lp + "self_attn.v_proj.linear.weight", {c.n_kv_heads * dh, d}, 0.3f, 0);
    t->add(rng, lp + "self_attn.o_proj.linear.weight", {d, c.n_heads * dh}, 0.3f, 0);
    t->add(rng, lp + "mlp.gate_proj.linear.weight", {f, d}, 0.3f, 0);
    t->add(rng, lp + "mlp.up_proj.linear.weight", {f, d}, 0.3f, 0);
    t->add(rng, lp + "mlp.down_proj.linear.weight", {d, f}, 0.3f, 0);
  }
  t->add(rng, "model.embed_vision.embedding_projection.weight", {c.text_hidden, d}, 0.3f, 0);
  return t;
}

nlohmann::ordered_json gemma4_vision_hf_config(const SynthSpec& s) {
  const Gemma4VisionConfig c = gemma4_synth_vision_config(s);
  return {{"model_type", "gemma4_vision"},
          {"hidden_size", c.hidden},
          {"intermediate_size", c.intermediate},
          {"num_hidden_layers", c.n_layers},
          {"num_attention_heads", c.n_heads},
          {"num_key_value_heads", c.n_kv_heads},
          {"head_dim", c.head_dim},
          {"patch_size", c.patch_size},
          {"pooling_kernel_size", c.pooling},
          {"position_embedding_size", c.position_table},
          {"rms_norm_eps", c.rms_norm_eps},
          {"rope_parameters", {{"rope_theta", c.rope_theta}}},
          {"hidden_activation", "gelu_pytorch_tanh"},
          {"standardize", c.standardize},
          {"use_clipped_linears", c.clipped_linears}};
}

void write_gemma4_preprocessor_config(const SynthSpec& s, const std::string& dir) {
  const Gemma4VisionConfig c = gemma4_synth_vision_config(s);
  // Gemma4ImageProcessor: rescaled to [0, 1], not normalized (the model maps x to 2x - 1).
  const nlohmann::ordered_json p = {{"image_processor_type", "Gemma4ImageProcessor"},
                                    {"processor_class", "Gemma4Processor"},
                                    {"patch_size", c.patch_size},
                                    {"pooling_kernel_size", c.pooling},
                                    {"max_soft_tokens", kMaxSoftTokens},
                                    {"resample", 3},
                                    {"do_rescale", true},
                                    {"rescale_factor", 1.0 / 255.0},
                                    {"do_normalize", false},
                                    {"image_mean", {0.0, 0.0, 0.0}},
                                    {"image_std", {1.0, 1.0, 1.0}}};
  write_text_file(join_path(dir, "preprocessor_config.json"), p.dump(2) + "\n");
}

Gemma4VisionConfig gemma4_synth_vision_config(const SynthSpec& s) {
  Gemma4VisionConfig c;
  c.hidden = s.vision_hidden;
  c.intermediate = s.vision_d_ff;
  c.n_layers = s.vision_layers;
  c.n_heads = s.vision_heads;
  c.n_kv_heads = s.vision_heads / 2 > 0 ? s.vision_heads / 2 : 1;  // grouped, as the real towers may be
  c.head_dim = s.vision_hidden / s.vision_heads;
  // 4-pixel patches keep the input small: an mmproj states no token budget,
  // so every image is scaled to the processor's 280 soft tokens (2520 patches,
  // about 200 x 200 pixels here).
  c.patch_size = 4;
  c.pooling = 3;
  c.position_table = 2560;  // every patch row or column of a 2520-patch image
  c.text_hidden = s.d_model;
  return c;
}

void validate_gemma4_vision(const SynthSpec& s) {
  OG_CHECK(s.tokenizer == "gemma4", "synthetic model: gemma4 --vision needs the gemma4 tokenizer (it gains Gemma 4's "
           "image tokens), not ", s.tokenizer);
  OG_CHECK(s.vision_heads > 0 && s.vision_hidden % s.vision_heads == 0,
           "synthetic model: the vision width must split into its heads");
  gemma4_synth_vision_config(s).check();
}

std::string gemma4_vision_chat_template() { return kGemma4VisionTemplate; }

std::vector<std::string> gemma4_vision_tokens() {
  return std::vector<std::string>(std::begin(kGemma4ImageTokens), std::end(kGemma4ImageTokens));
}

void write_gemma4_mmproj(const SynthSpec& s, const std::string& path) {
  validate_gemma4_vision(s);
  const std::shared_ptr<RandomTensors> src = gemma4_hf_vision_tensors(s);
  MmprojWriteOptions o;
  o.matrices = s.weight_dtype == DType::F16 || s.weight_dtype == DType::BF16 ? s.weight_dtype : DType::F32;
  // Gemma 4's processor rescales to [0, 1] and does not normalize.
  o.image_mean = {0.0f, 0.0f, 0.0f};
  o.image_std = {1.0f, 1.0f, 1.0f};
  o.name = "synthetic-gemma4-mmproj";
  GgufWriter w;
  add_gemma4_mmproj(gemma4_synth_vision_config(s), *src, o, w);
  w.write(path);
}

}  // namespace og::synth
