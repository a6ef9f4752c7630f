// Shared pieces of the synthetic model writer: the HF tensor plan of a spec
// (names, shapes, kinds), the deterministic weight generator, and the
// tokenizer material for both layouts. The GGUF form comes from src/model
// (model/gguf_export.h), as for any loaded model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/gguf.h"
#include "format/safetensors.h"
#include "model/config.h"
#include "model/vision_gemma4.h"
#include "model/vision_llava.h"
#include "model/vision_tower.h"
#include "synth/synth.h"

namespace og::synth {

enum class Kind { kEmbed, kLinear, kBias, kNorm, kScalar };

struct PlannedTensor {
  std::string hf_name;
  std::vector<int64_t> shape;  // row-major, outermost first ([out, in] for linears)
  Kind kind = Kind::kLinear;
  int64_t fan_in = 1;
  bool gemma_norm = false;  // HF gemma stores w of a (1 + w) norm: values near 0
};

int64_t n_vocab(const SynthSpec& spec);
void validate(const SynthSpec& spec);  // throws og::Error naming the bad field
bool is_sliding_layer(const SynthSpec& spec, int64_t layer);
std::vector<PlannedTensor> plan(const SynthSpec& spec);
std::vector<PlannedTensor> plan_gemma4(const SynthSpec& spec);  // synth_gemma4.cpp
// gpt-oss (synth_gpt_oss.cpp): the tensors under their GGUF names, and the
// config they are written from (the GGUF form is the only one).
std::vector<PlannedTensor> plan_gpt_oss(const SynthSpec& spec);
ModelConfig gpt_oss_model_config(const SynthSpec& spec);
// Appends one layer's router and experts (h: the layer's HF prefix "model.layers.N.").
void plan_experts(const SynthSpec& spec, const std::string& h, std::vector<PlannedTensor>& out);
int64_t gemma4_layer_d_ff(const SynthSpec& spec, int64_t layer);
int64_t gemma4_layer_head_dim(const SynthSpec& spec, int64_t layer);
bool gemma4_owns_kv(const SynthSpec& spec, int64_t layer);
void validate_gemma4(const SynthSpec& spec);

// Embedding tables of more than 2^26 values are generated in blocks of
// rows_per_block rows, one random stream per block, so that a writer can
// produce a multi-GB table a block at a time (block_values; hf_values joins them).
bool generated_in_blocks(const PlannedTensor& t);
int64_t rows_per_block(const PlannedTensor& t);
std::vector<float> block_values(const SynthSpec& spec, const PlannedTensor& t, int64_t block);

// The tensor's values in HF layout (rotate-half q/k rows, gemma norms as w).
std::vector<float> hf_values(const SynthSpec& spec, const PlannedTensor& t);

// Tokenizer material.
struct TokenizerInfo {
  int64_t bos = 1, eos = 2;
  std::vector<int64_t> eos_all;  // generation_config eos ids
  std::string chat_template;     // "" = none
};
TokenizerInfo tokenizer_info(const SynthSpec& spec);
// gemma4's HF config.json (synth_gemma4.cpp).
nlohmann::ordered_json gemma4_hf_config(const SynthSpec& spec, const TokenizerInfo& tok);
// gpt-oss's HF form (synth_gpt_oss.cpp): config.json and the checkpoint's
// tensors (experts fused, in F32, BF16 or the released MXFP4 blocks as weight_dtype says).
nlohmann::ordered_json gpt_oss_hf_config(const SynthSpec& spec, const TokenizerInfo& tok);
std::vector<SafetensorsTensor> gpt_oss_hf_tensors(const SynthSpec& spec);
// Adds tokenizer.* keys for the spec's tokenizer.
void add_gguf_tokenizer(const SynthSpec& spec, GgufWriter& w);
// The gemma4 tokenizer (synth_tokenizer_gemma4.cpp): its GGUF keys and HF
// files (its base size is in synth.h).
void add_gemma4_gguf_tokenizer(const SynthSpec& spec, GgufWriter& w);
void write_gemma4_hf_tokenizer(const SynthSpec& spec, const std::string& dir);
TokenizerInfo gemma4_tokenizer_info(const SynthSpec& spec);
// The harmony tokenizer of gpt-oss (synth_tokenizer_harmony.cpp): o200k_harmony's
// 201088 ids with its control tokens at their real ids; its GGUF keys and HF files.
int64_t harmony_vocab_size();
TokenizerInfo harmony_tokenizer_info();
void add_harmony_gguf_tokenizer(GgufWriter& w);
void write_harmony_hf_tokenizer(const SynthSpec& spec, const std::string& dir);
// Copies/writes tokenizer.json, tokenizer_config.json into dir.
void write_hf_tokenizer(const SynthSpec& spec, const std::string& dir);

// The Llama 3.2 tokenizer.json of the test data, and a check that a test-data file exists.
std::string llama3_json();
void require(const std::string& path);

// A script resolved against the spec's vocabulary (synth_script.cpp).
struct ScriptPlan {
  struct Placed {
    int64_t id = 0;
    std::string text;
    bool special = false;
  };
  std::vector<Placed> placed;       // the script's new tokens, in reserved slots
  std::map<int64_t, int64_t> next;  // token id -> its successor
  std::map<int64_t, int64_t> dim;   // token id with a successor -> its embedding dimension
};
// Null when the spec has no script; throws og::Error on a script that cannot be
// written (not a single token, conflicting bigrams, d_model too small, wrong
// family or tokenizer). Resolved once per spec and kept.
const ScriptPlan* script_plan(const SynthSpec& spec);
// Rewrites the script's tensors in HF layout: v holds rows [first_row, ...) of t.
void apply_script(const SynthSpec& spec, const PlannedTensor& t, std::vector<float>& v, int64_t first_row);

// Embedding specs (synth_embedding.cpp): whether the spec is one, the
// checks, the Dense modules' planned tensors ("<k>_Dense/linear.weight"), the
// config fields the HF reader takes from modules.json, and those files.
bool is_embedding(const SynthSpec& spec);
void validate_embedding(const SynthSpec& spec);
void plan_dense(const SynthSpec& spec, std::vector<PlannedTensor>& out);
void apply_embedding_config(const SynthSpec& spec, ModelConfig& c);
void write_st_modules(const SynthSpec& spec, const std::string& dir);
// The module directory of a planned tensor ("2_Dense"), "" for the main file's.
std::string module_of(const std::string& hf_name);

// Encoders (bert, nomic-bert; synth_encoder.cpp): whether the spec is one, its
// tiny form, checks, HF tensor plan and config.json, and the WordPiece
// vocabulary of the test data in GGUF and HF form.
bool is_encoder(const SynthSpec& spec);
SynthSpec tiny_encoder_spec(Family f);
void validate_encoder(const SynthSpec& spec);
std::vector<PlannedTensor> plan_encoder(const SynthSpec& spec);
nlohmann::ordered_json encoder_hf_config(const SynthSpec& spec);
int64_t bert_vocab_size();
TokenizerInfo bert_tokenizer_info();
void add_bert_gguf_tokenizer(GgufWriter& w);
void write_bert_hf_tokenizer(const std::string& dir);

// Vision specs (synth_vision.cpp): the tower's shape, the checks, the tokens
// added to the stories vocabulary (GGUF arrays and HF files), the chat
// template, the nested HF config.json, the text tensors' names in it
// (language_model.model.*), the tower's tensors and preprocessor_config.json.
VisionTowerConfig vision_tower_config(const SynthSpec& s);
void validate_vision(const SynthSpec& s);
int64_t vision_extra_tokens(const SynthSpec& s);
std::string vision_chat_template(const SynthSpec& s);
void add_vision_gguf_tokens(const SynthSpec& s, const std::string& key, GgufValue& value);
void add_vision_hf_tokens(const SynthSpec& s, nlohmann::ordered_json& tokenizer_json,
                          nlohmann::ordered_json& tokenizer_config);
nlohmann::ordered_json vision_hf_config(const SynthSpec& s, const nlohmann::ordered_json& text);
std::string vision_hf_name(const SynthSpec& s, const std::string& text_name);
std::vector<SafetensorsTensor> vision_hf_tensors(const SynthSpec& s);
void write_vision_preprocessor_config(const SynthSpec& s, const std::string& dir);

// Uniform random f32 tensors as a TensorSource: a synthetic tower's HF
// tensors, which its mmproj writer reads and the HF form stores.
class RandomTensors final : public TensorSource {
 public:
  explicit RandomTensors(std::string name) : name_(std::move(name)) {}
  // Values uniform in center +- half, drawn from rng in call order.
  void add(std::mt19937& rng, std::string name, std::vector<int64_t> shape, float half, float center);
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  const TensorInfo* find(std::string_view name) const override;
  std::string source_name() const override { return name_; }
  const std::vector<float>& values(size_t i) const { return values_[i]; }

