// Family details beyond the synthetic writer's defaults, each checked in both
// layouts: llama3 RoPE scaling (HF rope_scaling vs GGUF rope_freqs.weight),
// gemma3 linear scaling on global layers only (GGUF keys, HF rope_scaling and
// the v5 nested rope_parameters), the multimodal gemma3 checkpoint layout,
// mistral and qwen sliding-window fields.
#include <gtest/gtest.h>

#include "file_edit.h"
#include "model/config.h"
#include "synth_fixture.h"

namespace og {
namespace {

using synth::Family;

std::vector<float> logits_of(const std::string& path, const std::vector<int32_t>& toks) {
  std::unique_ptr<Model> m = Model::load(path);
  auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  return test::all_logits(*m, *c, toks, static_cast<int>(toks.size()));
}

// The llama3 frequency factors, straight from the formula in MODEL-FORMATS.md §5.
std::vector<float> llama3_factors(double base, int n, double factor, double low, double high, double orig) {
  std::vector<float> ff;
  for (int i = 0; i < n / 2; ++i) {
    const double wavelen = 2 * M_PI * std::pow(base, 2.0 * i / n);
    if (wavelen < orig / high) ff.push_back(1.0f);
    else if (wavelen > orig / low) ff.push_back(static_cast<float>(factor));
    else {
      const double s = (orig / wavelen - low) / (high - low);
      ff.push_back(static_cast<float>(1.0 / ((1 - s) / factor + s)));
    }
  }
  return ff;
}

TEST(Llama3Rope, HfRopeScalingEqualsGgufRopeFreqs) {
  // head_dim 16, base 10000, original context 64: pair 0 unscaled, pairs 1-2
  // smoothly interpolated, pairs 3-7 divided by the factor.
  const std::vector<float> ff = llama3_factors(10000, 16, 8, 1, 4, 64);
  ASSERT_EQ(ff[0], 1.0f);
  ASSERT_GT(ff[1], 1.0f);
  ASSERT_LT(ff[2], 8.0f);
  ASSERT_EQ(ff[7], 8.0f);
  test::TempDir dir;
  test::GgufEdit ge;
  ge.add = [&](GgufWriter& w) { w.add_tensor("rope_freqs.weight", DType::F32, {8}, test::f32_bytes(ff)); };
  test::rewrite_gguf(test::synth_gguf(Family::kLlama), dir.path("l3.gguf"), ge);
  test::HfEdit he;
  he.config = [](nlohmann::json& c) {
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 64}};
  };
  test::rewrite_hf(test::synth_hf(Family::kLlama), dir.path("l3-hf"), he);
  // The same scaling in the transformers v5 form.
  test::HfEdit he5;
  he5.config = [](nlohmann::json& c) {
    c.erase("rope_scaling");
    c.erase("rope_theta");
    c["rope_parameters"] = {{"rope_type", "llama3"},        {"rope_theta", 10000.0},
                            {"factor", 8.0},                {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},      {"original_max_position_embeddings", 64}};
  };
  test::rewrite_hf(test::synth_hf(Family::kLlama), dir.path("l3-hf5"), he5);

  std::unique_ptr<Model> g = Model::load(dir.path("l3.gguf"));
  std::unique_ptr<Model> h = Model::load(dir.path("l3-hf"));
  for (int i = 0; i < 8; ++i) {
    const float plain = static_cast<float>(std::pow(10000.0, -2.0 * i / 16));
    EXPECT_NEAR(g->config().layers[1].rope_inv_freq[i], plain / ff[i], 1e-6f * plain) << i;
    EXPECT_NEAR(h->config().layers[1].rope_inv_freq[i], plain / ff[i], 1e-6f * plain) << i;
  }
  const std::vector<int32_t> toks = test::test_tokens(24, g->n_vocab(), 21);
  const std::vector<float> lg = logits_of(dir.path("l3.gguf"), toks);
  EXPECT_LE(test::max_rel_err(logits_of(dir.path("l3-hf"), toks), lg), 1e-5);
  EXPECT_LE(test::max_rel_err(logits_of(dir.path("l3-hf5"), toks), lg), 1e-5);
  // And the scaling matters: the unscaled model differs.
  EXPECT_GT(test::max_rel_err(logits_of(test::synth_gguf(Family::kLlama), toks), lg), 1e-3);
}

