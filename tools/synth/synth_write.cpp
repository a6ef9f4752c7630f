// write_gguf / write_hf: the two layouts of one synthetic spec. The GGUF form
// is the HF one converted by src/model's writer (model/gguf_export.h). Tensors
// are produced and encoded one at a time while the file is written, so a
// benchmark-sized model never sits in memory whole.
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/safetensors.h"
#include "model/families/family.h"
#include "model/gguf_export.h"
#include "model/quant_mix.h"
#include "model/tensor_codec.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

// The dtype a GGUF tensor is stored in: 1-D tensors (norms, biases) stay F32, as
// the converter does. A 2-D weight whose rows are not whole blocks of the
// requested type falls back to Q8_0 (32-element blocks), then F16, the way
// llama.cpp's quantizer falls back for incompatible rows.
DType storage_dtype(const SynthSpec& s, const GgufTensorPlan& t, TensorTypePicker* mix) {
  if (!t.matrix || gguf_keeps_f32(t.name)) return DType::F32;
  if (mix) return mix->pick(t.name, t.shape.back());
  DType want = s.weight_dtype;
  // gpt-oss as published: MXFP4 experts, the other matrices in another type.
  if (s.family == Family::kGptOss && want == DType::MXFP4 && t.shape.size() != 3) want = s.gpt_oss_dense_dtype;
  const int64_t cols = t.shape.back();
  if (cols % dtype_info(want).block == 0) return want;
  if (cols % 32 == 0) return DType::Q8_0;
  return DType::F16;
}

// The mix's weight type (q4_k_m, q5_k_m, q3_k_m, iq4_xs_m: one per base
// type), or null when every matrix takes weight_dtype.
std::optional<WeightType> mix_type(const SynthSpec& s) {
  if (!s.weight_mix) return std::nullopt;
  for (const std::string& name : weight_type_names()) {
    WeightType t;
    if (weight_type_from_name(name, &t) && t.mix != kMixNone && t.base == s.weight_dtype) return t;
  }
  fail("synthetic model: no _m mix has the base type ", dtype_name(static_cast<uint32_t>(s.weight_dtype)),
       " (q4_k_m: Q4_K, q5_k_m: Q5_K, q3_k_m: Q3_K, iq4_xs_m: IQ4_XS)");
}

uint32_t file_type(DType t) {
  switch (t) {
    case DType::F32: return 0;
    case DType::F16: return 1;
    case DType::Q4_0: return 2;
    case DType::Q4_1: return 3;
    case DType::Q8_0: return 7;
    case DType::Q5_0: return 8;
    case DType::Q5_1: return 9;
    case DType::Q4_K: return 15;
    case DType::Q5_K: return 17;
    case DType::Q6_K: return 18;
    case DType::BF16: return 32;
    case DType::MXFP4: return 38;  // llama.cpp's MOSTLY_MXFP4_MOE (gpt-oss's MXFP4 experts)
    default: return 0;
  }
}

nlohmann::ordered_json hf_config(const SynthSpec& s, const TokenizerInfo& tok);

// --row-pool: the tensors built from pool rows (SynthSpec::row_pool): quantized
// matrices (float ones are cheap to write) that are expert stacks or hold at
// least 2^22 values, never the token embedding (src kind kEmbed) or a
// generated table.
bool pooled(const SynthSpec& s, const GgufTensorPlan& t, DType dt, const PlannedTensor* src) {
  if (s.row_pool <= 0 || !t.matrix || !t.generated.empty() || dtype_info(dt).block <= 1) return false;
  if (src && src->kind == Kind::kEmbed) return false;
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return t.shape.size() == 3 || n >= (int64_t{1} << 22);
}

// Pool row of row r of tensor `name`: splitmix64's finaliser over the name's
// FNV-1a hash and the row, so every tensor draws its own sequence.
int64_t pool_row(const std::string& name, int64_t r, int64_t pool) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  uint64_t z = h + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(r + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<int64_t>(z % static_cast<uint64_t>(pool));
}