 private:
  std::string name_;
  std::vector<TensorInfo> infos_;
  std::vector<std::vector<float>> values_;
};
// Safetensors entries (F32) made from `src` when written.
std::vector<SafetensorsTensor> safetensors_of(const std::shared_ptr<const RandomTensors>& src);

// Gemma 4 vision specs (synth_vision_gemma4.cpp): the tiny tower's config, the
// checks, the chat template that writes <|image|>, the image tokens the gemma4
// vocabulary gains and the gemma4v mmproj.
Gemma4VisionConfig gemma4_synth_vision_config(const SynthSpec& s);
void validate_gemma4_vision(const SynthSpec& s);
std::string gemma4_vision_chat_template();
std::vector<std::string> gemma4_vision_tokens();
void write_gemma4_mmproj(const SynthSpec& s, const std::string& path);
// Its HF form: the tower's tensors under model.vision_tower. and
// model.embed_vision., config.json's vision_config, Gemma4ImageProcessor settings.
std::shared_ptr<RandomTensors> gemma4_hf_vision_tensors(const SynthSpec& s);
nlohmann::ordered_json gemma4_vision_hf_config(const SynthSpec& s);
void write_gemma4_preprocessor_config(const SynthSpec& s, const std::string& dir);

// LLaVA vision specs (synth_vision_llava.cpp): the tiny CLIP tower's config,
// the checks, the LLaVA-1.5-style template and the "mlp" mmproj.
ClipTowerConfig llava_synth_vision_config(const SynthSpec& s);
void validate_llava_vision(const SynthSpec& s);
std::string llava_vision_chat_template();
void write_llava_mmproj(const SynthSpec& s, const std::string& path);
// Its HF form: LlavaForConditionalGeneration (the text model under
// model.language_model., the tower under model.vision_tower.vision_model.
// with one layer past the feature layer -2 and the post-LayerNorm, the
// projector under model.multi_modal_projector.), CLIPImageProcessor settings.
std::shared_ptr<RandomTensors> llava_hf_tensors(const SynthSpec& s);
nlohmann::ordered_json llava_hf_config(const SynthSpec& s, const nlohmann::ordered_json& text);
std::string llava_hf_name(const std::string& text_name);
void write_llava_preprocessor_config(const SynthSpec& s, const std::string& dir);

std::string join_path(const std::string& a, const std::string& b);
void write_text_file(const std::string& path, const std::string& text);

}  // namespace og::synth
