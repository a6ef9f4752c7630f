// Mixture-of-experts layers (qwen3moe, mixtral): routing as llama.cpp and
// transformers define it, the grouped step against its plain twin on random
// weights (f32 and repacked q8_0) and the expert bytes each reads, experts
// left mapped or copied at load
// (same logits, copied bytes without them), quantize and export of the 3-D expert
// stacks (the router stays f32), unnormalised weights written back, and every
// bad expert field or tensor refused with a message naming it.
#include <gtest/gtest.h>

#include "file_edit.h"
#include "format/gguf.h"
#include "model/gguf_convert.h"
#include "model/loader.h"
#include "model/moe.h"
#include "synth_fixture.h"
#include "tokenizer/gguf_vocab_export.h"

namespace og {
namespace {

using synth::Family;

#define EXPECT_ERROR_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "error was: '" << (msg) << "', expected it to mention: " << (part)

std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MoeRoute, SoftmaxThenTopKThenRenormalise) {
  LayerConfig L;
  L.n_experts = 4;
  L.n_experts_used = 2;
  std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};  // a tie: the lower index ranks first
  MoeRouting r;
  moe_route(L, logits.data(), 1, r);
  EXPECT_EQ(r.expert[0], 1);
  EXPECT_EQ(r.expert[1], 3);
  EXPECT_NEAR(r.weight[0], 0.5f, 1e-6);
  EXPECT_NEAR(r.weight[1], 0.5f, 1e-6);
  L.expert_weights_norm = false;  // the softmax probabilities over all four
  logits = {1.0f, 3.0f, 2.0f, 0.0f};
  moe_route(L, logits.data(), 1, r);
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1.0;
  EXPECT_EQ(r.expert[0], 1);
  EXPECT_EQ(r.expert[1], 2);
  EXPECT_NEAR(r.weight[0], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(r.weight[1], std::exp(2.0) / z, 1e-6);
}

// Rows of N(0, 1) values [n, d].
std::vector<float> random_rows(int64_t n, int64_t d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(n * d));
  for (float& v : x) v = nd(rng);
  return x;
}

void expect_grouped_equals_plain(const std::string& path, bool repack) {
  GgufModelSource m = read_gguf_model(path);
  Weights w = bind_weights(m.config, *m.file);
  HugePageBuffer copy;
  if (repack) copy = place_weights_in_huge_pages(w, false, true);
  const int64_t d = m.config.d_model;
  for (int l = 0; l < m.config.n_layers(); ++l) {
    const LayerConfig& L = m.config.layers[l];
    ASSERT_GT(L.n_experts, 0);
    const LayerWeights& lw = w.layers[l];
    const int64_t expert = lw.w_gate_exps[0].nbytes() + lw.w_up_exps[0].nbytes() + lw.w_down_exps[0].nbytes();
    for (int64_t n : {1, 2, 3, 7, 16, 33}) {
      const std::vector<float> x = random_rows(n, d, static_cast<uint32_t>(n * 7 + l));
      std::vector<float> grouped(static_cast<size_t>(n * d)), plain(static_cast<size_t>(n * d));
      const int64_t b0 = moe_expert_bytes_read();
      moe_ffn(L, lw, x.data(), n, d, grouped.data());
      const int64_t b1 = moe_expert_bytes_read();
      moe_ffn_plain(L, lw, x.data(), n, d, plain.data());
      EXPECT_LE(test::max_rel_err(grouped, plain), 1e-6) << path << " layer " << l << " rows " << n;
      // Grouped: each routed expert once (k for one row, at most every expert);
      // the plain twin: once per row and chosen expert.
      const int64_t k = L.n_experts_used, grouped_bytes = b1 - b0;
      EXPECT_EQ(moe_expert_bytes_read() - b1, n * k * expert);
      EXPECT_EQ(grouped_bytes % expert, 0);
      EXPECT_GE(grouped_bytes, k * expert);
      EXPECT_LE(grouped_bytes, std::min<int64_t>(n * k, L.n_experts) * expert);
      if (n == 1) {
        EXPECT_EQ(grouped_bytes, k * expert);
      }
    }
  }
}

