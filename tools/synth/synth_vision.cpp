// Vision models for tests (og-synth --vision; docs/tools.md): a tiny random
// SigLIP tower and Gemma 3's projector beside a gemma3 text model, its
// tokenizer given Gemma 3's image and turn tokens and a Gemma-3-style chat
// template that writes <start_of_image> for each image part. The HF form is a
// Gemma3ForConditionalGeneration directory (text under language_model.model.,
// the tower under vision_tower.vision_model. and multi_modal_projector.,
// preprocessor_config.json); the GGUF form is the text model and, apart,
// llama.cpp's mmproj file of the same tower (model/mmproj_gguf.h).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "base/error.h"
#include "kernels/ops.h"
#include "model/mmproj_gguf.h"
#include "model/tensor_codec.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

// The tokens appended to the stories vocabulary (ids 512...), as control tokens.
constexpr const char* kVisionTokens[] = {"<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>",
                                         "<image_soft_token>"};

// Gemma 3's prompt format, written here for the synthetic models: bos, the
// system message folded into the first user turn, roles user and model, a
// message's content a string or a list of parts where an image part is
// <start_of_image> (the processor expands it) and a text part its text.
constexpr const char* kGemma3VisionTemplate =
    "{{- bos_token -}}"
    "{%- set ns = namespace(prefix='') -%}"
    "{%- set msgs = messages -%}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- if messages[0]['content'] is string -%}{%- set ns.prefix = messages[0]['content'] + '\\n\\n' -%}"
    "{%- else -%}{%- for p in messages[0]['content'] -%}{%- if p['type'] == 'text' -%}"
    "{%- set ns.prefix = ns.prefix + p['text'] -%}{%- endif -%}{%- endfor -%}"
    "{%- set ns.prefix = ns.prefix + '\\n\\n' -%}"
    "{%- endif -%}"
    "{%- set msgs = messages[1:] -%}"
    "{%- endif -%}"
    "{%- for m in msgs -%}"
    "{{- '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\\n' -}}"
    "{%- if loop.first -%}{{- ns.prefix -}}{%- endif -%}"
    "{%- if m['content'] is string -%}{{- m['content'] | trim -}}"
    "{%- else -%}{%- for p in m['content'] -%}"
    "{%- if p['type'] == 'image' or p['type'] == 'image_url' -%}{{- '<start_of_image>' -}}"
    "{%- elif p['type'] == 'text' -%}{{- p['text'] | trim -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<end_of_turn>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}";

constexpr int64_t kStoriesVocab = 512;

// The tokens the stories vocabulary gains for the spec's family: Gemma 3's
// above, or LLaVA's one <image> (id 512) for llama.
std::vector<const char*> added_tokens(const SynthSpec& s) {
  if (s.family == Family::kLlama) return {"<image>"};
  return std::vector<const char*>(std::begin(kVisionTokens), std::end(kVisionTokens));
}