// The encoded pools, made when a tensor first needs one: row_pool rows of
// linear-layer values (N(0, 1/cols), as a matrix with fan-in cols) in dtype dt.
class RowPools {
 public:
  explicit RowPools(const SynthSpec& s) : spec_(s) {}
  const std::vector<uint8_t>& get(DType dt, int64_t cols) {
    std::vector<uint8_t>& enc = pools_[{static_cast<uint32_t>(dt), cols}];
    if (enc.empty()) {
      PlannedTensor p;
      p.hf_name = cat("row-pool.", dtype_name(static_cast<uint32_t>(dt)), ".", cols);
      p.shape = {spec_.row_pool, cols};
      p.kind = Kind::kLinear;
      p.fan_in = cols;
      const std::vector<float> v = hf_values(spec_, p);
      enc = encode_rows(dt, v.data(), spec_.row_pool, cols);
    }
    return enc;
  }
  // The tensor's bytes: each row a copy of its pool row.
  std::vector<uint8_t> build(const std::string& name, DType dt, const std::vector<int64_t>& shape) {
    const int64_t cols = shape.back(), rb = dtype_row_bytes(dt, cols);
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    const std::vector<uint8_t>& pool = get(dt, cols);
    std::vector<uint8_t> out(static_cast<size_t>(rows * rb));
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out.data() + r * rb, pool.data() + pool_row(name, r, spec_.row_pool) * rb, static_cast<size_t>(rb));
    return out;
  }

 private:
  const SynthSpec& spec_;
  std::map<std::pair<uint32_t, int64_t>, std::vector<uint8_t>> pools_;
};

// The plan's tensors as a source without data: the family readers look
// tensors up by name and check their shapes, never read them here.
class PlanSource : public TensorSource {
 public:
  explicit PlanSource(const std::vector<PlannedTensor>& plan) {
    for (const PlannedTensor& p : plan) {
      TensorInfo t;
      t.name = p.hf_name;
      t.type_id = 0;
      t.type_name = "f32";
      t.known_type = true;
      t.shape = p.shape;
      infos_.push_back(std::move(t));
    }
  }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  const TensorInfo* find(std::string_view name) const override {
    for (const TensorInfo& t : infos_)
      if (t.name == name) return &t;
    return nullptr;
  }
  std::string source_name() const override { return "synthetic model"; }

 private:
  std::vector<TensorInfo> infos_;
};

// The spec's model as the HF reader sees its config.json (HF layout), so the
// GGUF form is written by the same code as any exported model.
ModelConfig hf_model_config(const SynthSpec& spec, const std::vector<PlannedTensor>& plan) {
  const nlohmann::json cfg = nlohmann::json::parse(hf_config(spec, tokenizer_info(spec)).dump());
  const std::string arch = cfg["architectures"][0].get<std::string>();
  const FamilySpec* family = family_for_hf_arch(arch);
  OG_CHECK(family != nullptr, "synthetic model: no family reads ", arch);
  ModelConfig c;
  c.architecture = family->name;
  c.layout = WeightLayout::kHf;
  // The decoder's prefix: the embedding is planned first ("<prefix>embed_tokens.weight").
  const std::string& embd = plan.at(0).hf_name;
  const std::string kEmbd = "embed_tokens.weight";
  const bool decoder = embd.size() >= kEmbd.size() && embd.compare(embd.size() - kEmbd.size(), kEmbd.size(), kEmbd) == 0;
  c.hf_prefix = decoder ? embd.substr(0, embd.size() - kEmbd.size()) : "";  // encoders: BertModel has no prefix
  PlanSource source(plan);
  const bool nested = cfg.contains("text_config");
  family->from_hf(HfInput{nested ? cfg["text_config"] : cfg, "synthetic config.json", source}, c);
  apply_embedding_config(spec, c);
  validate_config(c, "synthetic model");
  return c;
}

}  // namespace

