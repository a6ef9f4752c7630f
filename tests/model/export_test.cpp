// HF checkpoint -> GGUF export and GGUF -> GGUF quantize (model/gguf_convert.h):
// every synthetic family (tied and untied, RoPE scaling) exported to F32 runs
// like the HF directory it came from; the real stories260K export reproduces
// the reference continuation; quantized exports stay within the kernel tests'
// KL budgets and q4_k_m picks the documented dtype per tensor; the cache
// geometry keys are written, read and checked; bad inputs are refused and a
// failed write never leaves a file under the output name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "file_edit.h"
#include "model/gguf_convert.h"
#include "model/gguf_export.h"
#include "model/kv_keys.h"
#include "synth_fixture.h"
#include "tokenizer/gguf_vocab_export.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

namespace fs = std::filesystem;
using synth::Family;

ConvertOptions options(const std::string& hf_dir, const std::string& dtype) {
  ConvertOptions o;
  EXPECT_TRUE(weight_type_from_name(dtype, &o.type)) << dtype;
  o.metadata = tokenizer_gguf_keys(hf_dir);
  return o;
}

ConvertSummary export_to(const std::string& hf_dir, const std::string& out, const std::string& dtype = "f32") {
  return export_hf_to_gguf(hf_dir, out, options(hf_dir, dtype));
}

std::vector<float> logits_of(const Model& m, const std::vector<int32_t>& toks) {
  auto c = make_kv_cache(KvKind::kReference, m.kv_geometry(), KvPolicy{});
  return test::all_logits(m, *c, toks, 8);
}

std::vector<int32_t> greedy_of(const Model& m, const std::vector<int32_t>& prompt, size_t total) {
  auto c = make_kv_cache(KvKind::kReference, m.kv_geometry(), KvPolicy{});
  return test::greedy(m, *c, prompt, total);
}

// The exported file and its HF source: same logits (1e-5) and greedy tokens.
void expect_same_model(const std::string& hf_dir, const std::string& gguf) {
  std::unique_ptr<Model> h = Model::load(hf_dir);
  std::unique_ptr<Model> g = Model::load(gguf);
  ASSERT_EQ(g->n_vocab(), h->n_vocab());
  const std::vector<int32_t> toks = test::test_tokens(24, h->n_vocab(), 7);
  EXPECT_LE(test::max_rel_err(logits_of(*g, toks), logits_of(*h, toks)), 1e-5) << gguf;
  const std::vector<int32_t> prompt(toks.begin(), toks.begin() + 5);
  EXPECT_EQ(greedy_of(*g, prompt, 20), greedy_of(*h, prompt, 20)) << gguf;
}

class ExportFamily : public ::testing::TestWithParam<Family> {};

TEST_P(ExportFamily, F32ExportRunsLikeTheHfDirectory) {
  test::TempDir dir;
  const std::string hf = test::synth_hf(GetParam());
  const ConvertSummary s = export_to(hf, dir.path("m.gguf"));
  EXPECT_EQ(s.dtype_counts.count("f32"), 1u);
  EXPECT_EQ(s.dtype_counts.size(), 1u);
  expect_same_model(hf, dir.path("m.gguf"));
  // The tokenizer came along: the GGUF one encodes as the HF one does.
  std::unique_ptr<Tokenizer> th = Tokenizer::from_path(hf);
  std::unique_ptr<Tokenizer> tg = Tokenizer::from_gguf(*GgufFile::open(dir.path("m.gguf")));
  for (const char* text : {"Once upon a time, there was a little girl.", "Hello  world\nnew line", "x"})
    EXPECT_EQ(tg->encode(text, true, false), th->encode(text, true, false)) << text;
}

INSTANTIATE_TEST_SUITE_P(All, ExportFamily, ::testing::ValuesIn(test::all_families()),
                         [](const auto& info) { return test::family_param_name(info.param); });