TEST(Llama3Rope, KnownLlama31Factors) {
  // Llama 3.1: base 500000, head_dim 128, factor 8, low 1, high 4, original 8192.
  const std::vector<float> ff = llama3_rope_factors(500000, 128, 8, 1, 4, 8192);
  ASSERT_EQ(ff.size(), 64u);
  EXPECT_EQ(ff[0], 1.0f);
  EXPECT_EQ(ff[63], 8.0f);
  const std::vector<float> want = llama3_factors(500000, 128, 8, 1, 4, 8192);
  for (size_t i = 0; i < ff.size(); ++i) EXPECT_NEAR(ff[i], want[i], 1e-6) << i;
  for (size_t i = 1; i < ff.size(); ++i) EXPECT_GE(ff[i], ff[i - 1]) << i;  // monotone in wavelength
}

TEST(Gemma3, LinearScalingOnGlobalLayersOnlyInEveryForm) {
  test::TempDir dir;
  test::GgufEdit ge;
  ge.set_keys = {{"gemma3.rope.scaling.type", GgufValue::make_string("linear")},
                 {"gemma3.rope.scaling.factor", GgufValue::make_f32(8)}};
  test::rewrite_gguf(test::synth_gguf(Family::kGemma3), dir.path("g.gguf"), ge);
  test::HfEdit he;
  he.config = [](nlohmann::json& c) { c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}}; };
  test::rewrite_hf(test::synth_hf(Family::kGemma3), dir.path("g-hf"), he);
  test::HfEdit he5;
  he5.config = [](nlohmann::json& c) {
    c.erase("rope_scaling");
    c.erase("rope_theta");
    c.erase("rope_local_base_freq");
    c["rope_parameters"] = {
        {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1e6}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  };
  test::rewrite_hf(test::synth_hf(Family::kGemma3), dir.path("g-hf5"), he5);
  for (const std::string p : {"g.gguf", "g-hf", "g-hf5"}) {
    std::unique_ptr<Model> m = Model::load(dir.path(p));
    const ModelConfig& c = m->config();
    const float global0 = static_cast<float>(1.0 / 8);  // base^0 / 8
    EXPECT_FLOAT_EQ(c.layers[5].rope_inv_freq[0], global0) << p;
    EXPECT_FLOAT_EQ(c.layers[5].rope_inv_freq[1], static_cast<float>(std::pow(1e6, -2.0 / 16) / 8)) << p;
    EXPECT_FLOAT_EQ(c.layers[0].rope_inv_freq[1], static_cast<float>(std::pow(1e4, -2.0 / 16))) << p;
  }
  const std::vector<int32_t> toks = test::test_tokens(20, 512, 4);
  const std::vector<float> lg = logits_of(dir.path("g.gguf"), toks);
  EXPECT_LE(test::max_rel_err(logits_of(dir.path("g-hf"), toks), lg), 1e-5);
  EXPECT_LE(test::max_rel_err(logits_of(dir.path("g-hf5"), toks), lg), 1e-5);
  EXPECT_GT(test::max_rel_err(logits_of(test::synth_gguf(Family::kGemma3), toks), lg), 1e-4);
}

TEST(Gemma3, MultimodalCheckpointReadsTheTextModel) {
  test::TempDir dir;
  for (const std::string prefix : {"model.language_model.", "language_model.model."}) {
    SCOPED_TRACE(prefix);
    test::HfEdit he;
    he.config = [](nlohmann::json& c) {
      nlohmann::json text = c;
      text.erase("architectures");
      text["model_type"] = "gemma3_text";
      c = {{"architectures", {"Gemma3ForConditionalGeneration"}},
           {"model_type", "gemma3"},
           {"text_config", text},
           {"vision_config", {{"hidden_size", 32}}}};
    };
    he.rename = [&](const std::string& n) { return n.starts_with("model.") ? prefix + n.substr(6) : n; };
    SafetensorsTensor vision;
    vision.name = "vision_tower.vision_model.embeddings.patch_embedding.weight";
    vision.dtype = "F32";
    vision.shape = {4, 4};
    vision.bytes = test::f32_bytes(std::vector<float>(16, 0.5f));
    he.add = {vision};
    const std::string out = dir.path(prefix + "mm");
    test::rewrite_hf(test::synth_hf(Family::kGemma3), out, he);
    std::unique_ptr<Model> m = Model::load(out);
    EXPECT_EQ(m->config().hf_prefix, prefix);
    const std::vector<int32_t> toks = test::test_tokens(12, 512, 6);
    EXPECT_LE(test::max_rel_err(logits_of(out, toks), logits_of(test::synth_hf(Family::kGemma3), toks)), 1e-6);
  }
}