void write_gguf(const SynthSpec& spec, const std::string& path) {
  std::vector<PlannedTensor> planned = plan(spec);
  const ModelConfig c =
      spec.family == Family::kGptOss ? gpt_oss_model_config(spec) : hf_model_config(spec, planned);
  std::map<std::string, PlannedTensor> hf;
  for (PlannedTensor& t : planned) hf.emplace(t.hf_name, std::move(t));
  GgufWriter w;
  write_gguf_metadata(c, w);
  // llama.cpp gives the tokens <s>, </s>, <unk> and <|endoftext|> of a model
  // whose general.name mentions phi3 or phi-3 special attributes, and fails
  // to load one whose vocabulary lacks them (ours): phi3 is named "p3".
  const std::string name = spec.family == Family::kPhi3 ? std::string("p3") : family_name(spec.family);
  w.set("general.name", GgufValue::make_string("synthetic-" + name));
  const std::optional<WeightType> mix = mix_type(spec);
  w.set("general.file_type", GgufValue::make_u32(mix ? mix->file_type : file_type(spec.weight_dtype)));
  w.set("general.quantization_version", GgufValue::make_u32(2));
  add_gguf_tokenizer(spec, w);
  if (!spec.chat_template.empty()) w.set("tokenizer.chat_template", GgufValue::make_string(spec.chat_template));
  TokenizerInfo tok = tokenizer_info(spec);
  w.set("tokenizer.ggml.bos_token_id", GgufValue::make_u32(static_cast<uint32_t>(tok.bos)));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(static_cast<uint32_t>(tok.eos)));
  const std::vector<GgufTensorPlan> tensors = gguf_tensor_plan(c);
  int n_attn_v = 0;
  for (const GgufTensorPlan& t : tensors) n_attn_v += t.name.find("attn_v.weight") != std::string::npos;
  std::optional<TensorTypePicker> picker;
  if (mix)  // as quantize picks them: query heads per KV head and experts per layer from layer 0
    picker.emplace(*mix, static_cast<int>(c.n_layers()), n_attn_v, !c.tied_output,
                   c.layers[0].n_heads / c.layers[0].n_kv_heads, c.layers[0].n_experts);
  RowPools pools(spec);
  for (const GgufTensorPlan& t : tensors) {
    const DType dt = storage_dtype(spec, t, picker ? &*picker : nullptr);
    const PlannedTensor* src = nullptr;
    if (!t.source.empty()) {
      auto it = hf.find(t.source);
      OG_CHECK(it != hf.end(), "synthetic model: no tensor ", t.source, " for ", t.name);
      src = &it->second;
    }
    if (pooled(spec, t, dt, src)) {
      w.add_tensor(t.name, dt, t.shape,
                   GgufWriter::Producer([&pools, t, dt] { return pools.build(t.name, dt, t.shape); }));
      continue;
    }
    if (src && generated_in_blocks(*src) && t.add == 0 && t.permute_heads == 0) {
      // A large table: one block of rows in f32 at a time.
      w.add_tensor(t.name, dt, t.shape, GgufWriter::Producer([&spec, t, dt, src] {
                     const int64_t cols = t.shape[1], rb = dtype_row_bytes(dt, cols), per = rows_per_block(*src);
                     std::vector<uint8_t> out(static_cast<size_t>(t.shape[0] * rb));
                     for (int64_t b = 0; b * per < t.shape[0]; ++b) {
                       const std::vector<float> v = block_values(spec, *src, b);
                       const std::vector<uint8_t> e =
                           encode_rows(dt, v.data(), static_cast<int64_t>(v.size()) / cols, cols);
                       std::memcpy(out.data() + b * per * rb, e.data(), e.size());
                     }
                     return out;
                   }));
      continue;
    }
    std::vector<const PlannedTensor*> stack;  // HF experts stacked into one GGUF tensor
    for (const std::string& name : t.stack_sources) {
      auto it = hf.find(name);
      OG_CHECK(it != hf.end(), "synthetic model: no tensor ", name, " for ", t.name);
      stack.push_back(&it->second);
    }
    w.add_tensor(t.name, dt, t.shape, GgufWriter::Producer([&spec, t, dt, src, stack] {
                   std::vector<float> v = src ? hf_values(spec, *src) : t.generated;
                   for (const PlannedTensor* p : stack) {
                     const std::vector<float> part = hf_values(spec, *p);
                     v.insert(v.end(), part.begin(), part.end());
                   }
                   apply_gguf_fixes(t, v);
                   const int64_t cols = t.shape.back();
                   return encode_rows(dt, v.data(), static_cast<int64_t>(v.size()) / cols, cols);
                 }));
  }
  w.write(path);
}

