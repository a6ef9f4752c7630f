// The gemma4 family (GEMMA4.md): its config from both layouts, several
// KV-sharing counts against the naive forward, the layer -> cache map of the
// E2B structure (15 caches for 35 layers), every cache kind and storage dtype
// against the reference cache's greedy tokens with ring donors wrapped, and
// files whose keys contradict their tensors.
#include <gtest/gtest.h>

#include "file_edit.h"
#include "format/gguf.h"
#include "model/config.h"
#include "naive_forward.h"
#include "synth_fixture.h"

namespace og {
namespace {

using synth::Family;

const double kTol = test::logit_tol(Family::kGemma4);

std::string error_of(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gemma4, ConfigReadsTheSpecInBothLayouts) {
  const synth::SynthSpec spec = synth::tiny_spec(Family::kGemma4);
  for (bool hf : {false, true}) {
    SCOPED_TRACE(hf ? "hf" : "gguf");
    std::unique_ptr<Model> m = Model::load(hf ? test::synth_hf(Family::kGemma4) : test::synth_gguf(Family::kGemma4));
    const ModelConfig& c = m->config();
    EXPECT_EQ(m->architecture(), "gemma4");
    EXPECT_EQ(c.d_per_layer, 8);
    EXPECT_FLOAT_EQ(c.final_logit_softcap, 30.0f);
    EXPECT_FLOAT_EQ(c.embedding_scale, std::sqrt(128.0f));
    EXPECT_TRUE(c.tied_output);
    EXPECT_EQ(c.notes.size(), hf ? 1u : 0u);  // the stand-in vision tensor
    for (int l = 0; l < 10; ++l) {
      const LayerConfig& L = c.layers[l];
      const bool full = l == 4 || l == 9;
      EXPECT_EQ(L.window, full ? 0 : 8) << l;
      EXPECT_EQ(L.head_dim_k, full ? 32 : 16) << l;
      EXPECT_EQ(L.rope_n_rot, full ? 32 : 16) << l;
      EXPECT_EQ(L.rope_base, full ? 1e6 : 1e4) << l;
      EXPECT_EQ(L.d_ff, l >= 5 ? 256 : 128) << l;
      EXPECT_EQ(L.kv_donor, l < 5 ? -1 : full ? 4 : 3) << l;
      EXPECT_FLOAT_EQ(L.attn_scale, 1.0f);
      EXPECT_TRUE(L.has_q_norm && L.has_k_norm && L.has_v_norm && L.has_post_attn_norm && L.has_output_scale);
      EXPECT_EQ(L.activation, Activation::kGeluTanh);
      // Full layers: a quarter of the head (4 of 16 pairs) rotates, with base^(-2i/32).
      for (int i = 0; i < L.rope_n_rot / 2; ++i) {
        const float want = full && i >= 4 ? 0.0f : static_cast<float>(std::pow(L.rope_base, -2.0 * i / L.rope_n_rot));
        EXPECT_NEAR(L.rope_inv_freq[i], want, 1e-7f * (want + 1e-30f)) << l << " pair " << i;
      }
    }
    const KvGeometry g = m->kv_geometry();
    EXPECT_EQ(g.caches.size(), 5u);
    EXPECT_EQ(g.layer_cache, (std::vector<int>{0, 1, 2, 3, 4, 3, 3, 3, 3, 4}));
    EXPECT_EQ(g.layer_writes, (std::vector<bool>{true, true, true, true, true, false, false, false, false, false}));
    EXPECT_EQ(g.caches[4].head_dim_k, 32);
    EXPECT_EQ(g.caches[4].window, 0);
    EXPECT_EQ(g.caches[3].window, 8);
  }
  (void)spec;
}

// Several sharing counts, with and without the unused K/V tensors of the
// sharing layers in the file: both layouts agree and match the naive forward.
TEST(Gemma4, SharingCountsMatchTheNaiveModelInBothLayouts) {
  for (int shared : {0, 2, 5}) {
    SCOPED_TRACE(shared);
    synth::SynthSpec spec = synth::tiny_spec(Family::kGemma4);
    spec.n_shared_kv = shared;
    spec.sharer_kv_tensors = shared == 2;
    spec.layer_scale = shared != 5;
    const std::string key = "gemma4-shared" + std::to_string(shared);
    std::unique_ptr<Model> g = Model::load(test::synth_path(spec, false, key));
    std::unique_ptr<Model> h = Model::load(test::synth_path(spec, true, key));
    EXPECT_EQ(g->kv_geometry().caches.size(), static_cast<size_t>(10 - shared));
    EXPECT_EQ(h->kv_geometry().layer_cache, g->kv_geometry().layer_cache);
    const std::vector<int32_t> toks = test::test_tokens(19, g->n_vocab(), 30 + shared);  // > window 8
    auto cg = make_kv_cache(KvKind::kReference, g->kv_geometry(), KvPolicy{});
    auto ch = make_kv_cache(KvKind::kSequence, h->kv_geometry(), KvPolicy{});
    const std::vector<float> lg = test::all_logits(*g, *cg, toks, 5);
    EXPECT_LE(test::max_rel_err(test::all_logits(*h, *ch, toks, 3), lg), kTol);
    std::unique_ptr<GgufFile> f = GgufFile::open(test::synth_path(spec, false, key));
    EXPECT_LE(test::max_rel_err(lg, test::naive_forward(g->config(), *f, toks)), kTol);
  }
}

// E2B's structure (35 layers, 4 sliding : 1 full, 20 sharing, head sizes
// 256/512, window 512) with a narrow residual stream so the file stays small.
TEST(Gemma4, E2BLayerToCacheMapIs15Caches) {
  synth::SynthSpec spec = synth::gemma4_e2b_spec();
  spec.d_model = 64;
  spec.d_ff = 64;
  spec.d_per_layer = 8;
  spec.vocab = 0;  // the tokenizer's own size
  spec.weight_dtype = DType::Q8_0;
  std::unique_ptr<Model> m = Model::load(test::synth_path(spec, false, "gemma4-e2b-structure"));
  const KvGeometry g = m->kv_geometry();
  ASSERT_EQ(g.caches.size(), 15u);
  int sliding = 0, full = 0;
  for (const KvCacheSpec& c : g.caches) {
    EXPECT_EQ(c.n_kv_heads, 1);
    if (c.window > 0) {
      ++sliding;
      EXPECT_EQ(c.window, 512);
      EXPECT_EQ(c.head_dim_k, 256);
      EXPECT_EQ(c.head_dim_v, 256);
    } else {
      ++full;
      EXPECT_EQ(c.head_dim_k, 512);
      EXPECT_EQ(c.head_dim_v, 512);
    }
  }
  EXPECT_EQ(sliding, 12);
  EXPECT_EQ(full, 3);
  for (int l = 0; l < 35; ++l) {
    const bool is_full = l % 5 == 4;
    EXPECT_EQ(g.layer_writes[l], l < 15) << l;
    EXPECT_EQ(g.layer_cache[l], l < 15 ? l : is_full ? 14 : 13) << l;
    EXPECT_EQ(m->config().layers[l].d_ff, l < 15 ? 64 : 128) << l;  // double-wide MLP on the sharing layers
    // 64 of 256 pairs of a full head rotate (partial_rotary_factor 0.25).
    const LayerConfig& L = m->config().layers[l];
    EXPECT_EQ(L.rope_inv_freq.size(), is_full ? 256u : 128u);
    if (is_full) {
      EXPECT_GT(L.rope_inv_freq[63], 0.0f);
      EXPECT_EQ(L.rope_inv_freq[64], 0.0f);
    }
  }
}

// A sequence longer than the window, prefilled in chunks of 4 (ring donors of
// 8 + 4 - 1 slots wrap) and then decoded: every kind and storage dtype gives
// the reference cache's greedy tokens.
std::vector<int32_t> chunked_greedy(const Model& m, KvCache& cache, const std::vector<int32_t>& prompt, size_t total) {
  std::vector<int32_t> ids = prompt;
  std::vector<float> logits;
  for (size_t i = 0; i < prompt.size(); i += 4) {
    Batch b;
    for (size_t j = i; j < std::min(prompt.size(), i + 4); ++j) b.rows.push_back({prompt[j], 0, int64_t(j), false});
    b.rows.back().want_logits = true;
    const KvResult r = m.forward(b, cache, logits);
    if (!r.ok()) throw Error("forward refused: " + r.message);
  }
  while (ids.size() < total) {
    ids.push_back(test::argmax(logits.data(), m.n_vocab()));
    Batch b;
    b.rows = {{ids.back(), 0, static_cast<int64_t>(ids.size() - 1), true}};
    const KvResult r = m.forward(b, cache, logits);
    if (!r.ok()) throw Error("forward refused: " + r.message);
  }
  return ids;
}

TEST(Gemma4, EveryCacheKindAndDtypeGivesTheReferenceGreedyTokens) {
  std::unique_ptr<Model> m = Model::load(test::synth_gguf(Family::kGemma4));
  const std::vector<int32_t> prompt = test::test_tokens(22, m->n_vocab(), 41);
  KvPolicy p;
  p.max_capacity = 64;
  p.initial_capacity = 8;
  p.max_write = 4;
  auto ref = make_kv_cache(KvKind::kReference, m->kv_geometry(), p);
  const std::vector<int32_t> exact = chunked_greedy(*m, *ref, prompt, 40);
  for (KvDType dt : {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0}) {
    KvPolicy q = p;
    q.dtype = dt;
    auto ref_dt = make_kv_cache(KvKind::kReference, m->kv_geometry(), q);
    const std::vector<int32_t> want = chunked_greedy(*m, *ref_dt, prompt, 40);
    // 16-bit storage keeps the f32 tokens on this model; q8_0 moves logits by
    // ~1e-2, enough to change a random model's greedy path, so every kind is
    // held to the reference cache storing q8_0 too.
    if (dt != KvDType::Q8_0) {
      EXPECT_EQ(want, exact) << kv_dtype_name(dt);
    }
    for (KvKind kind : {KvKind::kSequence, KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
      auto c = make_kv_cache(kind, m->kv_geometry(), q);
      EXPECT_EQ(chunked_greedy(*m, *c, prompt, 40), want) << kv_kind_name(kind) << " " << kv_dtype_name(dt);
    }
  }
}

// ---- files whose keys contradict their tensors ----

TEST(Gemma4Bad, HeadSizeKeyContradictingTheTensorsNamesBoth) {
  test::TempDir dir;
  test::GgufEdit ge;
  ge.set_keys = {{"gemma4.attention.key_length_swa", GgufValue::make_u32(8)},
                 {"gemma4.attention.value_length_swa", GgufValue::make_u32(8)},
                 {"gemma4.rope.dimension_count_swa", GgufValue::make_u32(8)}};
  test::rewrite_gguf(test::synth_gguf(Family::kGemma4), dir.path("hd.gguf"), ge);
  const std::string e = error_of(dir.path("hd.gguf"));
  EXPECT_NE(e.find("blk.0.attn_q.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("gemma4.attention.key_length_swa = 8"), std::string::npos) << e;

  test::HfEdit he;
  he.config = [](nlohmann::json& c) { c["text_config"]["global_head_dim"] = 64; };
  test::rewrite_hf(test::synth_hf(Family::kGemma4), dir.path("hd-hf"), he);
  const std::string h = error_of(dir.path("hd-hf"));
  EXPECT_NE(h.find("layers.4.self_attn.q_proj.weight"), std::string::npos) << h;
  EXPECT_NE(h.find("global_head_dim = 64"), std::string::npos) << h;
}

TEST(Gemma4Bad, SharingKeyContradictingTheTensorsNamesBoth) {
  test::TempDir dir;
  test::GgufEdit fewer;  // layers 5-7 would own their KV, but the file has no K for them
  fewer.set_keys = {{"gemma4.attention.shared_kv_layers", GgufValue::make_u32(2)}};
  test::rewrite_gguf(test::synth_gguf(Family::kGemma4), dir.path("fewer.gguf"), fewer);
  const std::string e = error_of(dir.path("fewer.gguf"));
  EXPECT_NE(e.find("gemma4.attention.shared_kv_layers = 2"), std::string::npos) << e;
  EXPECT_NE(e.find("blk.5.attn_k.weight"), std::string::npos) << e;

  test::GgufEdit more;  // no full layer would own a cache for the sharing full layers
  more.set_keys = {{"gemma4.attention.shared_kv_layers", GgufValue::make_u32(7)}};
  test::rewrite_gguf(test::synth_gguf(Family::kGemma4), dir.path("more.gguf"), more);
  const std::string m = error_of(dir.path("more.gguf"));
  EXPECT_NE(m.find("shared_kv_layers = 7"), std::string::npos) << m;
  EXPECT_NE(m.find("no earlier layer of that type"), std::string::npos) << m;

  test::HfEdit he;
  he.config = [](nlohmann::json& c) { c["text_config"]["num_kv_shared_layers"] = 3; };
  test::rewrite_hf(test::synth_hf(Family::kGemma4), dir.path("sh-hf"), he);
  const std::string h = error_of(dir.path("sh-hf"));
  EXPECT_NE(h.find("num_kv_shared_layers = 3"), std::string::npos) << h;
  EXPECT_NE(h.find("layers.5.self_attn.k_proj.weight"), std::string::npos) << h;
}

TEST(Gemma4Bad, PerLayerWidthContradictingTheTableNamesBoth) {
  test::TempDir dir;
  test::GgufEdit ge;
  ge.set_keys = {{"gemma4.embedding_length_per_layer_input", GgufValue::make_u32(4)}};
  test::rewrite_gguf(test::synth_gguf(Family::kGemma4), dir.path("pl.gguf"), ge);
  const std::string e = error_of(dir.path("pl.gguf"));
  EXPECT_NE(e.find("per_layer_token_embd.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("gemma4.embedding_length_per_layer_input = 4"), std::string::npos) << e;
  test::GgufEdit none;
  none.set_keys = {{"gemma4.embedding_length_per_layer_input", GgufValue::make_u32(0)}};
  test::rewrite_gguf(test::synth_gguf(Family::kGemma4), dir.path("pl0.gguf"), none);
  EXPECT_NE(error_of(dir.path("pl0.gguf")).find("is 0 (no per-layer inputs), but the file holds"), std::string::npos);
}

TEST(Gemma4Bad, UnsupportedVariantsAndMissingKeysAreNamed) {
  test::TempDir dir;
  test::GgufEdit ge;
  ge.drop_keys = {"gemma4.attention.sliding_window_pattern"};
  test::rewrite_gguf(test::synth_gguf(Family::kGemma4), dir.path("np.gguf"), ge);
  EXPECT_NE(error_of(dir.path("np.gguf")).find("missing required key gemma4.attention.sliding_window_pattern"),
            std::string::npos);
  for (const char* key : {"attention_k_eq_v", "enable_moe_block"}) {
    test::HfEdit he;
    he.config = [&](nlohmann::json& c) { c["text_config"][key] = true; };
    test::rewrite_hf(test::synth_hf(Family::kGemma4), dir.path(key), he);
    EXPECT_NE(error_of(dir.path(key)).find(std::string(key) + " = true is not supported"), std::string::npos) << key;
  }
  test::HfEdit rope;
  rope.config = [](nlohmann::json& c) { c["text_config"]["rope_parameters"]["full_attention"]["rope_type"] = "yarn"; };
  test::rewrite_hf(test::synth_hf(Family::kGemma4), dir.path("yarn"), rope);
  EXPECT_NE(error_of(dir.path("yarn")).find("rope_parameters.full_attention.rope_type 'yarn'"), std::string::npos);
}

}  // namespace
}  // namespace og