// The tower's HF tensors, generated from the spec's seed, held as f32.
std::shared_ptr<RandomTensors> gemma3_vision_tensors(const SynthSpec& s) {
  auto t = std::make_shared<RandomTensors>("synthetic vision tower");
  const VisionTowerConfig c = vision_tower_config(s);
  std::mt19937 rng(static_cast<uint32_t>(s.seed * 7919 + 48));
  const int64_t d = c.hidden, f = c.intermediate, p = c.patch_size;
  // Matrices over a wider input get smaller values, so that a tower of real
  // width (--vision-shape gemma3-4b) keeps the tiny tower's activation scale
  // instead of overflowing f16 (both factors are 1 for the tiny tower).
  const float wd = std::sqrt(32.0f / static_cast<float>(d)), wf = std::sqrt(64.0f / static_cast<float>(f));
  const std::string vm = "vision_tower.vision_model.";
  t->add(rng, vm + "embeddings.patch_embedding.weight", {d, 3, p, p}, 0.05f, 0);
  t->add(rng, vm + "embeddings.patch_embedding.bias", {d}, 0.1f, 0);
  t->add(rng, vm + "embeddings.position_embedding.weight", {c.n_patches(), d}, 0.5f, 0);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string lp = vm + "encoder.layers." + std::to_string(l) + ".";
    for (const char* ln : {"layer_norm1", "layer_norm2"}) {
      t->add(rng, lp + ln + ".weight", {d}, 0.2f, 1);
      t->add(rng, lp + ln + ".bias", {d}, 0.1f, 0);
    }
    for (const char* m : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      t->add(rng, lp + "self_attn." + m + ".weight", {d, d}, 0.3f * wd, 0);
      t->add(rng, lp + "self_attn." + m + ".bias", {d}, 0.1f, 0);
    }
    t->add(rng, lp + "mlp.fc1.weight", {f, d}, 0.3f * wd, 0);
    t->add(rng, lp + "mlp.fc1.bias", {f}, 0.1f, 0);
    t->add(rng, lp + "mlp.fc2.weight", {d, f}, 0.3f * wf, 0);
    t->add(rng, lp + "mlp.fc2.bias", {d}, 0.1f, 0);
  }
  t->add(rng, vm + "post_layernorm.weight", {d}, 0.2f, 1);
  t->add(rng, vm + "post_layernorm.bias", {d}, 0.1f, 0);
  t->add(rng, "multi_modal_projector.mm_soft_emb_norm.weight", {d}, 0.2f, 0);
  t->add(rng, "multi_modal_projector.mm_input_projection_weight", {d, c.text_hidden}, 0.3f * wd, 0);
  return t;
}

}  // namespace

VisionTowerConfig vision_tower_config(const SynthSpec& s) {
  VisionTowerConfig c;
  c.image_size = s.vision_image_size;
  c.patch_size = s.vision_patch_size;
  c.hidden = s.vision_hidden;
  c.intermediate = s.vision_d_ff;
  c.n_layers = s.vision_layers;
  c.n_heads = s.vision_heads;
  c.layer_norm_eps = 1e-6f;
  c.mm_tokens_per_image = s.vision_tokens;
  c.text_hidden = s.d_model;
  return c;
}

void validate_vision(const SynthSpec& s) {
  if (!s.vision) return;
  OG_CHECK(!is_embedding(s), "synthetic model: --vision writes a generative model, not an embedding model");
  if (s.family == Family::kGemma4) return validate_gemma4_vision(s);  // synth_vision_gemma4.cpp
  if (s.family == Family::kLlama) return validate_llava_vision(s);    // synth_vision_llava.cpp
  OG_CHECK(s.family == Family::kGemma3, "synthetic model: --vision writes gemma3, gemma4 and llama models only, not ",
           family_name(s.family));
  OG_CHECK(s.tokenizer == "stories", "synthetic model: --vision needs the stories tokenizer (it gains Gemma 3's "
           "image and turn tokens), not ", s.tokenizer);
  vision_tower_config(s).check();
}

int64_t vision_extra_tokens(const SynthSpec& s) { return s.vision ? static_cast<int64_t>(added_tokens(s).size()) : 0; }

std::string vision_chat_template(const SynthSpec& s) {
  return s.family == Family::kLlama ? llava_vision_chat_template() : kGemma3VisionTemplate;
}

void add_vision_gguf_tokens(const SynthSpec& s, const std::string& key, GgufValue& value) {
  if (!s.vision) return;
  std::vector<GgufValue> v;
  for (size_t k = 0; k < value.arr.size(); ++k) v.push_back(value.arr[k]);
  OG_CHECK(static_cast<int64_t>(v.size()) == kStoriesVocab, "synthetic model: ", key, " has ", v.size(),
           " entries, expected ", kStoriesVocab);
  for (const char* t : added_tokens(s)) {
    if (key == "tokenizer.ggml.tokens") v.push_back(GgufValue::make_string(t));
    else if (key == "tokenizer.ggml.scores") v.push_back(GgufValue::make_f32(0.0f));
    else v.push_back(GgufValue::make_i32(3));  // token_type: control
  }
  value = GgufValue::make_array(value.arr.type(), v);
}