namespace {

// Phi-3.5-style longrope: short factors near 1, long ones growing with the
// pair index (as the real ones do, ~1 to ~60), both [head_dim / 2].
nlohmann::ordered_json phi3_longrope(const SynthSpec& s) {
  nlohmann::ordered_json shorts = nlohmann::ordered_json::array(), longs = nlohmann::ordered_json::array();
  const int64_t half = static_cast<int64_t>(s.head_dim * s.partial_rotary) / 2;  // the rotated pairs
  for (int64_t i = 0; i < half; ++i) {
    const double x = static_cast<double>(i) / static_cast<double>(half);
    shorts.push_back(1.0 + 0.25 * x);
    longs.push_back(1.0 + 40.0 * x * x);
  }
  return {{"type", "longrope"}, {"short_factor", shorts}, {"long_factor", longs}};
}

nlohmann::ordered_json hf_config(const SynthSpec& s, const TokenizerInfo& tok) {
  if (s.family == Family::kGemma4) return gemma4_hf_config(s, tok);
  if (s.family == Family::kGptOss) return gpt_oss_hf_config(s, tok);
  if (is_encoder(s)) return encoder_hf_config(s);
  static const char* kArch[] = {"LlamaForCausalLM",   "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                                "MistralForCausalLM", "Gemma3ForCausalLM", "",
                                "Qwen3MoeForCausalLM", "MixtralForCausalLM", "Phi3ForCausalLM"};
  static const char* kType[] = {"llama", "qwen2", "qwen3",    "mistral", "gemma3_text",
                                "",      "qwen3_moe", "mixtral", "phi3"};
  const int f = static_cast<int>(s.family);
  nlohmann::ordered_json c;
  c["architectures"] = {kArch[f]};
  if (is_embedding(s)) c["architectures"] = {s.family == Family::kGemma3 ? "Gemma3TextModel" : "Qwen3Model"};
  c["model_type"] = kType[f];
  c["hidden_size"] = s.d_model;
  c["intermediate_size"] = s.d_ff;
  c["num_hidden_layers"] = s.n_layers;
  c["num_attention_heads"] = s.n_heads;
  c["num_key_value_heads"] = s.n_kv_heads;
  c["head_dim"] = s.head_dim;
  c["max_position_embeddings"] = s.n_ctx;
  c["rms_norm_eps"] = s.rms_eps;
  c["rope_theta"] = s.rope_base;
  c["rope_scaling"] = nullptr;
  c["vocab_size"] = n_vocab(s);
  c["tie_word_embeddings"] = s.tied;
  c["bos_token_id"] = tok.bos;
  c["eos_token_id"] = tok.eos;
  c["torch_dtype"] = "float32";
  c["attention_bias"] = s.family == Family::kQwen2;
  switch (s.family) {
    case Family::kLlama:
      c["hidden_act"] = "silu";
      c["mlp_bias"] = false;
      break;
    case Family::kMistral:
    case Family::kMixtral:
      c["hidden_act"] = "silu";
      if (s.window > 0) c["sliding_window"] = s.window;
      else c["sliding_window"] = nullptr;
      if (s.family == Family::kMixtral) {
        c["num_local_experts"] = s.n_experts;
        c["num_experts_per_tok"] = s.n_experts_used;
        c["router_jitter_noise"] = 0.0;
      }
      break;
    case Family::kQwen3Moe:
      c["num_experts"] = s.n_experts;
      c["num_experts_per_tok"] = s.n_experts_used;
      c["moe_intermediate_size"] = s.d_ff_expert;
      c["norm_topk_prob"] = s.expert_weights_norm;
      c["decoder_sparse_step"] = 1;
      c["mlp_only_layers"] = nlohmann::ordered_json::array();
      [[fallthrough]];
    case Family::kQwen2:
    case Family::kQwen3:
      c["hidden_act"] = "silu";
      c["use_sliding_window"] = false;
      c["sliding_window"] = nullptr;
      c["max_window_layers"] = s.n_layers;
      break;
    case Family::kGemma3: {
      c["hidden_activation"] = "gelu_pytorch_tanh";
      c["sliding_window"] = s.window;
      c["sliding_window_pattern"] = s.sliding_pattern;
      nlohmann::ordered_json types = nlohmann::ordered_json::array();
      for (int64_t l = 0; l < s.n_layers; ++l)
        types.push_back(is_sliding_layer(s, l) ? "sliding_attention" : "full_attention");
      c["layer_types"] = types;
      c["rope_local_base_freq"] = s.rope_base_local;
      c["query_pre_attn_scalar"] = s.head_dim;
      c["final_logit_softcapping"] = nullptr;
      c["attn_logit_softcapping"] = nullptr;
      if (s.bidirectional) c["use_bidirectional_attention"] = true;
      break;
    }
    case Family::kPhi3:
      c["hidden_act"] = "silu";
      c.erase("head_dim");  // Phi3Config derives it
      c["sliding_window"] = nullptr;
      c["original_max_position_embeddings"] = s.longrope_original > 0 ? s.longrope_original : s.n_ctx;
      if (s.longrope_original > 0) c["rope_scaling"] = phi3_longrope(s);
      if (s.partial_rotary != 1.0) c["partial_rotary_factor"] = s.partial_rotary;  // Phi-4-mini
      break;
    case Family::kGemma4:
    case Family::kGptOss:  // gpt_oss_hf_config above
    case Family::kBert:    // encoder_hf_config above
    case Family::kNomicBert:
      break;
  }
  if (s.vision && (s.family == Family::kGemma3 || s.family == Family::kLlama))
    return vision_hf_config(s, c);  // Gemma3ForConditionalGeneration, LlavaForConditionalGeneration: c is its text_config
  return c;
}

}  // namespace

