// write_gguf / write_hf: the two layouts of one synthetic spec. Tensors are
// produced and encoded one at a time while the file is written, so a
// benchmark-sized model never sits in memory whole.
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "format/safetensors.h"
#include "kernels/ops.h"
#include "synth/synth_internal.h"

namespace og::synth {

namespace {

const char* gguf_arch(Family f) {
  switch (f) {
    case Family::kLlama:
    case Family::kMistral:  // MistralForCausalLM converts through the llama path
      return "llama";
    case Family::kQwen2: return "qwen2";
    case Family::kQwen3: return "qwen3";
    case Family::kGemma3: return "gemma3";
  }
  return "llama";
}

// The dtype a GGUF tensor is stored in: 1-D tensors (norms, biases) stay F32, as
// the converter does. A 2-D weight whose rows are not whole blocks of the
// requested type falls back to Q8_0 (32-element blocks), then F16, the way
// llama.cpp's quantizer falls back for incompatible rows.
DType storage_dtype(const SynthSpec& s, const PlannedTensor& t) {
  if (t.shape.size() < 2) return DType::F32;
  DType want = s.weight_dtype;
  const int64_t cols = t.shape.back();
  if (cols % dtype_info(want).block == 0) return want;
  if (cols % 32 == 0) return DType::Q8_0;
  return DType::F16;
}

std::vector<uint8_t> encode(DType t, const std::vector<float>& v, int64_t cols, const std::string& name) {
  const int64_t rows = static_cast<int64_t>(v.size()) / cols;
  std::vector<uint8_t> out(static_cast<size_t>(rows * dtype_row_bytes(t, cols)));
  switch (t) {
    case DType::F32:
      std::memcpy(out.data(), v.data(), out.size());
      return out;
    case DType::F16:
      for (size_t k = 0; k < v.size(); ++k) {
        uint16_t h = f32_to_f16(v[k]);
        std::memcpy(out.data() + 2 * k, &h, 2);
      }
      return out;
    case DType::BF16:
      for (size_t k = 0; k < v.size(); ++k) {
        uint16_t h = f32_to_bf16(v[k]);
        std::memcpy(out.data() + 2 * k, &h, 2);
      }
      return out;
    default:
      break;
  }
  OG_CHECK(kernels::weight_dtype_supported(t), "synthetic model: tensor ", name, ": no quantizer for ",
           dtype_name(static_cast<uint32_t>(t)));
  const int64_t rb = dtype_row_bytes(t, cols);
  for (int64_t r = 0; r < rows; ++r) kernels::quantize_row(t, v.data() + r * cols, out.data() + r * rb, cols);
  return out;
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
    default: return 0;
  }
}

void add_hparams(const SynthSpec& s, GgufWriter& w) {
  const std::string a = gguf_arch(s.family);
  auto u32 = [](int64_t v) { return GgufValue::make_u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", GgufValue::make_string(a));
  w.set("general.name", GgufValue::make_string(cat("synthetic-", family_name(s.family))));
  w.set("general.file_type", GgufValue::make_u32(file_type(s.weight_dtype)));
  w.set("general.quantization_version", GgufValue::make_u32(2));
  w.set(a + ".context_length", u32(s.n_ctx));
  w.set(a + ".embedding_length", u32(s.d_model));
  w.set(a + ".block_count", u32(s.n_layers));
  w.set(a + ".feed_forward_length", u32(s.d_ff));
  w.set(a + ".attention.head_count", u32(s.n_heads));
  w.set(a + ".attention.head_count_kv", u32(s.n_kv_heads));
  w.set(a + ".attention.key_length", u32(s.head_dim));
  w.set(a + ".attention.value_length", u32(s.head_dim));
  w.set(a + ".rope.dimension_count", u32(s.head_dim));
  w.set(a + ".rope.freq_base", GgufValue::make_f32(static_cast<float>(s.rope_base)));
  w.set(a + ".attention.layer_norm_rms_epsilon", GgufValue::make_f32(static_cast<float>(s.rms_eps)));
  w.set(a + ".vocab_size", u32(n_vocab(s)));
  if (s.family == Family::kMistral && s.window > 0) {
    // llama.cpp's converter writes no window for Mistral and its "llama" arch
    // would ignore one; offgraph's loader honours this key so the GGUF and HF
    // layouts of a synthetic Mistral attend identically.
    w.set("llama.attention.sliding_window", u32(s.window));
  }
  if (s.family == Family::kGemma3) {
    w.set("gemma3.attention.sliding_window", u32(s.window));
    w.set("gemma3.attention.sliding_window_pattern", u32(s.sliding_pattern));
    w.set("gemma3.rope.freq_base_swa", GgufValue::make_f32(static_cast<float>(s.rope_base_local)));
  }
}

}  // namespace

void write_gguf(const SynthSpec& spec, const std::string& path) {
  std::vector<PlannedTensor> tensors = plan(spec);
  GgufWriter w;
  add_hparams(spec, w);
  add_gguf_tokenizer(spec, w);
  TokenizerInfo tok = tokenizer_info(spec);
  w.set("tokenizer.ggml.bos_token_id", GgufValue::make_u32(static_cast<uint32_t>(tok.bos)));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(static_cast<uint32_t>(tok.eos)));
  for (const PlannedTensor& t : tensors) {
    DType dt = storage_dtype(spec, t);
    w.add_tensor(t.gguf_name, dt, t.shape, GgufWriter::Producer([&spec, t, dt] {
                   return encode(dt, gguf_values(spec, t), t.shape.back(), t.gguf_name);
                 }));
  }
  w.write(path);
}

namespace {

nlohmann::ordered_json hf_config(const SynthSpec& s, const TokenizerInfo& tok) {
  static const char* kArch[] = {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "MistralForCausalLM",
                                "Gemma3ForCausalLM"};
  static const char* kType[] = {"llama", "qwen2", "qwen3", "mistral", "gemma3_text"};
  const int f = static_cast<int>(s.family);
  nlohmann::ordered_json c;
  c["architectures"] = {kArch[f]};
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
      c["hidden_act"] = "silu";
      if (s.window > 0) c["sliding_window"] = s.window;
      else c["sliding_window"] = nullptr;
      break;
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
      break;
    }
  }
  return c;
}

}  // namespace

void write_hf(const SynthSpec& spec, const std::string& dir) {
  std::vector<PlannedTensor> tensors = plan(spec);
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
  std::vector<SafetensorsTensor> st;
  for (const PlannedTensor& t : tensors) {
    SafetensorsTensor x;
    x.name = t.hf_name;
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
  write_safetensors(join_path(dir, "model.safetensors"), st);
}

}  // namespace og::synth