void add_vision_hf_tokens(const SynthSpec& s, nlohmann::ordered_json& tokenizer_json,
                          nlohmann::ordered_json& tokenizer_config) {
  if (!s.vision) return;
  int64_t id = kStoriesVocab;
  for (const char* t : added_tokens(s)) {
    nlohmann::ordered_json a = {{"id", id},          {"content", t},         {"single_word", false},
                                {"lstrip", false},   {"rstrip", false},      {"normalized", false},
                                {"special", true}};
    tokenizer_json["model"]["vocab"][t] = id;
    tokenizer_json["added_tokens"].push_back(a);
    a.erase("id");
    tokenizer_config["added_tokens_decoder"][std::to_string(id)] = a;
    ++id;
  }
  tokenizer_config["chat_template"] = vision_chat_template(s);
}

nlohmann::ordered_json vision_hf_config(const SynthSpec& s, const nlohmann::ordered_json& text) {
  if (s.family == Family::kLlama) return llava_hf_config(s, text);
  const VisionTowerConfig c = vision_tower_config(s);
  nlohmann::ordered_json t = text;
  t.erase("architectures");
  t["model_type"] = "gemma3_text";
  nlohmann::ordered_json cfg;
  cfg["architectures"] = {"Gemma3ForConditionalGeneration"};
  cfg["model_type"] = "gemma3";
  cfg["boi_token_index"] = kStoriesVocab + 2;
  cfg["eoi_token_index"] = kStoriesVocab + 3;
  cfg["image_token_index"] = kStoriesVocab + 4;
  cfg["mm_tokens_per_image"] = c.mm_tokens_per_image;
  cfg["text_config"] = t;
  cfg["vision_config"] = {{"model_type", "siglip_vision_model"},
                          {"hidden_size", c.hidden},
                          {"intermediate_size", c.intermediate},
                          {"num_hidden_layers", c.n_layers},
                          {"num_attention_heads", c.n_heads},
                          {"patch_size", c.patch_size},
                          {"image_size", c.image_size},
                          {"num_channels", 3},
                          {"layer_norm_eps", c.layer_norm_eps},
                          {"hidden_act", "gelu_pytorch_tanh"},
                          {"vision_use_head", false}};
  cfg["tie_word_embeddings"] = text.value("tie_word_embeddings", true);
  cfg["torch_dtype"] = "float32";
  return cfg;
}

std::string vision_hf_name(const SynthSpec& s, const std::string& text_name) {
  if (s.family == Family::kLlama) return llava_hf_name(text_name);
  if (s.family == Family::kGemma4) return text_name;  // already under model.language_model.
  if (text_name.rfind("model.", 0) == 0) return "language_model." + text_name;
  if (text_name.rfind("lm_head.", 0) == 0) return "language_model." + text_name;
  return text_name;
}

void RandomTensors::add(std::mt19937& rng, std::string name, std::vector<int64_t> shape, float half, float center) {
  int64_t n = 1;
  for (int64_t x : shape) n *= x;
  std::uniform_real_distribution<float> u(center - half, center + half);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  TensorInfo t;
  t.name = std::move(name);
  t.type_id = static_cast<uint32_t>(DType::F32);
  t.type_name = "f32";
  t.known_type = true;
  t.shape = std::move(shape);
  values_.push_back(std::move(v));
  // A moved inner vector keeps its buffer, so earlier pointers stay valid.
  t.data = reinterpret_cast<const uint8_t*>(values_.back().data());
  t.nbytes = values_.back().size() * sizeof(float);
  infos_.push_back(std::move(t));
}