void write_hf(const SynthSpec& spec, const std::string& dir) {
  std::vector<PlannedTensor> tensors = spec.family == Family::kGptOss ? std::vector<PlannedTensor>{} : plan(spec);
  TokenizerInfo tok = tokenizer_info(spec);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  OG_CHECK(!ec && is_directory(dir), dir, ": cannot create directory: ", ec.message());
  write_text_file(join_path(dir, "config.json"), hf_config(spec, tok).dump(2) + "\n");
  nlohmann::ordered_json gen = {{"bos_token_id", tok.bos}};
  if (tok.eos_all.size() == 1) gen["eos_token_id"] = tok.eos_all[0];
  else gen["eos_token_id"] = tok.eos_all;
  write_text_file(join_path(dir, "generation_config.json"), gen.dump(2) + "\n");
  write_hf_tokenizer(spec, dir);
  if (!spec.chat_template.empty()) {
    // chat_template.jinja is what readers look at first; tokenizer_config.json agrees with it.
    write_text_file(join_path(dir, "chat_template.jinja"), spec.chat_template);
    const std::string cfg_path = join_path(dir, "tokenizer_config.json");
    nlohmann::ordered_json cfg = nlohmann::ordered_json::parse(read_text_file(cfg_path));
    cfg["chat_template"] = spec.chat_template;
    write_text_file(cfg_path, cfg.dump(2) + "\n");
  }
  write_st_modules(spec, dir);
  std::map<std::string, std::vector<SafetensorsTensor>> files;  // module dir ("" = the model's) -> tensors
  for (const PlannedTensor& t : tensors) {
    std::vector<SafetensorsTensor>& st = files[module_of(t.hf_name)];
    SafetensorsTensor x;
    x.name = module_of(t.hf_name).empty() ? t.hf_name : t.hf_name.substr(module_of(t.hf_name).size() + 1);
    if (spec.vision) x.name = vision_hf_name(spec, x.name);  // the text model under the multimodal model's name
    x.dtype = "F32";
    x.shape = t.shape;
    x.make = [&spec, t] {
      std::vector<float> v = hf_values(spec, t);
      std::vector<uint8_t> b(v.size() * 4);
      std::memcpy(b.data(), v.data(), b.size());
      return b;
    };
    st.push_back(std::move(x));
  }
  if (spec.family == Family::kGptOss) files[""] = gpt_oss_hf_tensors(spec);  // its experts fused, as transformers'
  if (spec.vision) {
    for (SafetensorsTensor& t : vision_hf_tensors(spec)) files[""].push_back(std::move(t));
    write_vision_preprocessor_config(spec, dir);
  }
  for (const auto& [module, st] : files)
    write_safetensors(join_path(module.empty() ? dir : join_path(dir, module), "model.safetensors"), st);
}

}  // namespace og::synth
