// Phi-3 (family phi3): longrope's two RoPE tables and attention factor (the
// short factors for a run whose context is at most the original one, the long
// ones beyond; GGUF and HF agree, and forward.cpp matches the naive model on
// both), the fused q/k/v and gate/up matrices as row views through export and
// quantize (q4_k_m raises attn_qkv to Q5_K as llama.cpp), and bad fused
// shapes and factor lengths refused with one line naming the tensor or field.
#include <gtest/gtest.h>

#include <cmath>

#include "file_edit.h"
#include "format/gguf.h"
#include "model/gguf_convert.h"
#include "model/quant_mix.h"
#include "naive_forward.h"
#include "synth_fixture.h"
#include "tokenizer/gguf_vocab_export.h"

namespace og {
namespace {

using synth::Family;

#define EXPECT_ERROR_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "error was: '" << (msg) << "', expected it to mention: " << (part)

constexpr int64_t kOrig = 64;  // the synthetic longrope model's original context (n_ctx 2048)

synth::SynthSpec longrope_spec() {
  synth::SynthSpec s = synth::tiny_spec(Family::kPhi3);
  s.longrope_original = kOrig;
  return s;
}
std::string longrope_gguf() { return test::synth_path(longrope_spec(), false, "phi3-longrope"); }
std::string longrope_hf() { return test::synth_path(longrope_spec(), true, "phi3-longrope"); }

// Logits of every row, in a reference cache of `capacity` positions (the run's context).
std::vector<float> logits_of(const Model& m, const std::vector<int32_t>& toks, int64_t capacity) {
  KvPolicy p;
  p.max_capacity = capacity;
  p.initial_capacity = capacity;
  auto c = make_kv_cache(KvKind::kReference, m.kv_geometry(), p);
  return test::all_logits(m, *c, toks, 7);
}

std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Phi3, LongropeReadsTheSameFromGgufAndHf) {
  std::unique_ptr<Model> g = Model::load(longrope_gguf());
  std::unique_ptr<Model> h = Model::load(longrope_hf());
  for (const Model* m : {g.get(), h.get()}) {
    const LayerConfig& L = m->config().layers[0];
    EXPECT_EQ(L.rope_scaling.type, RopeScaling::Type::kLongrope);
    EXPECT_EQ(L.rope_long_after, kOrig);
    ASSERT_EQ(L.rope_inv_freq_long.size(), L.rope_inv_freq.size());
    // sqrt(1 + ln(2048 / 64) / ln(64)), the converter's and transformers' attention factor
    EXPECT_NEAR(L.rope_attn_factor, std::sqrt(1 + std::log(2048.0 / kOrig) / std::log(double{kOrig})), 1e-6);
    EXPECT_TRUE(L.qkv_fused);
    EXPECT_TRUE(L.gate_up_fused);
  }
  EXPECT_EQ(g->config().layers[0].rope_inv_freq_long, h->config().layers[0].rope_inv_freq_long);
  const std::unique_ptr<GgufFile> f = GgufFile::open(longrope_gguf());
  EXPECT_EQ(f->find("rope_factors_long.weight")->shape, std::vector<int64_t>({8}));
  EXPECT_EQ(f->get_int("phi3.rope.scaling.original_context_length"), std::optional<int64_t>(kOrig));
  const std::vector<int32_t> toks = test::test_tokens(20, g->n_vocab(), 3);
  for (int64_t capacity : {kOrig, 4 * kOrig})
    EXPECT_LE(test::max_rel_err(logits_of(*g, toks, capacity), logits_of(*h, toks, capacity)), 1e-5) << capacity;
}

// Phi-4-mini's shape of phi3: half of each head rotates (partial_rotary_factor
// 0.5: 8 of 16 dims, 4 factors), tied embeddings, longrope.
synth::SynthSpec partial_spec() {
  synth::SynthSpec s = longrope_spec();
  s.partial_rotary = 0.5;
  s.tied = true;
  return s;
}

// The run's context picks the table: at most the original context -> short
// factors, beyond -> long (llama.cpp's rule); both against the naive model,
// full and partial rotation; the partial model's GGUF and HF agree.
TEST(Phi3, RunContextPicksShortOrLongFactors) {
  for (const std::string& path : {longrope_gguf(), test::synth_path(partial_spec(), false, "phi3-partial")}) {
    std::unique_ptr<Model> m = Model::load(path);
    std::unique_ptr<GgufFile> f = GgufFile::open(path);
    const std::vector<int32_t> toks = test::test_tokens(24, m->n_vocab(), 5);
    const std::vector<float> short_run = logits_of(*m, toks, kOrig), long_run = logits_of(*m, toks, kOrig + 1);
    EXPECT_LE(test::max_rel_err(short_run, test::naive_forward(m->config(), *f, toks, false)), 1e-5) << path;
    EXPECT_LE(test::max_rel_err(long_run, test::naive_forward(m->config(), *f, toks, true)), 1e-5) << path;
    EXPECT_GT(test::max_rel_err(short_run, long_run), 1e-3) << path;
  }
  std::unique_ptr<Model> g = Model::load(test::synth_path(partial_spec(), false, "phi3-partial"));
  std::unique_ptr<Model> h = Model::load(test::synth_path(partial_spec(), true, "phi3-partial"));
  EXPECT_EQ(g->config().layers[0].rope_n_rot, 8);
  EXPECT_EQ(h->config().layers[0].rope_n_rot, 8);
  EXPECT_TRUE(h->config().tied_output);
  const std::vector<int32_t> toks = test::test_tokens(20, g->n_vocab(), 6);
  EXPECT_LE(test::max_rel_err(logits_of(*g, toks, 4 * kOrig), logits_of(*h, toks, 4 * kOrig)), 1e-5);
}

ConvertOptions options(const std::string& dtype, const std::string& hf_dir = "") {
  ConvertOptions o;
  EXPECT_TRUE(weight_type_from_name(dtype, &o.type)) << dtype;
  if (!hf_dir.empty()) o.metadata = tokenizer_gguf_keys(hf_dir);
  return o;
}

// Export writes the fused matrices and the factor tensors as the converter
// does; q4_k_m takes attn_qkv to Q5_K; both files run near the F32 model.
TEST(Phi3, ExportAndQuantizeKeepTheFusedMatricesAndFactors) {
  test::TempDir dir;
  const std::string e = dir.path("export-f32.gguf"), q = dir.path("q8_0.gguf");
  export_hf_to_gguf(longrope_hf(), e, options("f32", longrope_hf()));
  quantize_gguf(longrope_gguf(), q, options("q8_0"));
  std::unique_ptr<Model> ref = Model::load(longrope_gguf());
  const std::vector<int32_t> toks = test::test_tokens(16, ref->n_vocab(), 7);
  for (const std::string& path : {e, q}) {
    std::unique_ptr<GgufFile> f = GgufFile::open(path);
    ASSERT_NE(f->find("blk.1.attn_qkv.weight"), nullptr) << path;
    EXPECT_EQ(f->find("blk.1.ffn_up.weight")->shape, std::vector<int64_t>({256, 64})) << path;
    EXPECT_EQ(f->find("blk.1.attn_q.weight"), nullptr) << path;
    EXPECT_EQ(f->find("blk.1.ffn_gate.weight"), nullptr) << path;
    EXPECT_NE(f->find("rope_factors_short.weight"), nullptr) << path;
    std::unique_ptr<Model> m = Model::load(path);
    EXPECT_LE(test::max_rel_err(logits_of(*m, toks, 4 * kOrig), logits_of(*ref, toks, 4 * kOrig)),
              path == e ? 1e-5 : 0.05)
        << path;
  }
  // q4_k_m / q5_k_m raise a fused attn_qkv one step (rows of whole 256-blocks; the tiny model's fall back).
  WeightType t;
  ASSERT_TRUE(weight_type_from_name("q4_k_m", &t));
  EXPECT_EQ(TensorTypePicker(t, 32, 0, true).pick("blk.3.attn_qkv.weight", 3072), DType::Q5_K);
  ASSERT_TRUE(weight_type_from_name("q5_k_m", &t));
  EXPECT_EQ(TensorTypePicker(t, 32, 0, true).pick("blk.3.attn_qkv.weight", 3072), DType::Q6_K);
}

std::string gguf_error(const test::GgufEdit& e) {
  test::TempDir dir;
  test::rewrite_gguf(longrope_gguf(), dir.path("m.gguf"), e);
  return load_error(dir.path("m.gguf"));
}

// Rewrites tensor `name` with its first `rows` rows (of `cols`), or a 1-D tensor with `rows` values.
test::GgufEdit truncated(const std::string& name, int64_t rows) {
  test::GgufEdit e;
  e.replace = [name, rows](const TensorInfo& t, GgufWriter& w) {
    if (t.name != name) return false;
    const int64_t cols = t.shape.size() == 2 ? t.shape[1] : 1;
    std::vector<int64_t> shape = t.shape.size() == 2 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows};
    w.add_tensor(t.name, DType::F32, shape, std::vector<uint8_t>(t.data, t.data + rows * cols * 4));
    return true;
  };
  return e;
}