TEST(Export, TiedAndUntiedEmbeddings) {
  test::TempDir dir;
  synth::SynthSpec tied = synth::tiny_spec(Family::kLlama);
  tied.tied = true;
  const std::string hf_tied = test::synth_path(tied, true, "llama-tied");
  export_to(hf_tied, dir.path("tied.gguf"));
  EXPECT_EQ(GgufFile::open(dir.path("tied.gguf"))->find("output.weight"), nullptr);
  expect_same_model(hf_tied, dir.path("tied.gguf"));
  export_to(test::synth_hf(Family::kLlama), dir.path("untied.gguf"));  // tiny llama is untied
  EXPECT_NE(GgufFile::open(dir.path("untied.gguf"))->find("output.weight"), nullptr);
}

TEST(Export, Llama3RopeScalingBecomesRopeFreqs) {
  test::TempDir dir;
  test::HfEdit e;
  e.config = [](nlohmann::json& c) {
    c["rope_scaling"] = {{"rope_type", "llama3"},       {"factor", 8.0},
                         {"low_freq_factor", 1.0},      {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 64}};
  };
  test::rewrite_hf(test::synth_hf(Family::kLlama), dir.path("hf"), e);
  export_to(dir.path("hf"), dir.path("m.gguf"));
  std::unique_ptr<GgufFile> g = GgufFile::open(dir.path("m.gguf"));
  ASSERT_NE(g->find("rope_freqs.weight"), nullptr);
  EXPECT_EQ(g->find("rope_freqs.weight")->shape, (std::vector<int64_t>{8}));
  expect_same_model(dir.path("hf"), dir.path("m.gguf"));
}

TEST(Export, GemmaLinearScalingOnGlobalLayers) {
  test::TempDir dir;
  test::HfEdit e;
  e.config = [](nlohmann::json& c) { c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}}; };
  test::rewrite_hf(test::synth_hf(Family::kGemma3), dir.path("hf"), e);
  export_to(dir.path("hf"), dir.path("m.gguf"));
  std::unique_ptr<GgufFile> g = GgufFile::open(dir.path("m.gguf"));
  EXPECT_EQ(*g->get_string("gemma3.rope.scaling.type"), "linear");
  EXPECT_EQ(*g->get_float("gemma3.rope.scaling.factor"), 8.0);
  EXPECT_EQ(*g->get_int("gemma3.attention.sliding_window_pattern"), 6);
  expect_same_model(dir.path("hf"), dir.path("m.gguf"));
}

// Gemma 4's tokenizer.json becomes a "gemma4" vocabulary with its merges (not
// a "llama" one, whose score-driven merging and space prefix are not Gemma 4's).
TEST(Export, Gemma4TokenizerBecomesGemma4) {
  test::TempDir dir;
  const std::string hf = test::synth_hf(Family::kGemma4);
  export_to(hf, dir.path("g.gguf"));
  std::unique_ptr<GgufFile> g = GgufFile::open(dir.path("g.gguf"));
  EXPECT_EQ(*g->get_string("tokenizer.ggml.model"), "gemma4");
  EXPECT_FALSE(g->get_string_array("tokenizer.ggml.merges")->empty());
  EXPECT_EQ(g->get("tokenizer.ggml.scores"), nullptr);
  std::unique_ptr<Tokenizer> th = Tokenizer::from_path(hf);
  std::unique_ptr<Tokenizer> tg = Tokenizer::from_gguf(*g);
  EXPECT_EQ(tg->kind(), "gguf gemma4 (BPE over UTF-8)");
  for (const char* text : {"  two leading spaces", "a\n\n\nb\n", "x y  z", "Once upon a time"})
    EXPECT_EQ(tg->encode(text, true, false), th->encode(text, true, false)) << text;
}

