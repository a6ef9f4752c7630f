// The synthetic model writer: for every family, the GGUF and HF layouts of one
// spec hold the same tensors once the documented conversions (llama/mistral
// q/k row permutation, gemma's folded 1 + w norms) are undone; metadata and
// config fields follow MODEL-FORMATS.md; output is deterministic.
#include "synth/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "kernels/ops.h"
#include "model/gguf_export.h"
#include "synth/synth_internal.h"
#include "temp_dir.h"

namespace og {
namespace {

namespace fs = std::filesystem;
using synth::Family;

const Family kAll[] = {Family::kLlama, Family::kQwen2, Family::kQwen3, Family::kMistral, Family::kGemma3};

std::string temp_path(const std::string& name) {
  std::string p = og::test::temp_path("og_synth_" + name);
  fs::remove_all(p);
  return p;
}

std::vector<float> as_floats(const TensorInfo& t) {
  EXPECT_EQ(t.type_id, 0u) << t.name;
  std::vector<float> v(t.nbytes / 4);
  std::memcpy(v.data(), t.data, t.nbytes);
  return v;
}

// GGUF rows (interleaved pairs per head) back to HF rotate-half order.
std::vector<float> unpermute(const std::vector<float>& g, int64_t n_heads, int64_t hd, int64_t cols) {
  std::vector<float> out(g.size());
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t i = 0; i < hd / 2; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        int64_t hf_row = h * hd + j * (hd / 2) + i, gguf_row = h * hd + 2 * i + j;
        for (int64_t c = 0; c < cols; ++c) out[hf_row * cols + c] = g[gguf_row * cols + c];
      }
  return out;
}

std::string gguf_name_of(const std::string& hf, Family f) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string p = "model.layers.";
  EXPECT_EQ(hf.rfind(p, 0), 0u) << hf;
  size_t dot = hf.find('.', p.size());
  std::string layer = hf.substr(p.size(), dot - p.size()), rest = hf.substr(dot + 1);
  static const std::pair<const char*, const char*> kMap[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  std::string g;
  if (rest == "post_attention_layernorm.weight")
    g = f == Family::kGemma3 ? "post_attention_norm.weight" : "ffn_norm.weight";
  for (const auto& [h, gg] : kMap)
    if (rest == h) g = gg;
  EXPECT_FALSE(g.empty()) << hf;
  return "blk." + layer + "." + g;
}

class SynthFamily : public testing::TestWithParam<Family> {};

TEST_P(SynthFamily, GgufAndHfHoldTheSameTensors) {
  const Family f = GetParam();
  synth::SynthSpec spec = synth::tiny_spec(f);
  const std::string name = synth::family_name(f);
  const std::string gguf_path = temp_path(name + ".gguf"), hf_dir = temp_path(name + "-hf");
  synth::write_gguf(spec, gguf_path);
  synth::write_hf(spec, hf_dir);
  auto g = GgufFile::open(gguf_path);
  HfCheckpoint hf = HfCheckpoint::open(hf_dir);
  ASSERT_EQ(g->tensors().size(), hf.weights->tensors().size());
  const bool permuted = f == Family::kLlama || f == Family::kMistral;
  int n_norms = 0, n_permuted = 0;
  for (const TensorInfo& ht : hf.weights->tensors()) {
    const TensorInfo* gt = g->find(gguf_name_of(ht.name, f));
    ASSERT_TRUE(gt) << ht.name;
    ASSERT_EQ(gt->shape, ht.shape) << ht.name;
    std::vector<float> hv = as_floats(ht), gv = as_floats(*gt);
    const bool is_qk = ht.name.find("q_proj.weight") != std::string::npos ||
                       ht.name.find("k_proj.weight") != std::string::npos;
    if (permuted && is_qk) {
      const int64_t heads = ht.name.find("q_proj") != std::string::npos ? spec.n_heads : spec.n_kv_heads;
      EXPECT_NE(gv, hv) << ht.name;  // the permutation really happened
      gv = unpermute(gv, heads, spec.head_dim, ht.shape[1]);
      ++n_permuted;
    }
    if (f == Family::kGemma3 && ht.name.find("norm.weight") != std::string::npos) {
      for (float& x : gv) x -= 1.0f;  // GGUF stores 1 + w
      ++n_norms;
      for (float x : hv) EXPECT_LT(std::fabs(x), 1.0f) << ht.name;  // HF w near 0
    } else if (ht.name.find("norm") != std::string::npos) {
      for (float x : hv) EXPECT_NEAR(x, 1.0f, 0.6f) << ht.name;
    }
    ASSERT_EQ(gv.size(), hv.size());
    for (size_t k = 0; k < gv.size(); ++k) ASSERT_NEAR(gv[k], hv[k], 1e-6f) << ht.name << "[" << k << "]";
  }
  if (permuted) {
    EXPECT_EQ(n_permuted, 2 * spec.n_layers);
  }
  if (f == Family::kGemma3) {
    EXPECT_EQ(n_norms, 6 * spec.n_layers + 1);  // 4 per block + q/k norms + final
  }
}

TEST_P(SynthFamily, MetadataAndConfigFollowTheFormats) {
  const Family f = GetParam();
  synth::SynthSpec spec = synth::tiny_spec(f);
  const std::string name = synth::family_name(f);
  const std::string gguf_path = temp_path(name + "-meta.gguf"), hf_dir = temp_path(name + "-meta-hf");
  synth::write_gguf(spec, gguf_path);
  synth::write_hf(spec, hf_dir);
  auto g = GgufFile::open(gguf_path);
  const std::string arch = f == Family::kMistral ? "llama" : name;
  EXPECT_EQ(*g->get_string("general.architecture"), arch);
  EXPECT_EQ(*g->get_int(arch + ".embedding_length"), spec.d_model);
  EXPECT_EQ(*g->get_int(arch + ".block_count"), spec.n_layers);
  EXPECT_EQ(*g->get_int(arch + ".attention.head_count_kv"), spec.n_kv_heads);
  EXPECT_EQ(*g->get_int(arch + ".attention.key_length"), spec.head_dim);
  EXPECT_EQ(*g->get_int(arch + ".rope.dimension_count"), spec.head_dim);
  EXPECT_FLOAT_EQ(static_cast<float>(*g->get_float(arch + ".rope.freq_base")), static_cast<float>(spec.rope_base));
  EXPECT_EQ(*g->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(g->find("token_embd.weight")->shape, (std::vector<int64_t>{512, spec.d_model}));
  EXPECT_EQ(g->find("output.weight") != nullptr, !spec.tied);
  HfCheckpoint hf = HfCheckpoint::open(hf_dir);
  const std::string cf = "config.json";
  EXPECT_EQ(*json_int(hf.config, "hidden_size", cf), spec.d_model);
  EXPECT_EQ(*json_int(hf.config, "num_key_value_heads", cf), spec.n_kv_heads);
  EXPECT_EQ(*json_int(hf.config, "head_dim", cf), spec.head_dim);
  EXPECT_EQ(*json_bool(hf.config, "tie_word_embeddings", cf), spec.tied);
  EXPECT_EQ(hf.weights->find("lm_head.weight") != nullptr, !spec.tied);
  EXPECT_FALSE(hf.tokenizer_json_path.empty());
  EXPECT_TRUE(hf.generation_config.has_value());
  switch (f) {
    case Family::kMistral:
      EXPECT_EQ(*g->get_int("llama.attention.sliding_window"), 8);
      EXPECT_EQ(*json_int(hf.config, "sliding_window", cf), 8);
      EXPECT_EQ(hf.config["architectures"][0], "MistralForCausalLM");
      break;
    case Family::kGemma3:
      EXPECT_EQ(*g->get_int("gemma3.attention.sliding_window"), 8);
      EXPECT_EQ(*g->get_float("gemma3.rope.freq_base_swa"), 10000.0);
      EXPECT_EQ(*json_string(hf.config, "model_type", cf), "gemma3_text");
      EXPECT_EQ(hf.config["layer_types"][5], "full_attention");
      EXPECT_EQ(hf.config["layer_types"][4], "sliding_attention");
      EXPECT_EQ(*json_number(hf.config, "rope_local_base_freq", cf), 10000.0);
      break;
    case Family::kQwen2:
      EXPECT_TRUE(g->find("blk.1.attn_v.bias"));
      EXPECT_TRUE(hf.weights->find("model.layers.1.self_attn.k_proj.bias"));
      break;
    case Family::kQwen3:
      EXPECT_NE(spec.n_heads * spec.head_dim, spec.d_model);
      EXPECT_EQ(g->find("blk.0.attn_q.weight")->shape, (std::vector<int64_t>{spec.n_heads * spec.head_dim, spec.d_model}));
      EXPECT_EQ(g->find("blk.0.attn_k_norm.weight")->shape, (std::vector<int64_t>{spec.head_dim}));
      break;
    case Family::kLlama:
      EXPECT_FALSE(g->get("llama.attention.sliding_window"));
      break;
    case Family::kGemma4:  // not in kAll: tests/model/gemma4_test.cpp covers its files
      break;
    case Family::kQwen3Moe:
    case Family::kMixtral:
    case Family::kPhi3:
    case Family::kGptOss:
    case Family::kBert:
    case Family::kNomicBert:  // no keys of their own checked here (their own tests do)
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(All, SynthFamily, testing::ValuesIn(kAll),
                         [](const testing::TestParamInfo<Family>& i) { return synth::family_name(i.param); });

// The q/k permutation (model/gguf_export.h) is the real converter's: it maps the real
// stories260K HF q/k rows onto the rows of the real stories260K GGUF.
TEST(Synth, PermutationMatchesTheRealConversion) {
  const std::string models = std::string(OG_TESTDATA_DIR) + "/models";
  auto g = GgufFile::open(models + "/stories260K/stories260K.gguf");
  HfCheckpoint hf = HfCheckpoint::open(models + "/stories260K-hf");
  for (int l = 0; l < 5; ++l) {
    for (const auto& [hn, gn, heads] : {std::tuple{"q_proj", "attn_q", 8}, std::tuple{"k_proj", "attn_k", 4}}) {
      std::vector<float> hv = as_floats(*hf.weights->find(cat("model.layers.", l, ".self_attn.", hn, ".weight")));
      std::vector<float> gv = as_floats(*g->find(cat("blk.", l, ".", gn, ".weight")));
      EXPECT_EQ(permute_rows_to_interleaved(hv, heads, 8, 64), gv) << l << " " << hn;
      EXPECT_EQ(unpermute(gv, heads, 8, 64), hv);
    }
  }
}

TEST(Synth, DeterministicAndSeeded) {
  synth::SynthSpec spec = synth::tiny_spec(Family::kQwen2);
  const std::string a = temp_path("det-a.gguf"), b = temp_path("det-b.gguf"), c = temp_path("det-c.gguf");
  synth::write_gguf(spec, a);
  synth::write_gguf(spec, b);
  spec.seed = 2;
  synth::write_gguf(spec, c);
  EXPECT_EQ(read_text_file(a), read_text_file(b));
  EXPECT_NE(read_text_file(a), read_text_file(c));
}

TEST(Synth, WeightsAreScaledByFanIn) {
  synth::SynthSpec spec = synth::tiny_spec(Family::kLlama);
  spec.d_ff = 512;
  const std::string p = temp_path("scale.gguf");
  synth::write_gguf(spec, p);
  auto g = GgufFile::open(p);
  for (const char* n : {"blk.0.ffn_up.weight", "blk.0.ffn_down.weight"}) {
    std::vector<float> v = as_floats(*g->find(n));
    double ss = 0;
    for (float x : v) ss += double(x) * x;
    const double fan_in = std::string(n).find("down") != std::string::npos ? 512 : 64;
    EXPECT_NEAR(std::sqrt(ss / v.size()) * std::sqrt(fan_in), 1.0, 0.05) << n;
  }
}

TEST(Synth, QuantizedGgufUsesTheKernelsQuantizer) {
  synth::SynthSpec spec = synth::tiny_spec(Family::kLlama);
  spec.d_model = 256;
  spec.head_dim = 64;
  spec.d_ff = 256;
  spec.weight_dtype = DType::Q4_K;
  const std::string p = temp_path("q4k.gguf");
  synth::write_gguf(spec, p);
  auto g = GgufFile::open(p);
  const TensorInfo* up = g->find("blk.0.ffn_up.weight");
  EXPECT_EQ(up->type_name, "q4_k");
  EXPECT_EQ(g->find("blk.0.attn_norm.weight")->type_name, "f32");  // 1-D stays F32
  EXPECT_EQ(*g->get_int("general.file_type"), 15);
  // Dequantized values track the F32 ones.
  synth::SynthSpec f32 = spec;
  f32.weight_dtype = DType::F32;
  const std::string pf = temp_path("q4k-ref.gguf");
  synth::write_gguf(f32, pf);
  auto gf = GgufFile::open(pf);
  std::vector<float> ref = as_floats(*gf->find("blk.0.ffn_up.weight")), deq(256);
  double err = 0, ss = 0;
  for (int64_t r = 0; r < 256; ++r) {
    kernels::dequantize_row(DType::Q4_K, up->data + r * 144, deq.data(), 256);
    for (int k = 0; k < 256; ++k) {
      err += std::pow(deq[k] - ref[r * 256 + k], 2);
      ss += std::pow(ref[r * 256 + k], 2);
    }
  }
  EXPECT_LT(std::sqrt(err / ss), 0.15);
  // Rows that are not whole q4_k blocks (tiny d_model 64) fall back to q8_0.
  synth::SynthSpec tiny = synth::tiny_spec(Family::kGemma3);
  tiny.weight_dtype = DType::Q4_K;
  synth::write_gguf(tiny, p);
  EXPECT_EQ(GgufFile::open(p)->find("blk.0.ffn_up.weight")->type_name, "q8_0");
  tiny.weight_dtype = DType::F16;
  synth::write_gguf(tiny, p);
  EXPECT_EQ(GgufFile::open(p)->find("blk.0.ffn_down.weight")->type_name, "f16");
}

TEST(Synth, Llama3Tokenizer) {
  synth::SynthSpec spec = synth::tiny_spec(Family::kLlama);
  spec.tokenizer = "llama3";
  spec.d_model = 32;
  spec.n_heads = 2;
  spec.n_kv_heads = 1;
  spec.n_layers = 1;
  spec.d_ff = 32;
  spec.tied = true;
  spec.weight_dtype = DType::Q8_0;
  const std::string p = temp_path("l3.gguf");
  synth::write_gguf(spec, p);
  auto g = GgufFile::open(p);
  EXPECT_EQ(*g->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*g->get_string("tokenizer.ggml.pre"), "llama-bpe");
  auto tokens = *g->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 128256u);
  EXPECT_EQ(tokens[128000], "<|begin_of_text|>");
  EXPECT_EQ(g->get_int_array("tokenizer.ggml.token_type")->at(128009), 3);
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.merges")->at(0), "\xc4\xa0 \xc4\xa0");
  EXPECT_EQ(*g->get_int("tokenizer.ggml.bos_token_id"), 128000);
  EXPECT_TRUE(g->get_string("tokenizer.chat_template").has_value());
  EXPECT_EQ(g->find("token_embd.weight")->shape, (std::vector<int64_t>{128256, 32}));
  EXPECT_EQ(synth::llama32_1b_spec().d_model, 2048);
  EXPECT_EQ(synth::llama32_1b_spec().tokenizer, "llama3");
}

TEST(Synth, BadSpecsAreErrors) {
  synth::SynthSpec s = synth::tiny_spec(Family::kLlama);
  s.n_kv_heads = 3;
  EXPECT_THROW(synth::write_gguf(s, temp_path("bad.gguf")), Error);
  s = synth::tiny_spec(Family::kLlama);
  s.tokenizer = "klingon";
  EXPECT_THROW(synth::write_gguf(s, temp_path("bad.gguf")), Error);
  s = synth::tiny_spec(Family::kLlama);
  s.head_dim = 15;
  EXPECT_THROW(synth::write_hf(s, temp_path("bad-hf")), Error);
  s = synth::tiny_spec(Family::kLlama);
  EXPECT_THROW(synth::write_gguf(s, "/nonexistent-dir/x.gguf"), Error);
  synth::Family f;
  EXPECT_TRUE(synth::family_from_name("gemma3", &f));
  EXPECT_EQ(f, Family::kGemma3);
  EXPECT_FALSE(synth::family_from_name("gpt5", &f));
}

}  // namespace
}  // namespace og