const TensorInfo* RandomTensors::find(std::string_view name) const {
  for (const TensorInfo& t : infos_)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<SafetensorsTensor> safetensors_of(const std::shared_ptr<const RandomTensors>& src) {
  std::vector<SafetensorsTensor> out;
  for (size_t i = 0; i < src->tensors().size(); ++i) {
    SafetensorsTensor x;
    x.name = src->tensors()[i].name;
    x.dtype = "F32";
    x.shape = src->tensors()[i].shape;
    x.make = [src, i] {
      const std::vector<float>& v = src->values(i);
      std::vector<uint8_t> b(v.size() * sizeof(float));
      std::memcpy(b.data(), v.data(), b.size());
      return b;
    };
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<SafetensorsTensor> vision_hf_tensors(const SynthSpec& s) {
  if (s.family == Family::kLlama) return safetensors_of(llava_hf_tensors(s));
  if (s.family == Family::kGemma4) return safetensors_of(gemma4_hf_vision_tensors(s));
  return safetensors_of(gemma3_vision_tensors(s));
}

void write_vision_preprocessor_config(const SynthSpec& s, const std::string& dir) {
  if (s.family == Family::kLlama) return write_llava_preprocessor_config(s, dir);
  if (s.family == Family::kGemma4) return write_gemma4_preprocessor_config(s, dir);
  const nlohmann::ordered_json p = {
      {"image_processor_type", "Gemma3ImageProcessor"},
      {"processor_class", "Gemma3Processor"},
      {"do_resize", true},
      {"size", {{"height", s.vision_image_size}, {"width", s.vision_image_size}}},
      {"resample", 2},
      {"do_rescale", true},
      {"rescale_factor", 1.0 / 255.0},
      {"do_normalize", true},
      {"image_mean", {0.5, 0.5, 0.5}},
      {"image_std", {0.5, 0.5, 0.5}},
      {"do_convert_rgb", true},
      {"image_seq_length", s.vision_tokens},
  };
  write_text_file(join_path(dir, "preprocessor_config.json"), p.dump(2) + "\n");
}

namespace {

// Rewrites the f16 mmproj at `from` as `to` with q8_0 matrices where
// llama.cpp's converter (--outtype q8_0) makes them q8_0: a 2-D matrix whose
// rows are whole 32-value blocks, but the input projection (the converter
// forces it to f16) and the embeddings (f32); the others stay as they are
// (fc2's 4304-wide rows in Gemma 3 4B's tower stay f16).
void write_q8_0_copy(const std::string& from, const std::string& to) {
  const std::unique_ptr<GgufFile> f = GgufFile::open(from);
  GgufWriter w;
  for (const auto& [key, value] : f->metadata())
    if (key != "general.alignment") w.set(key, value);
  for (const TensorInfo& t : f->tensors()) {
    const int64_t cols = t.shape.back();
    const bool q8 = t.shape.size() == 2 && t.type_id == static_cast<uint32_t>(DType::F16) && cols % 32 == 0 &&
                    t.name != "mm.input_projection.weight";
    if (!q8) {
      w.add_tensor(t.name, static_cast<DType>(t.type_id), t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes));
      continue;
    }
    const TensorInfo* tp = &t;
    w.add_tensor(t.name, DType::Q8_0, t.shape, GgufWriter::Producer([tp, cols] {
                   const int64_t rows = tp->shape[0];
                   std::vector<float> v(static_cast<size_t>(rows * cols));
                   const int64_t rb = dtype_row_bytes(DType::F16, cols);
                   for (int64_t r = 0; r < rows; ++r) kernels::dequantize_row(DType::F16, tp->data + r * rb, &v[r * cols], cols);
                   return encode_rows(DType::Q8_0, v.data(), rows, cols);
                 }));
  }
  w.write(to);
}

}  // namespace

void write_mmproj(const SynthSpec& s, const std::string& path) {
  OG_CHECK(s.vision, "synthetic model: an mmproj file needs a vision spec (--vision)");
  if (s.family == Family::kGemma4) return write_gemma4_mmproj(s, path);
  if (s.family == Family::kLlama) return write_llava_mmproj(s, path);
  validate_vision(s);
  const std::shared_ptr<RandomTensors> src = gemma3_vision_tensors(s);
  MmprojWriteOptions o;
  // The HF form holds f32: an f32 mmproj gives its rows bit for bit.
  o.matrices = s.weight_dtype == DType::F16 || s.weight_dtype == DType::BF16 || s.weight_dtype == DType::Q8_0
                   ? (s.weight_dtype == DType::Q8_0 ? DType::F16 : s.weight_dtype)
                   : DType::F32;
  o.name = "synthetic-gemma3-mmproj";
  GgufWriter w;
  add_gemma3_mmproj(vision_tower_config(s), *src, o, w);
  if (s.weight_dtype != DType::Q8_0) return w.write(path);
  // q8_0 (for timing a tower as llama.cpp's q8_0 mmproj files hold it): f16 first, then requantized.
  const std::string tmp = path + ".f16.tmp";
  w.write(tmp);
  write_q8_0_copy(tmp, path);
  std::remove(tmp.c_str());
}

}  // namespace og::synth