TEST(Gemma3, SoftcappingIsRefused) {
  test::TempDir dir;
  test::HfEdit he;
  he.config = [](nlohmann::json& c) { c["final_logit_softcapping"] = 30.0; };
  test::rewrite_hf(test::synth_hf(Family::kGemma3), dir.path("g"), he);
  try {
    Model::load(dir.path("g"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("final_logit_softcapping"), std::string::npos) << e.what();
  }
}

TEST(Mistral, SlidingWindowFieldForms) {
  test::TempDir dir;
  auto windows = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& name) {
    test::HfEdit he;
    he.config = edit;
    test::rewrite_hf(test::synth_hf(Family::kMistral), dir.path(name), he);
    std::vector<int> w;
    const std::unique_ptr<Model> m = Model::load(dir.path(name));
    for (const LayerConfig& L : m->config().layers) w.push_back(L.window);
    return w;
  };
  EXPECT_EQ(windows([](nlohmann::json&) {}, "as-written"), (std::vector<int>{8, 8}));
  EXPECT_EQ(windows([](nlohmann::json& c) { c["sliding_window"] = nullptr; }, "null"), (std::vector<int>{0, 0}));
  EXPECT_EQ(windows([](nlohmann::json& c) { c.erase("sliding_window"); }, "missing"),
            (std::vector<int>{4096, 4096}));  // transformers' MistralConfig default
  // GGUF: arch llama with llama.attention.sliding_window; without it, full attention.
  test::GgufEdit ge;
  ge.drop_keys = {"llama.attention.sliding_window"};
  test::rewrite_gguf(test::synth_gguf(Family::kMistral), dir.path("nw.gguf"), ge);
  EXPECT_EQ(Model::load(dir.path("nw.gguf"))->config().layers[0].window, 0);
  EXPECT_EQ(Model::load(test::synth_gguf(Family::kMistral))->config().layers[1].window, 8);
}

TEST(Qwen2, UseSlidingWindowFollowsMaxWindowLayers) {
  test::TempDir dir;
  test::HfEdit he;
  he.config = [](nlohmann::json& c) {
    c["use_sliding_window"] = true;
    c["sliding_window"] = 6;
    c["max_window_layers"] = 1;
  };
  test::rewrite_hf(test::synth_hf(Family::kQwen2), dir.path("q"), he);
  std::unique_ptr<Model> m = Model::load(dir.path("q"));
  EXPECT_EQ(m->config().layers[0].window, 0);
  EXPECT_EQ(m->config().layers[1].window, 6);
  // As released (use_sliding_window false): full attention everywhere.
  const std::unique_ptr<Model> released = Model::load(test::synth_hf(Family::kQwen2));
  for (const LayerConfig& L : released->config().layers) EXPECT_EQ(L.window, 0);
}

TEST(Describe, GroupsLayerKinds) {
  const std::string d = describe_config(Model::load(test::synth_gguf(Family::kGemma3))->config());
  EXPECT_NE(d.find("gemma3: d_model=64 n_layers=6"), std::string::npos) << d;
  EXPECT_NE(d.find("5 layer(s) [0,1,2,3,4]: heads 4/1 hd 16/16 ff 128 window 8 rope 10000"), std::string::npos) << d;
  EXPECT_NE(d.find("1 layer(s) [5]: heads 4/1 hd 16/16 ff 128 window 0 rope 1e+06"), std::string::npos) << d;
}

}  // namespace
}  // namespace og
