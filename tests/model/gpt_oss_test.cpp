// gpt-oss: routing (top-k of the logits, softmax over the chosen), the
// clamped SwiGLU and the experts' biases, the grouped expert step against its
// plain twin (F32 and MXFP4 experts), YaRN frequencies by hand, attention
// sinks making a difference through the model, what a synthetic file reads
// back as, and the fields and tensors a file must have (errors naming them).
#include <gtest/gtest.h>

#include <cmath>

#include "file_edit.h"
#include "format/gguf.h"
#include "model/gguf_convert.h"
#include "model/gguf_export.h"
#include "model/loader.h"
#include "model/moe.h"
#include "synth_fixture.h"

namespace og {
namespace {

using synth::Family;

#define EXPECT_ERROR_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "error was: '" << (msg) << "', expected it to mention: " << (part)

std::string mxfp4_file() {
  synth::SynthSpec s = synth::tiny_spec(Family::kGptOss);
  s.weight_dtype = DType::MXFP4;  // experts MXFP4, the other matrices F32 (gpt_oss_dense_dtype)
  return test::synth_path(s, false, "gpt-oss-mxfp4");
}

TEST(GptOssRoute, TopKOfLogitsThenSoftmaxOverTheChosen) {
  LayerConfig L;
  L.n_experts = 5;
  L.n_experts_used = 3;
  L.expert_softmax_after_topk = true;
  L.expert_weights_norm = false;
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};  // a tie: the lower index ranks first
  MoeRouting r;
  moe_route(L, logits.data(), 1, r);
  ASSERT_EQ(r.expert[0], 1);
  ASSERT_EQ(r.expert[1], 3);
  ASSERT_EQ(r.expert[2], 4);
  const double z = 2 * std::exp(2.0) + std::exp(1.0);
  EXPECT_NEAR(r.weight[0], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(r.weight[1], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(r.weight[2], std::exp(1.0) / z, 1e-6);
}

// One expert of width 2 on d_model 2 with identity-like weights: the output
// is down(swiglu_oai(gate x + bg, up x + bu)) + bd, checked by hand, with the
// gate above the clamp and the up value below -7.
TEST(GptOssExperts, ClampedSwigluAndBiasesByHand) {
  LayerConfig L;
  L.n_experts = 1;
  L.n_experts_used = 1;
  L.d_ff_expert = 2;
  L.expert_softmax_after_topk = L.has_router_bias = L.has_expert_bias = L.expert_swiglu_oai = true;
  L.expert_weights_norm = false;
  static const float eye[4] = {1, 0, 0, 1}, router[2] = {0, 0};
  auto view = [](const float* p, int64_t rows, int64_t cols) {
    TensorView v;
    v.data = p;
    v.dtype = DType::F32;
    v.shape = {rows, cols};
    return v;
  };
  LayerWeights w;
  w.w_router = view(router, 1, 2);
  w.w_gate_exps = {view(eye, 2, 2)};
  w.w_up_exps = {view(eye, 2, 2)};
  w.w_down_exps = {view(eye, 2, 2)};
  w.b_router = {0.0f};
  w.b_gate_exps = {9.0f, -0.5f};
  w.b_up_exps = {0.0f, -20.0f};
  w.b_down_exps = {0.25f, -0.25f};
  const float x[2] = {9.0f, 3.0f};
  float y[2], yp[2];
  moe_ffn(L, w, x, 1, 2, y);
  moe_ffn_plain(L, w, x, 1, 2, yp);
  auto act = [](double g, double u) { return (u + 1) * g / (1 + std::exp(-1.702 * g)); };
  // gate = (9 + 9, 3 - 0.5) -> (7 clamped, 2.5); up = (9, 3 - 20) -> (7 clamped, -7 clamped)
  EXPECT_NEAR(y[0], act(7.0, 7.0) + 0.25, 1e-4);
  EXPECT_NEAR(y[1], act(2.5, -7.0) - 0.25, 1e-4);
  EXPECT_EQ(y[0], yp[0]);
  EXPECT_EQ(y[1], yp[1]);
}

std::vector<float> random_rows(int64_t n, int64_t d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<size_t>(n * d));
  for (float& v : x) v = nd(rng);
  return x;
}

TEST(GptOssExperts, GroupedEqualsPlainTwin) {
  for (const std::string& path : {test::synth_gguf(Family::kGptOss), mxfp4_file()}) {
    for (bool repack : {false, true}) {
      GgufModelSource m = read_gguf_model(path);
      Weights w = bind_weights(m.config, *m.file);
      HugePageBuffer copy;
      if (repack) copy = place_weights_in_huge_pages(w, false, true);  // MXFP4 -> MXFP4_R on x86
      const int64_t d = m.config.d_model;
      for (int l = 0; l < m.config.n_layers(); ++l) {
        for (int64_t n : {1, 3, 16, 33}) {
          const std::vector<float> x = random_rows(n, d, static_cast<uint32_t>(n * 5 + l));
          std::vector<float> grouped(static_cast<size_t>(n * d)), plain(static_cast<size_t>(n * d));
          moe_ffn(m.config.layers[l], w.layers[l], x.data(), n, d, grouped.data());
          moe_ffn_plain(m.config.layers[l], w.layers[l], x.data(), n, d, plain.data());
          EXPECT_LE(test::max_rel_err(grouped, plain), 1e-6) << path << " layer " << l << " rows " << n;
        }
      }
    }
  }
}

TEST(GptOssRope, YarnFrequenciesByHand) {
  RopeScaling s;
  s.type = RopeScaling::Type::kYarn;
  s.factor = 32;
  s.original_max_positions = 4096;
  const double base = 150000;
  const int n_rot = 64;
  const std::vector<float> f = yarn_rope_inv_freq(base, n_rot, s);
  const std::vector<float> plain = rope_inv_freq(base, n_rot);
  // d(b) = 64 ln(4096 / (2π b)) / (2 ln 150000): lo = floor(d(32)) = 8, hi = ceil(d(1)) = 18.
  const double kPi = 3.14159265358979323846;
  auto d = [&](double b) { return n_rot * std::log(4096 / (2 * kPi * b)) / (2 * std::log(base)); };
  ASSERT_EQ(std::floor(d(32)), 8);
  ASSERT_EQ(std::ceil(d(1)), 18);
  for (int i = 0; i <= 8; ++i) EXPECT_FLOAT_EQ(f[i], plain[i]) << i;             // extrapolated: unchanged
  for (int i = 18; i < 32; ++i) EXPECT_FLOAT_EQ(f[i], plain[i] / 32.0f) << i;   // interpolated: / factor
  const double r = 1 - (13 - 8) / 10.0;  // pair 13: in the ramp
  EXPECT_NEAR(f[13], plain[13] * ((1 - r) / 32 + r), 1e-6 * plain[13]);
  EXPECT_NEAR(yarn_mscale(s), 1 + 0.1 * std::log(32.0), 1e-12);
}

TEST(GptOssFiles, ReadsBackAsWritten) {
  for (const std::string& path : {test::synth_gguf(Family::kGptOss), mxfp4_file()}) {
    const std::unique_ptr<Model> m = Model::load(path);
    const ModelConfig& c = m->config();
    ASSERT_EQ(c.architecture, "gpt-oss");
    ASSERT_EQ(c.n_layers(), 4);
    for (int l = 0; l < 4; ++l) {
      const LayerConfig& L = c.layers[l];
      EXPECT_EQ(L.window, l % 2 == 0 ? 8 : 0) << l;
      EXPECT_TRUE(L.has_sinks && L.has_qkv_bias && L.has_o_bias && L.has_router_bias && L.has_expert_bias);
      EXPECT_TRUE(L.expert_softmax_after_topk && L.expert_swiglu_oai && !L.expert_weights_norm);
      EXPECT_EQ(L.rope_scaling.type, RopeScaling::Type::kYarn);
      const double m2 = std::pow(1 + 0.1 * std::log(8.0), 2);
      EXPECT_NEAR(L.attn_scale, m2 / 4.0, 1e-6);  // head_dim 16
    }
    const std::string desc = describe_config(c);
    EXPECT_NE(desc.find("sinks"), std::string::npos) << desc;
    EXPECT_NE(desc.find("yarn (factor 8"), std::string::npos) << desc;
    const std::unique_ptr<GgufFile> f = GgufFile::open(path);
    EXPECT_NE(f->find("blk.0.post_attention_norm.weight"), nullptr);
    EXPECT_EQ(f->find("blk.0.ffn_norm.weight"), nullptr);
    if (path == mxfp4_file()) {
      EXPECT_EQ(f->find("blk.0.ffn_up_exps.weight")->type_id, static_cast<uint32_t>(DType::MXFP4));
      EXPECT_EQ(f->find("blk.0.attn_q.weight")->type_id, static_cast<uint32_t>(DType::F32));
    }
  }
}

// quantize converts gpt-oss like any GGUF (its read-back check compares the
// sinks, biases, routing and activation flags): the expert stacks and the
// other matrices take the weight type, the routers, sinks and biases stay F32,
// and the Q8_0 file's logits stay near F32's.
TEST(GptOssFiles, QuantizeKeepsTheModel) {
  test::TempDir dir;
  for (const char* type : {"q8_0", "mxfp4"}) {
    const std::string out = dir.path(std::string("gpt-oss-") + type + ".gguf");
    ConvertOptions o;
    ASSERT_TRUE(weight_type_from_name(type, &o.type)) << type;
    quantize_gguf(test::synth_gguf(Family::kGptOss), out, o);
    const std::unique_ptr<GgufFile> f = GgufFile::open(out);
    const DType want = std::string(type) == "q8_0" ? DType::Q8_0 : DType::MXFP4;
    EXPECT_EQ(f->find("blk.1.ffn_down_exps.weight")->type_id, static_cast<uint32_t>(want)) << type;
    for (const char* t : {"blk.0.ffn_gate_inp.weight", "blk.0.attn_sinks.weight", "blk.0.ffn_up_exps.bias",
                          "blk.0.ffn_gate_inp.bias", "blk.0.attn_q.bias"})
      EXPECT_EQ(f->find(t)->type_id, static_cast<uint32_t>(DType::F32)) << type << " " << t;
    if (want == DType::Q8_0) {
      const std::vector<int32_t> toks = test::test_tokens(12, 512, 3);
      auto logits = [&](const std::string& path) {
        std::unique_ptr<Model> m = Model::load(path);
        auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
        return test::all_logits(*m, *c, toks, 12);
      };
      EXPECT_LE(test::max_rel_err(logits(out), logits(test::synth_gguf(Family::kGptOss))), 0.05);
    }
  }
}

std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The file of the tiny gpt-oss model with an edit, in a temp directory kept for the process.
std::string edited(const test::GgufEdit& e, const std::string& name) {
  static test::TempDir dir;
  const std::string path = dir.path(name);
  test::rewrite_gguf(test::synth_gguf(Family::kGptOss), path, e);
  return path;
}

// The sinks are read and used: logits change when every sink moves far down
// (a sink of -1e30 is as good as no sink).
TEST(GptOssFiles, SinksChangeTheLogits) {
  const std::vector<int32_t> toks = test::test_tokens(12, 512, 4);
  auto logits = [&](const std::string& path) {
    std::unique_ptr<Model> m = Model::load(path);
    auto c = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
    return test::all_logits(*m, *c, toks, 12);
  };
  test::GgufEdit e;
  e.replace = [](const TensorInfo& t, GgufWriter& w) {
    if (t.name.find("attn_sinks") == std::string::npos) return false;
    w.add_tensor(t.name, DType::F32, t.shape, test::f32_bytes(std::vector<float>(size_t(t.shape[0]), -1e30f)));
    return true;
  };
  EXPECT_GT(test::max_rel_err(logits(test::synth_gguf(Family::kGptOss)), logits(edited(e, "no-sinks.gguf"))), 1e-3);
}

TEST(GptOssBadFiles, FieldsAndTensorsAreNamed) {
  auto error_of = [](const test::GgufEdit& e) { return load_error(edited(e, "bad.gguf")); };
  test::GgufEdit e;
  e.drop_keys = {"gpt-oss.attention.sliding_window"};
  EXPECT_ERROR_HAS(error_of(e), "gpt-oss.attention.sliding_window");
  e = {};
  e.drop_keys = {"gpt-oss.rope.scaling.original_context_length"};
  EXPECT_ERROR_HAS(error_of(e), "gpt-oss.rope.scaling.original_context_length");
  const std::pair<const char*, GgufValue> keys[] = {
      {"gpt-oss.expert_weights_norm", GgufValue::make_bool(true)},
      {"gpt-oss.rope.scaling.yarn_ext_factor", GgufValue::make_f32(0.5f)},
      {"gpt-oss.rope.scaling.yarn_log_multiplier", GgufValue::make_f32(0.1f)},
      {"gpt-oss.attention.sliding_window_pattern", GgufValue::make_u32(3)},
      {"gpt-oss.expert_gating_func", GgufValue::make_u32(2)},
  };
  for (const auto& [key, value] : keys) {
    e = {};
    e.set_keys = {{key, value}};
    EXPECT_ERROR_HAS(error_of(e), key);
  }
  for (const char* t : {"blk.2.attn_sinks.weight", "blk.1.ffn_up_exps.bias", "blk.0.ffn_gate_inp.bias",
                        "blk.3.attn_output.bias", "blk.0.post_attention_norm.weight"}) {
    e = {};
    e.drop_tensors = {t};
    EXPECT_ERROR_HAS(error_of(e), std::string("missing tensor ") + t);
  }
}

}  // namespace
}  // namespace og