TEST(Phi3BadFiles, GgufFusedShapesAndFactors) {
  EXPECT_ERROR_HAS(gguf_error(truncated("blk.0.attn_qkv.weight", 100)), "blk.0.attn_qkv.weight has shape [100, 64]");
  EXPECT_ERROR_HAS(gguf_error(truncated("blk.1.ffn_up.weight", 128)), "blk.1.ffn_up.weight has shape [128, 64]");
  EXPECT_ERROR_HAS(gguf_error(truncated("rope_factors_long.weight", 6)), "rope_factors_long.weight has shape [6]");
  EXPECT_ERROR_HAS(gguf_error(truncated("rope_factors_short.weight", 7)), "rope_factors_short.weight has shape [7]");
  test::GgufEdit one;
  one.drop_tensors = {"rope_factors_short.weight"};
  EXPECT_ERROR_HAS(gguf_error(one), "rope_factors_short.weight is missing");
  test::GgufEdit zero;  // a factor that would divide by zero
  zero.replace = [](const TensorInfo& t, GgufWriter& w) {
    if (t.name != "rope_factors_long.weight") return false;
    w.add_tensor(t.name, DType::F32, t.shape, test::f32_bytes(std::vector<float>(8, 0.0f)));
    return true;
  };
  EXPECT_ERROR_HAS(gguf_error(zero), "rope_factors_long.weight holds 0");
}

