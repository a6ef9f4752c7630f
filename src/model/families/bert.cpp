// Families "bert" and "nomic-bert": encoder embedding models. Post-norm
// blocks (x = LN(x + attn(x)); x = LN(x + mlp(x)), LayerNorm with bias),
// bidirectional attention over the whole input, token-type row 0 added to
// every embedding, a LayerNorm of the summed embeddings, no output head.
// bert (BERT, MiniLM, BGE): learned absolute positions, separate q/k/v with
// biases (or a fused attn_qkv), ungated MLP with biases and the exact (erf)
// GELU. nomic-bert: rotary positions (rotate-half), fused q/k/v without bias,
// a SwiGLU MLP without biases. GGUF as llama.cpp's converter writes them
// (<arch>.attention.layer_norm_epsilon, attention.causal, pooling_type,
// tokenizer.ggml.token_type_count); HF BertModel and NomicBertModel.
#include <cmath>

#include "base/error.h"
#include "model/families/common.h"

namespace og {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;

int64_t gguf_dim(const GgufFile& f, const std::string& key) {
  const std::optional<int64_t> v = f.get_int(key);
  OG_CHECK(v.has_value(), f.source_name(), ": missing required key ", key, " (a scalar)");
  OG_CHECK(*v > 0 && *v <= kMaxDim, f.source_name(), ": ", key, " = ", *v, " is out of range");
  return *v;
}

// The layer structure both archs share; rotary: nomic-bert's rope and SwiGLU MLP.
void encoder_layers(ModelConfig& c, int n_layers, int heads, int kv_heads, int64_t d_ff, bool rotary, double base) {
  const int head_dim = static_cast<int>(c.d_model / heads);
  c.layers.assign(static_cast<size_t>(n_layers), LayerConfig{});
  for (LayerConfig& L : c.layers) {
    L.n_heads = heads;
    L.n_kv_heads = kv_heads;
    L.head_dim_k = L.head_dim_v = head_dim;
    L.d_ff = d_ff;
    L.post_norm = true;
    L.attn_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    if (rotary) {
      L.rope_n_rot = head_dim;
      L.rope_interleaved = false;  // llama.cpp: NEOX for nomic-bert
      set_rope(L, base, RopeScaling{}, {});
      L.qkv_fused = true;
      L.activation = Activation::kSilu;
    } else {
      L.rope_n_rot = 0;
      L.rope_base = 0;
      L.activation = Activation::kGeluErf;
      L.ffn_gated = false;
      L.has_ffn_bias = true;
      L.has_qkv_bias = L.has_o_bias = true;
    }
  }
  c.layer_norm = true;
  c.has_embd_norm = true;
  c.has_output_norm = false;
  c.has_pos_embd = !rotary;
  c.causal = false;
}

void encoder_from_gguf(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  const std::string src = f.source_name();
  const std::string p = arch + ".";
  const bool rotary = arch == "nomic-bert";
  const int64_t n_layers = gguf_dim(f, p + "block_count");
  OG_CHECK(n_layers <= 4096, src, ": ", p, "block_count = ", n_layers, " is out of range");
  c.d_model = gguf_dim(f, p + "embedding_length");
  c.n_ctx = gguf_dim(f, p + "context_length");
  const int64_t d_ff = gguf_dim(f, p + "feed_forward_length");
  const int heads = static_cast<int>(gguf_dim(f, p + "attention.head_count"));
  const int kv_heads = static_cast<int>(f.get(p + "attention.head_count_kv") ? gguf_dim(f, p + "attention.head_count_kv")
                                                                              : heads);
  OG_CHECK(c.d_model % heads == 0, src, ": ", p, "embedding_length ", c.d_model, " is not divisible by ", p,
           "attention.head_count ", heads);
  OG_CHECK(heads % kv_heads == 0, src, ": ", p, "attention.head_count_kv ", kv_heads, " does not divide ", p,
           "attention.head_count ", heads);
  for (const char* k : {"attention.key_length", "attention.value_length"})
    if (auto v = f.get_int(p + k))
      OG_CHECK(*v == c.d_model / heads, src, ": ", p, k, " = ", *v, " is not supported (only embedding_length / head_count)");
  const std::optional<double> eps = f.get_float(p + "attention.layer_norm_epsilon");
  OG_CHECK(eps.has_value(), src, ": missing required key ", p, "attention.layer_norm_epsilon");
  c.eps = static_cast<float>(*eps);
  if (auto v = f.get_int(p + "moe_every_n_layers"); v && *v > 0)
    fail(src, ": ", p, "moe_every_n_layers = ", *v, ": mixture-of-experts encoders are not supported");
  if (auto v = f.get_int(p + "vocab_size")) {
    OG_CHECK(*v > 0 && *v <= INT32_MAX, src, ": ", p, "vocab_size = ", *v, " is out of range");
    c.n_vocab = static_cast<int32_t>(*v);
  }
  double base = 10000.0;
  if (rotary) {
    base = f.get_float(p + "rope.freq_base").value_or(10000.0);
    OG_CHECK(std::isfinite(base) && base > 1, src, ": ", p, "rope.freq_base = ", base, " must be > 1");
    OG_CHECK(gguf_rope_scaling(f, arch).type == RopeScaling::Type::kNone, src, ": ", p,
             "rope.scaling is not supported for nomic-bert");
    if (auto r = f.get_int(p + "rope.dimension_count"))
      OG_CHECK(*r == c.d_model / heads, src, ": ", p, "rope.dimension_count = ", *r,
               " is not supported (only the whole head, ", c.d_model / heads, ")");
  }
  encoder_layers(c, static_cast<int>(n_layers), heads, kv_heads, d_ff, rotary, base);
  for (int l = 0; l < c.n_layers(); ++l) {
    LayerConfig& L = c.layers[l];
    const std::string b = cat("blk.", l, ".");
    const bool fused = f.find(b + "attn_qkv.weight") != nullptr;
    OG_CHECK(fused || !rotary, src, ": missing tensor ", b, "attn_qkv.weight (nomic-bert has a fused q/k/v)");
    L.qkv_fused = fused;
    L.has_qkv_bias = f.find(b + (fused ? "attn_qkv.bias" : "attn_q.bias")) != nullptr;
    if (rotary) {
      L.has_o_bias = false;  // llama.cpp's nomic-bert has none; a file that holds one is refused
      OG_CHECK(f.find(b + "attn_output.bias") == nullptr && f.find(b + "ffn_up.bias") == nullptr, src, ": tensor ",
               b, "attn_output.bias / ffn_up.bias: nomic-bert biases outside q/k/v are not supported");
    }
  }
  // Token types: tokenizer.ggml.token_type_count (the converter's type_vocab_size), else the table's rows.
  if (auto n = f.get_int("tokenizer.ggml.token_type_count")) {
    OG_CHECK(*n >= 0 && *n <= 65536, src, ": tokenizer.ggml.token_type_count = ", *n, " is out of range");
    c.n_token_types = static_cast<int>(*n);
  } else if (const TensorInfo* t = f.find("token_types.weight"); t && t->shape.size() == 2) {
    c.n_token_types = static_cast<int>(t->shape[0]);
  }
  read_gguf_embedding(f, arch, c);  // pooling_type, attention.causal (default false here), dense
  if (c.pooling == Pooling::kUnset) {  // llama.cpp's default for an encoder: one vector per token
    c.pooling = Pooling::kNone;
    c.notes.push_back(p + "pooling_type is absent: one vector per token (pooling none), as llama.cpp");
  }
  OG_CHECK(c.dense.empty(), src, ": dense projections after an encoder are not supported");
  c.tied_output = false;
}

int hf_dim(const nlohmann::json& cfg, const char* key, const std::string& file) {
  const std::optional<int64_t> v = json_int(cfg, key, file);
  OG_CHECK(v.has_value(), file, ": missing required field ", key);
  OG_CHECK(*v > 0 && *v <= kMaxDim, file, ": ", key, " = ", *v, " is out of range");
  return static_cast<int>(*v);
}

void hf_vocab(const nlohmann::json& cfg, const std::string& file, ModelConfig& c) {
  if (auto v = json_int(cfg, "vocab_size", file)) {
    OG_CHECK(*v > 0 && *v <= INT32_MAX, file, ": vocab_size = ", *v, " is out of range");
    c.n_vocab = static_cast<int32_t>(*v);
  }
}

// HF BertModel (sentence-transformers' BERT, MiniLM, BGE checkpoints).
void bert_from_hf(const HfInput& in, ModelConfig& c) {
  const nlohmann::json& cfg = in.config;
  const std::string& file = in.file;
  c.d_model = hf_dim(cfg, "hidden_size", file);
  c.n_ctx = hf_dim(cfg, "max_position_embeddings", file);
  const int heads = hf_dim(cfg, "num_attention_heads", file);
  OG_CHECK(c.d_model % heads == 0, file, ": hidden_size ", c.d_model, " is not divisible by num_attention_heads ",
           heads);
  const std::string act = json_string(cfg, "hidden_act", file).value_or("gelu");
  OG_CHECK(act == "gelu", file, ": hidden_act '", act, "' is not supported (only gelu, the erf form)");
  const std::string pos = json_string(cfg, "position_embedding_type", file).value_or("absolute");
  OG_CHECK(pos == "absolute", file, ": position_embedding_type '", pos, "' is not supported (only absolute)");
  for (const char* k : {"is_decoder", "add_cross_attention"})
    OG_CHECK(!json_bool(cfg, k, file).value_or(false), file, ": ", k, " = true is not supported (an encoder only)");
  c.eps = static_cast<float>(json_number(cfg, "layer_norm_eps", file).value_or(1e-12));
  hf_vocab(cfg, file, c);
  encoder_layers(c, hf_dim(cfg, "num_hidden_layers", file), heads, heads, hf_dim(cfg, "intermediate_size", file),
                 false, 0);
  c.n_token_types = static_cast<int>(json_int(cfg, "type_vocab_size", file).value_or(2));
  OG_CHECK(c.n_token_types >= 0 && c.n_token_types <= 65536, file, ": type_vocab_size = ", c.n_token_types,
           " is out of range");
  c.hf_names = ModelConfig::HfNames::kBert;
}

// HF NomicBertModel (nomic-embed-text): GPT-2-style field names.
void nomic_from_hf(const HfInput& in, ModelConfig& c) {
  const nlohmann::json& cfg = in.config;
  const std::string& file = in.file;
  c.d_model = hf_dim(cfg, "n_embd", file);
  c.n_ctx = hf_dim(cfg, "n_positions", file);
  const int heads = hf_dim(cfg, "n_head", file);
  OG_CHECK(c.d_model % heads == 0, file, ": n_embd ", c.d_model, " is not divisible by n_head ", heads);
  const std::string act = json_string(cfg, "activation_function", file).value_or("swiglu");
  OG_CHECK(act == "swiglu", file, ": activation_function '", act, "' is not supported (only swiglu)");
  if (auto r = json_number(cfg, "rotary_emb_fraction", file); r && *r != 1.0)
    fail(file, ": rotary_emb_fraction = ", *r, " is not supported (only 1.0)");
  for (const char* k : {"rotary_emb_interleaved", "qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias", "prenorm",
                        "causal"})
    OG_CHECK(!json_bool(cfg, k, file).value_or(false), file, ": ", k, " = true is not supported");
  if (json_has(cfg, "rotary_emb_scale_base") && !cfg.at("rotary_emb_scale_base").is_null())
    fail(file, ": rotary_emb_scale_base is not supported");
  c.eps = static_cast<float>(json_number(cfg, "layer_norm_epsilon", file).value_or(1e-12));
  hf_vocab(cfg, file, c);
  const double base = json_number(cfg, "rotary_emb_base", file).value_or(10000.0);
  OG_CHECK(std::isfinite(base) && base > 1, file, ": rotary_emb_base = ", base, " must be > 1");
  const int64_t d_ff = json_has(cfg, "n_inner") && !cfg.at("n_inner").is_null() ? hf_dim(cfg, "n_inner", file)
                                                                                 : 4 * c.d_model;
  encoder_layers(c, hf_dim(cfg, "n_layer", file), heads, heads, d_ff, true, base);
  c.n_token_types = static_cast<int>(json_int(cfg, "type_vocab_size", file).value_or(2));
  OG_CHECK(c.n_token_types >= 0 && c.n_token_types <= 65536, file, ": type_vocab_size = ", c.n_token_types,
           " is out of range");
  c.hf_names = ModelConfig::HfNames::kNomicBert;
}

// The GGUF keys of an encoder; og::Error when its layers differ or it holds
// what the arch cannot express.
void encoder_to_gguf(const ModelConfig& c, GgufWriter& w, const std::string& arch) {
  const std::string what = "cannot write " + c.architecture + " as GGUF: ";
  const LayerConfig& L0 = c.layers.at(0);
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    OG_CHECK(L.n_heads == L0.n_heads && L.n_kv_heads == L0.n_kv_heads && L.d_ff == L0.d_ff &&
                 L.rope_base == L0.rope_base,
             what, "layer ", l, " differs from layer 0 (heads, feed-forward width or RoPE base)");
  }
  OG_CHECK(c.dense.empty(), what, "dense projections after an encoder are not supported");
  const std::string p = arch + ".";
  auto u32 = [](int64_t v) { return GgufValue::make_u32(static_cast<uint32_t>(v)); };
  w.set("general.architecture", GgufValue::make_string(arch));
  w.set(p + "context_length", u32(c.n_ctx));
  w.set(p + "embedding_length", u32(c.d_model));
  w.set(p + "feed_forward_length", u32(L0.d_ff));
  w.set(p + "block_count", u32(c.n_layers()));
  w.set(p + "attention.head_count", u32(L0.n_heads));
  if (L0.n_kv_heads != L0.n_heads) w.set(p + "attention.head_count_kv", u32(L0.n_kv_heads));
  w.set(p + "attention.layer_norm_epsilon", GgufValue::make_f32(c.eps));
  w.set(p + "attention.causal", GgufValue::make_bool(c.causal));
  if (L0.rope_n_rot > 0) w.set(p + "rope.freq_base", GgufValue::make_f32(static_cast<float>(L0.rope_base)));
  write_gguf_embedding(c, arch, w, false);
  w.set("tokenizer.ggml.token_type_count", u32(c.n_token_types));
}

void bert_to_gguf(const ModelConfig& c, GgufWriter& w) { encoder_to_gguf(c, w, "bert"); }
void nomic_to_gguf(const ModelConfig& c, GgufWriter& w) { encoder_to_gguf(c, w, "nomic-bert"); }

}  // namespace

const FamilySpec& bert_family() {
  static const FamilySpec spec{"bert", {"bert"}, {"BertModel"}, encoder_from_gguf, bert_from_hf, bert_to_gguf, false};
  return spec;
}

const FamilySpec& nomic_bert_family() {
  static const FamilySpec spec{"nomic-bert",     {"nomic-bert"}, {"NomicBertModel"}, encoder_from_gguf, nomic_from_hf,
                               nomic_to_gguf, false};
  return spec;
}

}  // namespace og
