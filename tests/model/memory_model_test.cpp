// Random-weight models built in memory from a hand-written ModelConfig: every
// LayerConfig feature (biases, q/k norms, post-norms, GELU, windows, partial
// and interleaved RoPE, KV sharing with donor layers) against the naive
// forward, and the KV geometry such a config implies.
#include <gtest/gtest.h>

#include "model/loader.h"
#include "naive_forward.h"

namespace og {
namespace {

struct Built {
  ModelConfig config;
  std::shared_ptr<test::MemorySource> source;
};

std::vector<float> random_values(std::mt19937& rng, int64_t n, float scale, float offset = 0) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = offset + scale * u(rng);
  return v;
}

// Adds every tensor the config names (GGUF layout) with random values.
std::shared_ptr<test::MemorySource> random_weights(const ModelConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  auto src = std::make_shared<test::MemorySource>();
  const int64_t d = c.d_model;
  auto mat = [&](const std::string& n, int64_t rows, int64_t cols) {
    src->add(n, {rows, cols}, random_values(rng, rows * cols, 1.0f / std::sqrt(static_cast<float>(cols))));
  };
  auto vec = [&](const std::string& n, int64_t len, float scale, float offset) {
    src->add(n, {len}, random_values(rng, len, scale, offset));
  };
  mat("token_embd.weight", c.n_vocab, d);
  vec("output_norm.weight", d, 0.2f, 1.0f);
  if (!c.tied_output) mat("output.weight", c.n_vocab, d);
  for (int l = 0; l < c.n_layers(); ++l) {
    const LayerConfig& L = c.layers[l];
    const std::string b = "blk." + std::to_string(l) + ".";
    vec(b + "attn_norm.weight", d, 0.2f, 1.0f);
    mat(b + "attn_q.weight", L.n_heads * L.head_dim_k, d);
    if (L.kv_donor < 0) {
      mat(b + "attn_k.weight", L.n_kv_heads * L.head_dim_k, d);
      mat(b + "attn_v.weight", L.n_kv_heads * L.head_dim_v, d);
    }
    mat(b + "attn_output.weight", d, L.n_heads * L.head_dim_v);
    if (L.has_qkv_bias) {
      vec(b + "attn_q.bias", L.n_heads * L.head_dim_k, 0.3f, 0);
      if (L.kv_donor < 0) {
        vec(b + "attn_k.bias", L.n_kv_heads * L.head_dim_k, 0.3f, 0);
        vec(b + "attn_v.bias", L.n_kv_heads * L.head_dim_v, 0.3f, 0);
      }
    }
    if (L.has_o_bias) vec(b + "attn_output.bias", d, 0.3f, 0);
    if (L.has_q_norm) vec(b + "attn_q_norm.weight", L.head_dim_k, 0.2f, 1.0f);
    if (L.has_k_norm && L.kv_donor < 0) vec(b + "attn_k_norm.weight", L.head_dim_k, 0.2f, 1.0f);
    if (L.has_post_attn_norm) vec(b + "post_attention_norm.weight", d, 0.2f, 1.0f);
    vec(b + "ffn_norm.weight", d, 0.2f, 1.0f);
    if (L.has_post_ffn_norm) vec(b + "post_ffw_norm.weight", d, 0.2f, 1.0f);
    mat(b + "ffn_gate.weight", L.d_ff, d);
    mat(b + "ffn_up.weight", L.d_ff, d);
    mat(b + "ffn_down.weight", d, L.d_ff);
  }
  return src;
}

LayerConfig layer(int heads, int kv_heads, int hd, int hv, int n_rot, bool interleaved, int window) {
  LayerConfig L;
  L.n_heads = heads;
  L.n_kv_heads = kv_heads;
  L.head_dim_k = hd;
  L.head_dim_v = hv;
  L.d_ff = 40;
  L.window = window;
  L.rope_n_rot = n_rot;
  L.rope_interleaved = interleaved;
  L.rope_base = 10000;
  L.rope_inv_freq = rope_inv_freq(10000, n_rot);
  L.attn_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  return L;
}

// Four layers: two owners (one full with biases and q/k norms, interleaved
// rope; one sliding with post-norms, GELU, partial rotate-half rope and a V
// head dim != K's) and two layers reading their KV.
ModelConfig sharing_config() {
  ModelConfig c;
  c.architecture = "test";
  c.layout = WeightLayout::kGguf;
  c.d_model = 32;
  c.n_vocab = 50;
  c.n_ctx = 64;
  c.eps = 1e-5f;
  c.embedding_scale = 2.0f;
  LayerConfig a = layer(4, 2, 8, 8, 8, true, 0);
  a.has_qkv_bias = a.has_o_bias = true;
  a.has_q_norm = a.has_k_norm = true;
  LayerConfig b = layer(4, 1, 8, 6, 4, false, 3);
  b.has_post_attn_norm = b.has_post_ffn_norm = true;
  b.activation = Activation::kGeluTanh;
  b.attn_scale = 0.2f;
  LayerConfig a2 = layer(2, 2, 8, 8, 8, true, 0);
  a2.kv_donor = 0;
  a2.has_q_norm = true;
  LayerConfig b2 = layer(4, 1, 8, 6, 4, false, 3);
  b2.kv_donor = 1;
  b2.has_qkv_bias = true;
  c.layers = {a, b, a2, b2};
  return c;
}

TEST(KvSharing, GeometryMapsSharingLayersToTheirDonorsCache) {
  const ModelConfig c = sharing_config();
  std::unique_ptr<Model> m = make_model(c, random_weights(c, 7));
  const KvGeometry g = m->kv_geometry();
  ASSERT_EQ(g.caches.size(), 2u);
  EXPECT_EQ(g.caches[0].n_kv_heads, 2);
  EXPECT_EQ(g.caches[0].head_dim_k, 8);
  EXPECT_EQ(g.caches[0].head_dim_v, 8);
  EXPECT_EQ(g.caches[0].window, 0);
  EXPECT_EQ(g.caches[1].n_kv_heads, 1);
  EXPECT_EQ(g.caches[1].head_dim_v, 6);
  EXPECT_EQ(g.caches[1].window, 3);
  EXPECT_EQ(g.layer_cache, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(g.layer_writes, (std::vector<bool>{true, true, false, false}));
}

TEST(KvSharing, ChainedDonorResolvesToTheOwner) {
  ModelConfig c = sharing_config();
  LayerConfig extra = c.layers[2];
  extra.kv_donor = 2;  // reads layer 2's, which reads layer 0's
  c.layers.push_back(extra);
  const KvGeometry g = kv_geometry_from_config(c);
  EXPECT_EQ(g.layer_cache, (std::vector<int>{0, 1, 0, 1, 0}));
}

TEST(KvSharing, BadDonorsAreRefused) {
  ModelConfig c = sharing_config();
  c.layers[2].kv_donor = 3;  // not an earlier layer
  EXPECT_THROW(validate_config(c, "cfg"), Error);
  c = sharing_config();
  c.layers[3].kv_donor = 0;  // different KV shape (1 vs 2 KV heads)
  EXPECT_THROW(validate_config(c, "cfg"), Error);
}

std::vector<float> run_rows(const Model& m, KvCache& cache, const std::vector<int32_t>& toks, int64_t pos0) {
  Batch b;
  for (size_t i = 0; i < toks.size(); ++i) b.rows.push_back({toks[i], 0, pos0 + static_cast<int64_t>(i), true});
  std::vector<float> logits;
  const KvResult r = m.forward(b, cache, logits);
  EXPECT_TRUE(r.ok()) << r.message;
  return logits;
}

TEST(KvSharing, ForwardMatchesTheNaiveModel) {
  const ModelConfig c = sharing_config();
  auto src = random_weights(c, 11);
  std::unique_ptr<Model> m = make_model(c, src);
  const std::vector<int32_t> toks = {3, 17, 42, 0, 49, 8, 8, 21, 33, 5, 12};
  const std::vector<float> want = test::naive_forward(c, *src, toks);
  for (KvKind kind : {KvKind::kReference, KvKind::kSequence}) {
    auto cache = make_kv_cache(kind, m->kv_geometry(), KvPolicy{});
    // Prefill 4, then 3, then one at a time.
    std::vector<float> got = run_rows(*m, *cache, {toks.begin(), toks.begin() + 4}, 0);
    std::vector<float> more = run_rows(*m, *cache, {toks.begin() + 4, toks.begin() + 7}, 4);
    got.insert(got.end(), more.begin(), more.end());
    for (size_t i = 7; i < toks.size(); ++i) {
      more = run_rows(*m, *cache, {toks[i]}, static_cast<int64_t>(i));
      got.insert(got.end(), more.begin(), more.end());
    }
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LE(test::max_rel_err(got, want), 1e-5) << kv_kind_name(kind);
  }
}

TEST(MemoryModel, TiedOutputAndEveryFeatureMatchTheNaiveModel) {
  ModelConfig c = sharing_config();
  c.tied_output = true;
  for (LayerConfig& L : c.layers) L.kv_donor = -1;
  c.layers[3].has_q_norm = c.layers[3].has_k_norm = true;
  auto src = random_weights(c, 5);
  std::unique_ptr<Model> m = make_model(c, src);
  EXPECT_EQ(m->kv_geometry().caches.size(), 4u);
  const std::vector<int32_t> toks = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto cache = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  const std::vector<float> got = run_rows(*m, *cache, toks, 0);
  EXPECT_LE(test::max_rel_err(got, test::naive_forward(c, *src, toks)), 1e-5);
}

TEST(MemoryModel, MissingSharedLayerWeightsAreNotRequired) {
  // Sharing layers have no k/v projections; owners must have them.
  ModelConfig c = sharing_config();
  auto src = random_weights(c, 3);
  EXPECT_EQ(src->find("blk.2.attn_k.weight"), nullptr);
  EXPECT_NO_THROW(make_model(c, src));
  ModelConfig owner = c;
  owner.layers[2].kv_donor = -1;
  try {
    make_model(owner, src);
    FAIL() << "expected a missing-tensor error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing tensor blk.2.attn_k.weight"), std::string::npos) << e.what();
  }
}