std::string hf_error(const test::HfEdit& e) {
  test::TempDir dir;
  test::rewrite_hf(longrope_hf(), dir.path("hf"), e);
  return load_error(dir.path("hf"));
}

TEST(Phi3BadFiles, HfFactorsAndFusedTensors) {
  test::HfEdit short_len;
  short_len.config = [](nlohmann::json& c) { c["rope_scaling"]["long_factor"].erase(0); };
  EXPECT_ERROR_HAS(hf_error(short_len), "rope_scaling.long_factor has 7 values, expected 8");
  test::HfEdit not_number;
  not_number.config = [](nlohmann::json& c) { c["rope_scaling"]["short_factor"][2] = "x"; };
  EXPECT_ERROR_HAS(hf_error(not_number), "short_factor holds \"x\"");
  test::HfEdit no_orig;
  no_orig.config = [](nlohmann::json& c) { c.erase("original_max_position_embeddings"); };
  EXPECT_ERROR_HAS(hf_error(no_orig), "original_max_position_embeddings");
  test::HfEdit missing;
  missing.drop_tensors = {"model.layers.1.mlp.gate_up_proj.weight"};
  EXPECT_ERROR_HAS(hf_error(missing), "missing tensor model.layers.1.mlp.gate_up_proj.weight");
}

}  // namespace
}  // namespace og