// A byte-level BPE tokenizer.json (Llama 3.2's) becomes a "gpt2" vocabulary
// with the llama-bpe pre-tokenizer, special ids, add_bos and the chat template.
TEST(Export, ByteLevelBpeTokenizerBecomesGpt2) {
  test::TempDir dir;
  synth::SynthSpec s = synth::tiny_spec(Family::kLlama);
  s.tokenizer = "llama3";
  s.d_model = 32;
  s.head_dim = 8;
  const std::string hf = test::synth_path(s, true, "llama-bpe");
  export_to(hf, dir.path("b.gguf"));
  std::unique_ptr<GgufFile> g = GgufFile::open(dir.path("b.gguf"));
  EXPECT_EQ(*g->get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*g->get_string("tokenizer.ggml.pre"), "llama-bpe");
  EXPECT_GT(g->get_string_array("tokenizer.ggml.merges")->size(), 280000u);  // 280147 listed, repeats dropped
  EXPECT_EQ(*g->get_int("tokenizer.ggml.bos_token_id"), 128000);
  EXPECT_EQ(*g->get_int("tokenizer.ggml.eot_token_id"), 128009);
  EXPECT_EQ(*g->get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_NE(g->get_string("tokenizer.chat_template")->find("<|start_header_id|>"), std::string::npos);
  std::unique_ptr<Tokenizer> th = Tokenizer::from_path(hf);
  std::unique_ptr<Tokenizer> tg = Tokenizer::from_gguf(*g);
  for (const char* text : {"Hello, world! 12345 numbers", "  spaces\n\nand\ttabs", "héllo wörld 日本語 🙂",
                           "<|eot_id|> is text here"})
    EXPECT_EQ(tg->encode(text, true, false), th->encode(text, true, false)) << text;
  expect_same_model(hf, dir.path("b.gguf"));
}

// The real stories260K HF checkpoint, exported, gives REFERENCE_OUTPUTS.md
// case A from the prompt its own (exported) tokenizer makes.
TEST(Export, Stories260KReproducesTheReference) {
  test::TempDir dir;
  const std::string hf = std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf";
  export_to(hf, dir.path("s.gguf"));
  std::unique_ptr<Model> m = Model::load(dir.path("s.gguf"));
  std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(*GgufFile::open(dir.path("s.gguf")));
  const std::vector<int32_t> prompt = tok->encode("Once upon a time", true, false);
  ASSERT_EQ(prompt, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  const std::vector<int32_t> want = {
      1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410,
      408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388,
      426, 338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310};
  EXPECT_EQ(greedy_of(*m, prompt, want.size()), want);
  // Its vocabulary matches the one llama.cpp's converter wrote from tok512.model.
  std::unique_ptr<Tokenizer> ref =
      Tokenizer::from_gguf(*GgufFile::open(std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf"));
  for (const char* text : {"Once upon a time, Lily saw a big dog.", "The cat sat on the mat. It was happy!"})
    EXPECT_EQ(tok->encode(text, true, false), ref->encode(text, true, false)) << text;
}

// Shapes whose rows are whole 256-element super-blocks (as the kernel quant tests use).
synth::SynthSpec quant_spec(Family f, int layers) {
  synth::SynthSpec s = synth::tiny_spec(f);
  s.d_model = 256;
  s.n_heads = 8;
  s.n_kv_heads = f == Family::kGemma3 ? 2 : 4;
  s.head_dim = 32;
  s.d_ff = 512;
  s.n_layers = layers;
  return s;
}

double mean_kl(const Model& ref, const Model& q) {
  const std::vector<int32_t> toks = test::test_tokens(48, ref.n_vocab(), 13);
  const std::vector<float> a = logits_of(ref, toks), b = logits_of(q, toks);
  const int64_t V = ref.n_vocab();
  double sum = 0;
  for (size_t t = 0; t < toks.size(); ++t) {
    const float* x = a.data() + t * V;
    const float* y = b.data() + t * V;
    double mx = x[0], my = y[0], sx = 0, sy = 0;
    for (int64_t i = 0; i < V; ++i) mx = std::max(mx, double(x[i])), my = std::max(my, double(y[i]));
    for (int64_t i = 0; i < V; ++i) sx += std::exp(x[i] - mx), sy += std::exp(y[i] - my);
    for (int64_t i = 0; i < V; ++i) {
      const double lp = x[i] - mx - std::log(sx), lq = y[i] - my - std::log(sy);
      sum += std::exp(lp) * (lp - lq);
    }
  }
  return sum / toks.size();
}

// The kernel quant tests' mean-KL budgets (tests/model/quant_test.cpp) per dtype.
struct KlBudget {
  const char* dtype;
  double max_kl;
};
const KlBudget kKl[] = {{"f16", 2e-6}, {"bf16", 1e-4}, {"q8_0", 1.5e-3}, {"q6_k", 1e-2},  {"q5_k", 4e-2},
                        {"q5_0", 5e-2}, {"q5_1", 4e-2}, {"q4_k", 0.15},  {"q4_0", 0.15}, {"q4_1", 0.15},
                        {"q4_k_m", 0.15}, {"q5_k_m", 4e-2}};

class ExportQuant : public ::testing::TestWithParam<KlBudget> {};

TEST_P(ExportQuant, LogitsStayWithinTheDtypeBudget) {
  test::TempDir dir;
  const std::string hf = test::synth_path(quant_spec(Family::kLlama, 2), true, "quant-llama");
  export_to(hf, dir.path("f32.gguf"));
  export_to(hf, dir.path("q.gguf"), GetParam().dtype);
  std::unique_ptr<Model> ref = Model::load(dir.path("f32.gguf"));
  std::unique_ptr<Model> q = Model::load(dir.path("q.gguf"));
  const double kl = mean_kl(*ref, *q);
  std::printf("[measured] export %s: mean KL %.3g\n", GetParam().dtype, kl);
  EXPECT_LE(kl, GetParam().max_kl);
  // quantize from the F32 export gives the same file contents as exporting straight to the type.
  ConvertOptions o;
  ASSERT_TRUE(weight_type_from_name(GetParam().dtype, &o.type));
  quantize_gguf(dir.path("f32.gguf"), dir.path("q2.gguf"), o);
  std::unique_ptr<GgufFile> a = GgufFile::open(dir.path("q.gguf")), b = GgufFile::open(dir.path("q2.gguf"));
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (const TensorInfo& t : a->tensors()) {
    const TensorInfo* u = b->find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->type_id, t.type_id) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.nbytes), 0) << t.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ExportQuant, ::testing::ValuesIn(kKl),
                         [](const auto& info) { return std::string(info.param.dtype); });

std::string type_of(const GgufFile& g, const std::string& name) {
  const TensorInfo* t = g.find(name);
  return t ? t->type_name : "missing";
}

// README.md's q4_k_m table on 16 layers: attn_v and ffn_down of layers
// 0, 1, 4, 7, 10, 13, 14, 15 in Q6_K (the others Q4_K), the output (here the
// tied embedding) Q6_K, every other matrix Q4_K, 1-D tensors F32.
TEST(ExportMix, Q4KMPicksTheDtypePerTensor) {
  test::TempDir dir;
  synth::SynthSpec s = quant_spec(Family::kLlama, 16);
  s.tied = true;
  s.d_model = 256;
  s.d_ff = 256;
  const std::string hf = test::synth_path(s, true, "mix-llama16");
  export_to(hf, dir.path("m.gguf"), "q4_k_m");
  std::unique_ptr<GgufFile> g = GgufFile::open(dir.path("m.gguf"));
  const std::set<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int l = 0; l < 16; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const std::string want = more.count(l) ? "q6_k" : "q4_k";
    EXPECT_EQ(type_of(*g, b + "attn_v.weight"), want) << l;
    EXPECT_EQ(type_of(*g, b + "ffn_down.weight"), want) << l;
    for (const char* n : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(type_of(*g, b + n), "q4_k") << b << n;
    EXPECT_EQ(type_of(*g, b + "attn_norm.weight"), "f32");
  }
  EXPECT_EQ(type_of(*g, "token_embd.weight"), "q6_k");  // tied: it is also the output
  EXPECT_EQ(*g->get_int("general.file_type"), 15);
  // Untied: the output is Q6_K, the embedding keeps the base type.
  synth::SynthSpec u = s;
  u.tied = false;
  u.n_layers = 2;
  const std::string hfu = test::synth_path(u, true, "mix-llama2-untied");
  export_to(hfu, dir.path("u.gguf"), "q4_k_m");
  std::unique_ptr<GgufFile> gu = GgufFile::open(dir.path("u.gguf"));
  EXPECT_EQ(type_of(*gu, "output.weight"), "q6_k");
  EXPECT_EQ(type_of(*gu, "token_embd.weight"), "q4_k");
  // q5_k_m: the same promotions over a Q5_K base.
  export_to(hfu, dir.path("u5.gguf"), "q5_k_m");
  std::unique_ptr<GgufFile> g5 = GgufFile::open(dir.path("u5.gguf"));
  EXPECT_EQ(type_of(*g5, "blk.1.attn_v.weight"), "q6_k");  // 2 layers: layer 1 gets more bits
  EXPECT_EQ(type_of(*g5, "blk.0.attn_v.weight"), "q5_k");
  EXPECT_EQ(type_of(*g5, "blk.0.attn_q.weight"), "q5_k");
}

// Rows that are not whole 256-blocks fall back: Q4_K -> Q5_0, Q6_K -> Q8_0, then F16.
TEST(ExportMix, RowsThatAreNotWholeSuperBlocksFallBack) {
  test::TempDir dir;
  const std::string hf = std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf";  // d 64, ff 172
  const ConvertSummary s = export_to(hf, dir.path("s.gguf"), "q4_k_m");
  std::unique_ptr<GgufFile> g = GgufFile::open(dir.path("s.gguf"));
  EXPECT_EQ(type_of(*g, "blk.2.attn_q.weight"), "q5_0");  // Q4_K rows of 64 -> Q5_0
  EXPECT_EQ(type_of(*g, "blk.0.attn_v.weight"), "q5_0");
  EXPECT_EQ(type_of(*g, "blk.2.attn_v.weight"), "q8_0");  // promoted to Q6_K (5 layers: 2 and 4) -> Q8_0
  EXPECT_EQ(type_of(*g, "blk.0.ffn_down.weight"), "f16");  // 172 is not a multiple of 32
  EXPECT_EQ(type_of(*g, "token_embd.weight"), "q8_0");     // the tied output, 64 columns
  EXPECT_GT(s.fallbacks, 0);
  std::unique_ptr<Model> m = Model::load(dir.path("s.gguf"));
  EXPECT_EQ(m->n_vocab(), 512);
}

TEST(ExportKv, GeometryKeysAreWrittenAndChecked) {
  test::TempDir dir;
  const std::string hf = test::synth_hf(Family::kGemma3);
  ConvertOptions o = options(hf, "f32");
  o.prefill_chunk_size = 96;
  export_hf_to_gguf(hf, dir.path("g.gguf"), o);
  std::unique_ptr<Model> m = Model::load(dir.path("g.gguf"));
  std::unique_ptr<GgufFile> g = GgufFile::open(dir.path("g.gguf"));
  const std::optional<KvGeometry> stored = read_kv_geometry_keys(*g);
  ASSERT_TRUE(stored.has_value());
  const KvGeometry want = m->kv_geometry();
  ASSERT_EQ(stored->caches.size(), want.caches.size());
  for (size_t c = 0; c < want.caches.size(); ++c) {
    EXPECT_EQ(stored->caches[c].window, want.caches[c].window);
    EXPECT_EQ(stored->caches[c].n_kv_heads, want.caches[c].n_kv_heads);
  }
  EXPECT_EQ(stored->layer_cache, want.layer_cache);
  EXPECT_EQ(m->config().prefill_chunk_size, 96);
  // A contradicting key is refused, naming both values.
  test::GgufEdit e;
  e.set_keys.emplace_back(kKvSlidingWindow, [] {
    std::vector<GgufValue> w;
    for (int c = 0; c < 6; ++c) w.push_back(GgufValue::make_u32(c == 5 ? 0 : 16));
    return GgufValue::make_array(GgufType::U32, std::move(w));
  }());
  test::rewrite_gguf(dir.path("g.gguf"), dir.path("bad.gguf"), e);
  try {
    Model::load(dir.path("bad.gguf"));
    FAIL() << "a contradicting offgraph.kv key was accepted";
  } catch (const Error& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("offgraph.kv.sliding_window[0] = 16"), std::string::npos) << msg;
    EXPECT_NE(msg.find("give 8"), std::string::npos) << msg;
  }
  // Files without the keys keep working.
  EXPECT_FALSE(read_kv_geometry_keys(*GgufFile::open(test::synth_gguf(Family::kGemma3))).has_value());
  Model::load(test::synth_gguf(Family::kGemma3));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExportBadInputs, AreRefusedWithAMessage) {
  test::TempDir dir;
  const std::string hf = test::synth_hf(Family::kQwen2);
  const std::string out = dir.path("o.gguf");
  EXPECT_NE(error_of([&] { export_to(dir.path("missing"), out); }), "");
  // A partial directory: no weights.
  fs::create_directories(dir.path("partial"));
  fs::copy_file(hf + "/config.json", dir.path("partial/config.json"));
  EXPECT_NE(error_of([&] { export_hf_to_gguf(dir.path("partial"), out, ConvertOptions{}); }), "");
  // Unknown architecture.
  test::HfEdit arch;
  arch.config = [](nlohmann::json& c) { c["architectures"] = {"FalconForCausalLM"}; };
  test::rewrite_hf(hf, dir.path("arch"), arch);
  EXPECT_NE(error_of([&] { export_to(dir.path("arch"), out); }).find("FalconForCausalLM"), std::string::npos);
  // A tensor of the wrong shape.
  test::HfEdit shape;
  shape.drop_tensors = {"model.layers.0.mlp.up_proj.weight"};
  shape.add.push_back({"model.layers.0.mlp.up_proj.weight", "F32", {64, 64}, std::vector<uint8_t>(64 * 64 * 4), {}});
  test::rewrite_hf(hf, dir.path("shape"), shape);
  EXPECT_NE(error_of([&] { export_to(dir.path("shape"), out); }).find("up_proj.weight has shape [64, 64]"),
            std::string::npos);
  // An output in a missing directory, and an existing output without overwrite.
  EXPECT_NE(error_of([&] { export_to(hf, dir.path("no/such/dir/o.gguf")); }).find("does not exist"),
            std::string::npos);
  export_to(hf, out);
  EXPECT_NE(error_of([&] { export_to(hf, out); }).find("already exists"), std::string::npos);
  ConvertOptions o = options(hf, "q8_0");
  o.overwrite = true;
  export_hf_to_gguf(hf, out, o);
  EXPECT_EQ(GgufFile::open(out)->find("blk.0.attn_q.weight")->type_name, "q8_0");
  // Requantizing is refused unless allowed.
  ConvertOptions q;
  ASSERT_TRUE(weight_type_from_name("q4_0", &q.type));
  EXPECT_NE(error_of([&] { quantize_gguf(out, dir.path("r.gguf"), q); }).find("already quantized"),
            std::string::npos);
  q.allow_requantize = true;
  quantize_gguf(out, dir.path("r.gguf"), q);
  EXPECT_EQ(GgufFile::open(dir.path("r.gguf"))->find("blk.0.attn_q.weight")->type_name, "q4_0");
}

TEST(ExportBadInputs, AFullDiskIsAnErrorNamingTheOutput) {
  if (!fs::exists("/dev/full")) GTEST_FAIL() << "/dev/full is missing on this machine";
  const std::string msg = error_of([&] { export_to(test::synth_hf(Family::kLlama), "/dev/full"); });
  EXPECT_NE(msg.find("/dev/full"), std::string::npos) << msg;
  EXPECT_NE(msg.find("write failed"), std::string::npos) << msg;
}

// A write that fails part-way leaves nothing under the output name, and no temporary file.
TEST(ExportBadInputs, AnInterruptedWriteLeavesNoFile) {
  test::TempDir dir;
  ConvertOptions o = options(test::synth_hf(Family::kLlama), "f32");
  int seen = 0;
  o.on_tensor = [&](const ConvertProgress&) {
    if (++seen == 5) throw Error("interrupted");
  };
  EXPECT_EQ(error_of([&] { export_hf_to_gguf(test::synth_hf(Family::kLlama), dir.path("o.gguf"), o); }),
            "interrupted");
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

}  // namespace
}  // namespace og
