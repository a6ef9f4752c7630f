// Encoder embedding models (families bert and nomic-bert): what the files
// say becomes the config (GGUF as llama.cpp's converter writes it, HF
// BertModel / NomicBertModel), the HF and GGUF layouts embed alike, the
// pass equals a plain one written from the math (naive_encoder.h) for every
// pooling, a batch equals one input at a time, export writes a file that
// reads back as the same model, and bad files are one error naming the field.
#include <gtest/gtest.h>

#include "file_edit.h"
#include "format/gguf.h"
#include "kernels/ops.h"
#include "model/config.h"
#include "model/gguf_convert.h"
#include "model/loader.h"
#include "model/quant_mix.h"
#include "naive_embed.h"
#include "synth_fixture.h"

namespace og {
namespace {

namespace fs = std::filesystem;
using synth::Family;

std::string encoder_path(Family f, bool hf, const std::string& pooling = "") {
  synth::SynthSpec s = synth::tiny_embedding_spec(f);
  if (!pooling.empty()) s.pooling = pooling;
  return test::synth_path(s, hf, std::string("enc-") + synth::family_name(f) + pooling);
}

Embeddings embed_all(const Model& m, const std::vector<std::vector<int32_t>>& inputs) {
  Batch b;
  for (size_t s = 0; s < inputs.size(); ++s)
    for (size_t p = 0; p < inputs[s].size(); ++p)
      b.rows.push_back({inputs[s][p], static_cast<int>(s), static_cast<int64_t>(p), false});
  Embeddings e;
  m.embed(b, e);
  return e;
}

std::vector<std::vector<int32_t>> some_inputs(int32_t n_vocab) {
  return {test::test_tokens(5, n_vocab, 1), test::test_tokens(17, n_vocab, 2), test::test_tokens(1, n_vocab, 3),
          test::test_tokens(11, n_vocab, 4)};
}

void expect_error(const std::function<void()>& f, const std::string& want) {
  try {
    f();
    FAIL() << "accepted; wanted an error with '" << want << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

TEST(EncoderKernels, LayerNormAndGeluFromTheirDefinitions) {
  const std::vector<float> x = {1, 2, 3, 6}, w = {1, 2, 1, 1}, b = {0, 0.5f, 0, -1};
  std::vector<float> y(4);
  kernels::layer_norm(x.data(), w.data(), b.data(), 0.0f, 4, y.data());
  // mean 3, variance 3.5
  const double s = 1.0 / std::sqrt(3.5);
  EXPECT_NEAR(y[0], -2 * s, 1e-6);
  EXPECT_NEAR(y[1], -1 * s * 2 + 0.5, 1e-6);
  EXPECT_NEAR(y[3], 3 * s - 1, 1e-6);
  std::vector<float> g = {-3, -1, 0, 0.5f, 2};
  kernels::gelu_erf(g.data(), 5);
  for (size_t i = 0; i < g.size(); ++i) {
    const double v = std::vector<double>{-3, -1, 0, 0.5, 2}[i];
    EXPECT_NEAR(g[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
  }
}

class EncoderFamily : public ::testing::TestWithParam<Family> {};

TEST_P(EncoderFamily, ConfigSaysWhatTheFileSays) {
  for (bool hf : {false, true}) {
    std::unique_ptr<Model> m = Model::load(encoder_path(GetParam(), hf));
    const ModelConfig& c = m->config();
    const bool bert = GetParam() == Family::kBert;
    EXPECT_EQ(c.architecture, bert ? "bert" : "nomic-bert");
    EXPECT_EQ(c.pooling, bert ? Pooling::kCls : Pooling::kMean);
    EXPECT_FALSE(c.causal);
    EXPECT_TRUE(c.layer_norm);
    EXPECT_FALSE(c.has_output_norm);
    EXPECT_EQ(c.n_token_types, 2);
    EXPECT_EQ(c.has_pos_embd, bert);
    EXPECT_FLOAT_EQ(c.eps, 1e-12f);
    EXPECT_EQ(c.n_vocab, 30522);
    for (const LayerConfig& L : c.layers) {
      EXPECT_TRUE(L.post_norm);
      EXPECT_EQ(L.ffn_gated, !bert);
      EXPECT_EQ(L.qkv_fused, !bert);
      EXPECT_EQ(L.activation, bert ? Activation::kGeluErf : Activation::kSilu);
      EXPECT_EQ(L.rope_n_rot, bert ? 0 : L.head_dim_k);
    }
    EXPECT_NE(describe_config(c).find("post-ln"), std::string::npos);
  }
}

TEST_P(EncoderFamily, HfAndGgufEmbedAlike) {
  std::unique_ptr<Model> g = Model::load(encoder_path(GetParam(), false));
  std::unique_ptr<Model> h = Model::load(encoder_path(GetParam(), true));
  const auto inputs = some_inputs(g->n_vocab());
  const Embeddings a = embed_all(*g, inputs), b = embed_all(*h, inputs);
  ASSERT_EQ(a.seqs.size(), inputs.size());
  EXPECT_EQ(a.dim, 64);
  EXPECT_LE(test::max_rel_err(a.values, b.values), 1e-6);
}

TEST_P(EncoderFamily, EqualsThePlainPassForEveryPooling) {
  for (const char* pooling : {"cls", "mean", "last"}) {
    const std::string path = encoder_path(GetParam(), false, pooling);
    const GgufModelSource src = read_gguf_model(path);
    std::unique_ptr<Model> m = Model::load(path);
    const auto inputs = some_inputs(m->n_vocab());
    const Embeddings e = embed_all(*m, inputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<double> want = test::naive_embed(m->config(), *src.file, inputs[i]);
      const std::vector<float> got(e.values.begin() + i * e.dim, e.values.begin() + (i + 1) * e.dim);
      EXPECT_LE(test::max_rel_err(got, std::vector<float>(want.begin(), want.end())), 1e-5)
          << pooling << " input " << i;
    }
  }
}

TEST_P(EncoderFamily, ClsAndMeanPoolingDiffer) {
  std::unique_ptr<Model> cls = Model::load(encoder_path(GetParam(), false, "cls"));
  std::unique_ptr<Model> mean = Model::load(encoder_path(GetParam(), false, "mean"));
  const auto inputs = some_inputs(cls->n_vocab());
  EXPECT_GT(test::max_rel_err(embed_all(*cls, {inputs[1]}).values, embed_all(*mean, {inputs[1]}).values), 1e-2);
  // One token: the first row is the mean.
  EXPECT_LE(test::max_rel_err(embed_all(*cls, {inputs[2]}).values, embed_all(*mean, {inputs[2]}).values), 1e-6);
}

TEST_P(EncoderFamily, ABatchEqualsOneAtATime) {
  std::unique_ptr<Model> m = Model::load(encoder_path(GetParam(), false));
  const auto inputs = some_inputs(m->n_vocab());
  const Embeddings all = embed_all(*m, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Embeddings one = embed_all(*m, {inputs[i]});
    const std::vector<float> row(all.values.begin() + i * all.dim, all.values.begin() + (i + 1) * all.dim);
    EXPECT_LE(test::max_rel_err(row, one.values), 1e-6) << "input " << i;
  }
}

TEST_P(EncoderFamily, ExportReadsBackAndEmbedsAlike) {
  test::TempDir dir;
  const std::string hf = encoder_path(GetParam(), true), out = dir.path("e.gguf");
  ConvertOptions o;
  ASSERT_TRUE(weight_type_from_name("f32", &o.type));
  export_hf_to_gguf(hf, out, o);
  std::unique_ptr<GgufFile> f = GgufFile::open(out);
  const std::string arch = GetParam() == Family::kBert ? "bert" : "nomic-bert";
  EXPECT_EQ(f->get_string("general.architecture").value_or(""), arch);
  EXPECT_EQ(f->get_bool(arch + ".attention.causal"), std::optional<bool>(false));
  EXPECT_EQ(f->get_int("tokenizer.ggml.token_type_count").value_or(0), 2);
  EXPECT_NE(f->find("token_embd_norm.bias"), nullptr);
  EXPECT_NE(f->find(GetParam() == Family::kBert ? "position_embd.weight" : "blk.0.attn_qkv.weight"), nullptr);
  std::unique_ptr<Model> h = Model::load(hf), g = Model::load(out);
  const auto inputs = some_inputs(h->n_vocab());
  EXPECT_LE(test::max_rel_err(embed_all(*g, inputs).values, embed_all(*h, inputs).values), 1e-6);
  // Quantized, the token-type table stays F32: llama.cpp adds its row as it is.
  const std::string q8 = dir.path("e-q8.gguf");
  ASSERT_TRUE(weight_type_from_name("q8_0", &o.type));
  export_hf_to_gguf(hf, q8, o);
  std::unique_ptr<GgufFile> fq = GgufFile::open(q8);
  ASSERT_NE(fq->find("token_types.weight"), nullptr);
  EXPECT_EQ(fq->find("token_types.weight")->type_id, static_cast<uint32_t>(DType::F32));
  EXPECT_EQ(fq->find("blk.0.ffn_up.weight")->type_id, static_cast<uint32_t>(DType::Q8_0));
  std::unique_ptr<Model> gq = Model::load(q8);
  EXPECT_LE(test::max_rel_err(embed_all(*gq, inputs).values, embed_all(*h, inputs).values), 5e-2);
}

INSTANTIATE_TEST_SUITE_P(Both, EncoderFamily, ::testing::Values(Family::kBert, Family::kNomicBert),
                         [](const auto& i) { return std::string(i.param == Family::kBert ? "bert" : "nomic_bert"); });

TEST(Encoder, CannotGenerate) {
  std::unique_ptr<Model> m = Model::load(encoder_path(Family::kBert, false));
  auto cache = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  std::vector<float> logits;
  Batch one;
  one.rows.push_back({5, 0, 0, true});
  expect_error([&] { m->forward(one, *cache, logits); }, "cannot generate");
  // A position past the absolute position table.
  Batch longer;
  for (int64_t p = 0; p <= m->config().n_ctx; ++p) longer.rows.push_back({5, 0, p, false});
  Embeddings e;
  expect_error([&] { m->embed(longer, e); }, "position table");
}

TEST(Encoder, BadFilesAreOneErrorNamingTheField) {
  test::TempDir dir;
  const std::string src = encoder_path(Family::kBert, false);
  auto load_edited = [&](const test::GgufEdit& e) {
    const std::string out = dir.path("bad.gguf");
    test::rewrite_gguf(src, out, e);
    Model::load(out);
  };
  test::GgufEdit drop;
  drop.drop_tensors = {"blk.1.attn_output_norm.bias"};
  expect_error([&] { load_edited(drop); }, "missing tensor blk.1.attn_output_norm.bias");
  test::GgufEdit drop_pos;
  drop_pos.drop_tensors = {"position_embd.weight"};
  expect_error([&] { load_edited(drop_pos); }, "position_embd.weight");
  test::GgufEdit types;
  types.set_keys.push_back({"tokenizer.ggml.token_type_count", GgufValue::make_u32(3)});
  expect_error([&] { load_edited(types); }, "token_types.weight has shape");
  test::GgufEdit rank;
  rank.set_keys.push_back({"bert.pooling_type", GgufValue::make_u32(4)});
  expect_error([&] { load_edited(rank); }, "bert.pooling_type = 4");
  // No pooling type: one vector per token, as llama.cpp (a note says so).
  test::GgufEdit no_pool;
  no_pool.drop_keys = {"bert.pooling_type"};
  {
    const std::string out = dir.path("no-pool.gguf");
    test::rewrite_gguf(src, out, no_pool);
    std::unique_ptr<Model> m = Model::load(out);
    EXPECT_EQ(m->config().pooling, Pooling::kNone);
    ASSERT_EQ(m->config().notes.size(), 1u);
    EXPECT_NE(m->config().notes[0].find("bert.pooling_type is absent"), std::string::npos);
  }
  test::GgufEdit no_eps;
  no_eps.drop_keys = {"bert.attention.layer_norm_epsilon"};
  expect_error([&] { load_edited(no_eps); }, "bert.attention.layer_norm_epsilon");
  // nomic-bert without its fused q/k/v.
  const std::string nomic = encoder_path(Family::kNomicBert, false);
  test::GgufEdit no_qkv;
  no_qkv.drop_tensors = {"blk.0.attn_qkv.weight"};
  const std::string out = dir.path("bad-nomic.gguf");
  test::rewrite_gguf(nomic, out, no_qkv);
  expect_error([&] { Model::load(out); }, "attn_qkv.weight");
  // HF: an activation BERT's GGUF cannot express, and relative positions.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"hidden_act", "relu"}, {"position_embedding_type", "relative_key"}}) {
    const std::string hf = dir.path("hf-" + key);
    fs::copy(encoder_path(Family::kBert, true), hf, fs::copy_options::recursive);
    nlohmann::json cfg = read_json_file(hf + "/config.json");
    cfg[key] = value;
    std::ofstream(hf + "/config.json") << cfg.dump(2);
    expect_error([&] { Model::load(hf); }, key);
  }
}

}  // namespace
}  // namespace og
