// GGUF and HF layouts of the same synthetic weights give the same logits, and
// each family's config reads as its spec says (windows, RoPE bases, biases,
// norms, scales) from both layouts.
#include <gtest/gtest.h>

#include "model/config.h"
#include "format/gguf.h"
#include "naive_forward.h"
#include "synth_fixture.h"

namespace og {
namespace {

using synth::Family;

class Layouts : public ::testing::TestWithParam<Family> {};

TEST_P(Layouts, GgufAndHfGiveTheSameLogits) {
  std::unique_ptr<Model> g = Model::load(test::synth_gguf(GetParam()));
  std::unique_ptr<Model> h = Model::load(test::synth_hf(GetParam()));
  ASSERT_EQ(g->n_vocab(), h->n_vocab());
  const std::vector<int32_t> toks = test::test_tokens(20, g->n_vocab());  // longer than the windows (8)
  auto cg = make_kv_cache(KvKind::kReference, g->kv_geometry(), KvPolicy{});
  auto ch = make_kv_cache(KvKind::kReference, h->kv_geometry(), KvPolicy{});
  const std::vector<float> lg = test::all_logits(*g, *cg, toks, 20);
  const std::vector<float> lh = test::all_logits(*h, *ch, toks, 20);
  ASSERT_EQ(lg.size(), lh.size());
  EXPECT_LE(test::max_rel_err(lh, lg), test::logit_tol(GetParam()));
}

TEST_P(Layouts, ForwardMatchesTheNaiveModel) {
  const std::string path = test::synth_gguf(GetParam());
  std::unique_ptr<Model> m = Model::load(path);
  std::unique_ptr<GgufFile> f = GgufFile::open(path);  // F32 tensors with GGUF names
  const std::vector<int32_t> toks = test::test_tokens(18, m->n_vocab(), 2);
  auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  EXPECT_LE(test::max_rel_err(test::all_logits(*m, *c, toks, 5), test::naive_forward(m->config(), *f, toks)),
            test::logit_tol(GetParam()));
}

TEST_P(Layouts, ConfigsAgree) {
  std::unique_ptr<Model> g = Model::load(test::synth_gguf(GetParam()));
  std::unique_ptr<Model> h = Model::load(test::synth_hf(GetParam()));
  const ModelConfig& a = g->config();
  const ModelConfig& b = h->config();
  const synth::SynthSpec spec = synth::tiny_spec(GetParam());
  EXPECT_EQ(a.d_model, spec.d_model);
  EXPECT_EQ(a.n_layers(), spec.n_layers);
  EXPECT_EQ(b.n_layers(), spec.n_layers);
  EXPECT_EQ(a.n_ctx, b.n_ctx);
  EXPECT_EQ(a.tied_output, spec.tied);
  EXPECT_EQ(b.tied_output, spec.tied);
  EXPECT_FLOAT_EQ(a.eps, b.eps);
  EXPECT_FLOAT_EQ(a.embedding_scale, b.embedding_scale);
  EXPECT_FLOAT_EQ(a.final_logit_softcap, b.final_logit_softcap);
  EXPECT_EQ(a.d_per_layer, b.d_per_layer);
  for (int l = 0; l < a.n_layers(); ++l) {
    const LayerConfig& x = a.layers[l];
    const LayerConfig& y = b.layers[l];
    EXPECT_EQ(x.n_heads, y.n_heads);
    EXPECT_EQ(x.n_kv_heads, y.n_kv_heads);
    // gemma4's full layers have their own head size.
    const int64_t hd = GetParam() == Family::kGemma4 && x.window == 0 ? spec.head_dim_full : spec.head_dim;
    EXPECT_EQ(x.head_dim_k, hd);
    EXPECT_EQ(y.head_dim_k, hd);
    EXPECT_EQ(x.kv_donor, y.kv_donor);
    EXPECT_EQ(x.has_v_norm, y.has_v_norm);
    EXPECT_EQ(x.has_output_scale, y.has_output_scale);
    EXPECT_EQ(x.d_ff, y.d_ff);
    EXPECT_EQ(x.n_experts, spec.n_experts);
    EXPECT_EQ(y.n_experts, spec.n_experts);
    EXPECT_EQ(x.n_experts_used, y.n_experts_used);
    EXPECT_EQ(x.d_ff_expert, y.d_ff_expert);
    EXPECT_EQ(x.expert_weights_norm, y.expert_weights_norm);
    EXPECT_EQ(x.window, y.window) << "layer " << l;
    EXPECT_EQ(x.rope_base, y.rope_base) << "layer " << l;
    EXPECT_EQ(x.has_qkv_bias, y.has_qkv_bias);
    EXPECT_EQ(x.has_o_bias, y.has_o_bias);
    EXPECT_EQ(x.has_q_norm, y.has_q_norm);
    EXPECT_EQ(x.has_post_attn_norm, y.has_post_attn_norm);
    EXPECT_EQ(x.activation, y.activation);
    EXPECT_FLOAT_EQ(x.attn_scale, y.attn_scale);
    ASSERT_EQ(x.rope_inv_freq.size(), y.rope_inv_freq.size());
    for (size_t i = 0; i < x.rope_inv_freq.size(); ++i) EXPECT_NEAR(x.rope_inv_freq[i], y.rope_inv_freq[i], 1e-7);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, Layouts, ::testing::ValuesIn(test::all_families()),
                         [](const auto& info) { return test::family_param_name(info.param); });

TEST(FamilyConfigs, EachFamilyHasItsFeatures) {
  for (bool hf : {false, true}) {
    SCOPED_TRACE(hf ? "hf" : "gguf");
    auto load = [&](Family f) { return Model::load(hf ? test::synth_hf(f) : test::synth_gguf(f)); };
    {
      auto m = load(Family::kLlama);
      EXPECT_EQ(m->config().layers[0].rope_interleaved, !hf);  // GGUF llama keeps the converter's row order
      EXPECT_FALSE(m->config().layers[0].has_qkv_bias);
      EXPECT_EQ(m->config().layers[0].window, 0);
    }
    {
      auto m = load(Family::kQwen2);
      EXPECT_EQ(m->architecture(), "qwen2");
      EXPECT_TRUE(m->config().layers[0].has_qkv_bias);
      EXPECT_FALSE(m->config().layers[0].has_o_bias);
      EXPECT_FALSE(m->config().layers[0].rope_interleaved);
    }
    {
      auto m = load(Family::kQwen3);
      EXPECT_TRUE(m->config().layers[0].has_q_norm);
      EXPECT_TRUE(m->config().layers[0].has_k_norm);
      EXPECT_EQ(m->config().layers[0].head_dim_k * m->config().layers[0].n_heads, 128);
    }
    {
      auto m = load(Family::kMistral);
      EXPECT_EQ(m->architecture(), hf ? "mistral" : "llama");  // Mistral GGUFs are arch "llama"
      for (const LayerConfig& L : m->config().layers) EXPECT_EQ(L.window, 8);
    }
    {
      auto m = load(Family::kGemma3);
      const ModelConfig& c = m->config();
      EXPECT_EQ(m->architecture(), "gemma3");
      EXPECT_TRUE(c.tied_output);
      EXPECT_FLOAT_EQ(c.embedding_scale, 8.0f);  // sqrt(64)
      for (int l = 0; l < 6; ++l) {
        const LayerConfig& L = c.layers[l];
        EXPECT_EQ(L.window, l == 5 ? 0 : 8) << l;
        EXPECT_EQ(L.rope_base, l == 5 ? 1e6 : 1e4) << l;
        EXPECT_TRUE(L.has_post_attn_norm && L.has_post_ffn_norm && L.has_q_norm);
        EXPECT_EQ(L.activation, Activation::kGeluTanh);
        EXPECT_FLOAT_EQ(L.attn_scale, 0.25f);  // query_pre_attn_scalar = head_dim = 16
      }
      const KvGeometry g = m->kv_geometry();
      EXPECT_EQ(g.caches.size(), 6u);
      EXPECT_EQ(g.caches[0].window, 8);
      EXPECT_EQ(g.caches[5].window, 0);
    }
  }
}

}  // namespace
}  // namespace og