TEST(MoeFfn, GroupedEqualsPlainTwinOnRandomWeights) {
  for (Family f : {Family::kQwen3Moe, Family::kMixtral}) {
    expect_grouped_equals_plain(test::synth_gguf(f), false);
    synth::SynthSpec q8 = synth::tiny_spec(f);
    q8.weight_dtype = DType::Q8_0;  // repacked into the matmul layout (Q8_0_R on x86)
    expect_grouped_equals_plain(test::synth_path(q8, false, std::string(synth::family_name(f)) + "-q8"), true);
  }
}

TEST(MoeFfn, ManyExpertsFewUsedAndEveryExpertUsed) {
  synth::SynthSpec s = synth::tiny_spec(Family::kQwen3Moe);
  s.n_experts = 32;
  s.n_experts_used = 4;
  s.n_layers = 1;
  expect_grouped_equals_plain(test::synth_path(s, false, "qwen3moe-32x4"), false);
  s.n_experts = 4;
  s.n_experts_used = 4;
  expect_grouped_equals_plain(test::synth_path(s, false, "qwen3moe-4x4"), false);
}

std::vector<float> logits_of(const std::string& path, const std::vector<int32_t>& toks) {
  std::unique_ptr<Model> m = Model::load(path);
  auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  return test::all_logits(*m, *c, toks, 8);
}

TEST(MoeFiles, UnnormalisedWeightsRoundTripThroughGguf) {
  synth::SynthSpec s = synth::tiny_spec(Family::kQwen3Moe);
  s.expert_weights_norm = false;  // norm_topk_prob false (transformers' default)
  const std::string g = test::synth_path(s, false, "qwen3moe-unnorm");
  const std::string h = test::synth_path(s, true, "qwen3moe-unnorm");
  EXPECT_EQ(GgufFile::open(g)->get_bool("qwen3moe.expert_weights_norm"), std::optional<bool>(false));
  EXPECT_FALSE(Model::load(g)->config().layers[0].expert_weights_norm);
  const std::vector<int32_t> toks = test::test_tokens(12, 512, 4);
  const std::vector<float> a = logits_of(g, toks), b = logits_of(h, toks);
  EXPECT_LE(test::max_rel_err(a, b), 1e-5);
  EXPECT_GT(test::max_rel_err(a, logits_of(test::synth_gguf(Family::kQwen3Moe), toks)), 1e-3);
}

// Experts stay in the mapped file by default (the dense part is copied), are
// copied with --experts-in-memory, and the logits agree with --mmap's (same
// layouts: equal; repacked experts: within rounding); the copied bytes exclude
// the experts exactly.
TEST(MoeFiles, ExpertsStayMappedByDefault) {
  synth::SynthSpec q8 = synth::tiny_spec(Family::kQwen3Moe);
  q8.weight_dtype = DType::Q8_0;  // repacked (Q8_0_R on x86) when copied
  synth::SynthSpec mx = synth::tiny_spec(Family::kGptOss);
  mx.weight_dtype = DType::MXFP4;  // experts MXFP4 (MXFP4_R when copied), the rest F32
  const std::vector<int32_t> toks = test::test_tokens(12, 512, 5);
  for (const std::string& path :
       {test::synth_gguf(Family::kQwen3Moe), test::synth_gguf(Family::kMixtral),
        test::synth_path(q8, false, "qwen3moe-q8"), test::synth_path(mx, false, "gpt-oss-mxfp4")}) {
    auto run = [&](bool mmap_only, bool experts_in_memory, WeightResidency* r) {
      LoadOptions o;
      o.mmap_only = mmap_only;
      o.experts_in_memory = experts_in_memory;
      std::unique_ptr<Model> m = Model::load(path, o);
      *r = m->weight_residency();
      auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
      return test::all_logits(*m, *c, toks, 8);
    };
    WeightResidency mapped, copied, mm;
    const std::vector<float> a = run(false, false, &mapped), b = run(false, true, &copied), c = run(true, false, &mm);
    EXPECT_GT(mapped.mapped_expert_bytes, 0) << path;
    EXPECT_GT(mapped.copied_bytes, 0) << path;
    EXPECT_EQ(mapped.mapped_other_bytes, 0) << path;
    EXPECT_EQ(copied.mapped_expert_bytes, 0) << path;
    EXPECT_EQ(copied.copied_bytes, mapped.copied_bytes + mapped.mapped_expert_bytes) << path;
    EXPECT_EQ(mm.copied_bytes, 0) << path;
    EXPECT_EQ(mm.mapped_expert_bytes, mapped.mapped_expert_bytes) << path;
    EXPECT_LE(test::max_rel_err(a, b), 1e-5) << path;
    EXPECT_LE(test::max_rel_err(a, c), 1e-5) << path;
    if (path == test::synth_gguf(Family::kQwen3Moe)) {  // f32: no layout changes anywhere
      EXPECT_EQ(a, b);
      EXPECT_EQ(a, c);
    }
  }
}