TEST(MemoryModel, BadTokenThrowsAndLeavesTheCacheUnchanged) {
  const ModelConfig c = sharing_config();
  std::unique_ptr<Model> m = make_model(c, random_weights(c, 2));
  auto cache = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  Batch b;
  b.rows = {{1, 0, 0, true}, {50, 0, 1, true}};
  std::vector<float> logits;
  EXPECT_THROW(m->forward(b, *cache, logits), Error);
  EXPECT_EQ(cache->length(0), 0);
  b.rows = {{1, 0, 0, true}};
  EXPECT_TRUE(m->forward(b, *cache, logits).ok());
  EXPECT_EQ(cache->length(0), 1);
  EXPECT_EQ(logits.size(), 50u);
}

TEST(MemoryModel, CacheRefusalIsReturnedAndChangesNothing) {
  const ModelConfig c = sharing_config();
  std::unique_ptr<Model> m = make_model(c, random_weights(c, 2));
  auto cache = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  Batch b;
  b.rows = {{1, 0, 5, true}};  // not the next position
  std::vector<float> logits;
  const KvResult r = m->forward(b, *cache, logits);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(cache->length(0), 0);
  EXPECT_TRUE(logits.empty());
}

// forward reuses the caller's logits storage without zero-filling it: a
// reused vector ends each step exactly as a fresh one would (same size, same
// values), and every failure or empty step still leaves it empty.
TEST(MemoryModel, ReusedLogitsEqualFreshOnesAndFailuresEmptyThem) {
  const ModelConfig c = sharing_config();
  std::unique_ptr<Model> m = make_model(c, random_weights(c, 2));
  auto cache = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  auto fresh_cache = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  std::vector<float> reused, fresh;
  Batch b;
  b.rows = {{1, 0, 0, true}, {2, 0, 1, true}, {3, 0, 2, true}};
  ASSERT_TRUE(m->forward(b, *cache, reused).ok());
  ASSERT_TRUE(m->forward(b, *fresh_cache, fresh).ok());
  EXPECT_EQ(reused, fresh);
  b.rows = {{4, 0, 3, false}, {5, 0, 4, true}};  // fewer rows want logits: the vector shrinks
  ASSERT_TRUE(m->forward(b, *cache, reused).ok());
  fresh.clear();
  ASSERT_TRUE(m->forward(b, *fresh_cache, fresh).ok());
  EXPECT_EQ(reused.size(), 50u);
  EXPECT_EQ(reused, fresh);
  b.rows = {{50, 0, 5, true}};  // outside the vocabulary
  EXPECT_THROW(m->forward(b, *cache, reused), Error);
  EXPECT_TRUE(reused.empty());
  ASSERT_TRUE(m->forward(Batch{{{6, 0, 5, true}}}, *cache, reused).ok());
  b.rows = {{1, 0, 9, true}};  // not the next position: the cache refuses
  EXPECT_FALSE(m->forward(b, *cache, reused).ok());
  EXPECT_TRUE(reused.empty());
  ASSERT_TRUE(m->forward(Batch{{{7, 0, 6, true}}}, *cache, reused).ok());
  EXPECT_TRUE(m->forward(Batch{}, *cache, reused).ok());
  EXPECT_TRUE(reused.empty());
}

}  // namespace
}  // namespace og