ConvertOptions options(const std::string& dtype, const std::string& hf_dir = "") {
  ConvertOptions o;
  EXPECT_TRUE(weight_type_from_name(dtype, &o.type)) << dtype;
  if (!hf_dir.empty()) o.metadata = tokenizer_gguf_keys(hf_dir);
  return o;
}

// Quantize and export write the expert stacks in the weight type (3-D, one
// tensor per role) and keep the router f32; the logits stay near f32's.
TEST(MoeFiles, QuantizeAndExportConvertTheExpertStacks) {
  test::TempDir dir;
  for (Family f : {Family::kQwen3Moe, Family::kMixtral}) {
    const std::string q = dir.path(std::string(synth::family_name(f)) + "-q8.gguf");
    const std::string e = dir.path(std::string(synth::family_name(f)) + "-export-q8.gguf");
    quantize_gguf(test::synth_gguf(f), q, options("q8_0"));
    export_hf_to_gguf(test::synth_hf(f), e, options("q8_0", test::synth_hf(f)));
    for (const std::string& path : {q, e}) {
      std::unique_ptr<GgufFile> file = GgufFile::open(path);
      const TensorInfo* router = file->find("blk.0.ffn_gate_inp.weight");
      const TensorInfo* up = file->find("blk.1.ffn_up_exps.weight");
      ASSERT_TRUE(router && up) << path;
      EXPECT_EQ(router->type_id, static_cast<uint32_t>(DType::F32)) << path;
      EXPECT_EQ(up->type_id, static_cast<uint32_t>(DType::Q8_0)) << path;
      EXPECT_EQ(up->shape.size(), 3u) << path;
      const std::vector<int32_t> toks = test::test_tokens(16, 512, 6);
      EXPECT_LE(test::max_rel_err(logits_of(path, toks), logits_of(test::synth_gguf(f), toks)), 0.05) << path;
    }
    // The two q8_0 files hold the same bytes' worth of model: same logits.
    const std::vector<int32_t> toks = test::test_tokens(10, 512, 8);
    EXPECT_LE(test::max_rel_err(logits_of(q, toks), logits_of(e, toks)), 1e-5);
  }
}

std::string gguf_error(Family f, const test::GgufEdit& e) {
  test::TempDir dir;
  test::rewrite_gguf(test::synth_gguf(f), dir.path("m.gguf"), e);
  return load_error(dir.path("m.gguf"));
}

TEST(MoeBadFiles, GgufExpertFieldsAndTensors) {
  const auto u32 = [](uint32_t v) { return GgufValue::make_u32(v); };
  const std::pair<const char*, GgufValue> keys[] = {
      {"qwen3moe.expert_used_count", u32(9)},     {"qwen3moe.expert_count", u32(0)},
      {"qwen3moe.expert_count", u32(100000)},      {"qwen3moe.expert_shared_count", u32(1)},
      {"qwen3moe.expert_gating_func", u32(2)},     {"qwen3moe.leading_dense_block_count", u32(1)},
      {"qwen3moe.expert_weights_scale", GgufValue::make_f32(2.5f)},
  };
  for (const auto& [key, value] : keys) {
    test::GgufEdit e;
    e.set_keys = {{key, value}};
    EXPECT_ERROR_HAS(gguf_error(Family::kQwen3Moe, e), key);
  }
  test::GgufEdit no_width;
  no_width.drop_keys = {"qwen3moe.expert_feed_forward_length"};
  EXPECT_ERROR_HAS(gguf_error(Family::kQwen3Moe, no_width), "qwen3moe.expert_feed_forward_length");
  test::GgufEdit no_used;
  no_used.drop_keys = {"llama.expert_used_count"};
  EXPECT_ERROR_HAS(gguf_error(Family::kMixtral, no_used), "llama.expert_used_count");
  test::GgufEdit missing;
  missing.drop_tensors = {"blk.1.ffn_down_exps.weight"};
  EXPECT_ERROR_HAS(gguf_error(Family::kMixtral, missing), "missing tensor blk.1.ffn_down_exps.weight");
  test::GgufEdit shape;  // 7 experts' worth of rows where the file declares 8
  shape.replace = [](const TensorInfo& t, GgufWriter& w) {
    if (t.name != "blk.0.ffn_gate_exps.weight") return false;
    const size_t bytes = t.nbytes / 8 * 7;
    w.add_tensor(t.name, DType::F32, {7, t.shape[1], t.shape[2]}, std::vector<uint8_t>(t.data, t.data + bytes));
    return true;
  };
  EXPECT_ERROR_HAS(gguf_error(Family::kQwen3Moe, shape), "blk.0.ffn_gate_exps.weight has shape [7, 32, 64]");
  test::GgufEdit dense_arch;  // an arch whose experts offgraph does not run
  dense_arch.set_keys = {{"general.architecture", GgufValue::make_string("qwen3")}};
  const std::unique_ptr<GgufFile> src = GgufFile::open(test::synth_gguf(Family::kQwen3Moe));
  for (const auto& [k, v] : src->metadata())
    if (k.rfind("qwen3moe.", 0) == 0) dense_arch.set_keys.push_back({"qwen3." + k.substr(9), v});
  EXPECT_ERROR_HAS(gguf_error(Family::kQwen3Moe, dense_arch), "qwen3.expert_count");
}

std::string hf_error(Family f, const test::HfEdit& e) {
  test::TempDir dir;
  test::rewrite_hf(test::synth_hf(f), dir.path("hf"), e);
  return load_error(dir.path("hf"));
}

TEST(MoeBadFiles, HfExpertFieldsAndTensors) {
  const std::pair<const char*, nlohmann::json> fields[] = {
      {"num_experts_per_tok", 9},   {"mlp_only_layers", nlohmann::json::array({0})},
      {"decoder_sparse_step", 2},   {"shared_expert_intermediate_size", 64},
  };
  for (const auto& [key, value] : fields) {
    test::HfEdit e;
    e.config = [key = key, value = value](nlohmann::json& c) { c[key] = value; };
    EXPECT_ERROR_HAS(hf_error(Family::kQwen3Moe, e), key);
  }
  test::HfEdit no_used;
  no_used.config = [](nlohmann::json& c) { c.erase("num_experts_per_tok"); };
  EXPECT_ERROR_HAS(hf_error(Family::kMixtral, no_used), "num_experts_per_tok");
  test::HfEdit missing;
  missing.drop_tensors = {"model.layers.1.block_sparse_moe.experts.7.w2.weight"};
  EXPECT_ERROR_HAS(hf_error(Family::kMixtral, missing), "model.layers.1.block_sparse_moe.experts.7.w2.weight");
  test::HfEdit dense;  // a dense architecture with expert fields
  dense.config = [](nlohmann::json& c) { c["architectures"] = {"Qwen3ForCausalLM"}; };
  EXPECT_ERROR_HAS(hf_error(Family::kQwen3Moe, dense), "num_experts");
}

}  // namespace
}  // namespace og
