// Embedding models (model/embedding.h, Model::embed): pooling and the
// normalisations against their plain twins; synthetic Qwen3-Embedding-style
// (causal, last-token) and EmbeddingGemma-style (bidirectional, mean, dense
// projections) models: the HF and GGUF layouts embed alike, a batch of inputs
// equals one input at a time, both equal a plain pass written from the math
// (naive_embed.h), export keeps pooling / causality / dense dims
// (as llama.cpp's keys and gemma-embedding arch), and what a file asks for
// that we do not run is an error naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "file_edit.h"
#include "format/gguf.h"
#include "model/config.h"
#include "model/embedding.h"
#include "model/gguf_convert.h"
#include "model/loader.h"
#include "model/quant_mix.h"
#include "naive_embed.h"
#include "synth_fixture.h"
#include "tokenizer/gguf_vocab_export.h"

namespace og {
namespace {

namespace fs = std::filesystem;
using synth::Family;

std::vector<float> randoms(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

std::string embed_path(Family f, bool hf) {
  return test::synth_path(synth::tiny_embedding_spec(f), hf, std::string("embed-") + synth::family_name(f));
}

// The vectors of inputs embedded together (one batch).
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

TEST(Pooling, FastEqualsPlain) {
  const int64_t d = 24;
  std::vector<BatchRow> rows;
  for (int s : {3, 0, 7})
    for (int p = 0; p < 2 + s; ++p) rows.push_back({1, s, p, false});
  const std::vector<float> hidden = randoms(rows.size() * d, 9);
  for (Pooling p : {Pooling::kNone, Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    Embeddings fast, plain;
    pool_rows(p, rows, hidden.data(), d, fast);
    pool_rows_ref(p, rows, hidden.data(), d, plain);
    EXPECT_EQ(fast.seqs, plain.seqs) << pooling_name(p);
    EXPECT_EQ(fast.dim, d);
    EXPECT_LE(test::max_rel_err(fast.values, plain.values), 1e-6) << pooling_name(p);
  }
  Embeddings e;
  pool_rows(Pooling::kLast, rows, hidden.data(), d, e);
  EXPECT_EQ(e.seqs, (std::vector<int>{3, 0, 7}));
  EXPECT_EQ(e.values[0], hidden[4 * d]);  // sequence 3's 5th row
  EXPECT_THROW(pool_rows(Pooling::kUnset, rows, hidden.data(), d, e), Error);
}

TEST(Normalisation, FastEqualsPlainForEveryMode) {
  for (int mode : {-1, 0, 1, 2, 3, 5}) {
    std::vector<float> a = randoms(77, 3), b = a;
    normalize_embedding(a.data(), 77, mode);
    normalize_embedding_ref(b.data(), 77, mode);
    EXPECT_LE(test::max_rel_err(a, b), 1e-6) << "mode " << mode;
  }
  std::vector<float> v = {3, -4};
  normalize_embedding(v.data(), 2, 2);
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], -0.8f);
  v = {3, -4};
  normalize_embedding(v.data(), 2, 0);  // max-abs to the int16 range
  EXPECT_FLOAT_EQ(v[1], -32760.0f);
  v = {0, 0};
  normalize_embedding(v.data(), 2, 2);
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_THROW(normalize_embedding(v.data(), 2, -2), Error);
}

TEST(Normalisation, TruncateKeepsTheFirstValues) {
  Embeddings e;
  e.seqs = {0, 1};
  e.dim = 3;
  e.values = {1, 2, 3, 4, 5, 6};
  truncate_embeddings(e, 2);
  EXPECT_EQ(e.values, (std::vector<float>{1, 2, 4, 5}));
  EXPECT_THROW(truncate_embeddings(e, 3), Error);
  EXPECT_THROW(truncate_embeddings(e, 0), Error);
}

class EmbeddingFamily : public ::testing::TestWithParam<Family> {};

TEST_P(EmbeddingFamily, ConfigSaysWhatTheFileSays) {
  for (bool hf : {false, true}) {
    std::unique_ptr<Model> m = Model::load(embed_path(GetParam(), hf));
    const ModelConfig& c = m->config();
    if (GetParam() == Family::kQwen3) {
      EXPECT_EQ(c.pooling, Pooling::kLast);
      EXPECT_TRUE(c.causal);
      EXPECT_TRUE(c.dense.empty());
    } else {
      EXPECT_EQ(c.pooling, Pooling::kMean);
      EXPECT_FALSE(c.causal);
      ASSERT_EQ(c.dense.size(), 2u);
      EXPECT_EQ(c.dense[0].d_out, 4 * c.d_model);
      EXPECT_EQ(c.dense[1].d_out, c.d_model);
    }
    EXPECT_NE(describe_config(c).find(std::string("pooling=") + pooling_name(c.pooling)), std::string::npos);
  }
}

TEST_P(EmbeddingFamily, HfAndGgufEmbedAlike) {
  std::unique_ptr<Model> g = Model::load(embed_path(GetParam(), false));
  std::unique_ptr<Model> h = Model::load(embed_path(GetParam(), true));
  const auto inputs = some_inputs(g->n_vocab());
  const Embeddings a = embed_all(*g, inputs), b = embed_all(*h, inputs);
  ASSERT_EQ(a.seqs.size(), inputs.size());
  EXPECT_EQ(a.dim, g->config().embedding_dim());
  EXPECT_LE(test::max_rel_err(a.values, b.values), 1e-5);
}

TEST_P(EmbeddingFamily, EqualsThePlainPass) {
  // The whole pass (layers, bidirectional window, pooling, dense) against
  // naive_embed.h, written from the math alone; inputs longer than the window.
  const std::string path = embed_path(GetParam(), false);
  const GgufModelSource src = read_gguf_model(path);
  std::unique_ptr<Model> m = Model::load(path);
  const auto inputs = some_inputs(m->n_vocab());
  const Embeddings e = embed_all(*m, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<double> want = test::naive_embed(m->config(), *src.file, inputs[i]);
    const std::vector<float> got(e.values.begin() + i * e.dim, e.values.begin() + (i + 1) * e.dim);
    EXPECT_LE(test::max_rel_err(got, std::vector<float>(want.begin(), want.end())), 1e-5) << "input " << i;
  }
}

TEST_P(EmbeddingFamily, ABatchEqualsOneAtATime) {
  std::unique_ptr<Model> m = Model::load(embed_path(GetParam(), false));
  const auto inputs = some_inputs(m->n_vocab());
  const Embeddings all = embed_all(*m, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Embeddings one = embed_all(*m, {inputs[i]});
    const std::vector<float> row(all.values.begin() + i * all.dim, all.values.begin() + (i + 1) * all.dim);
    EXPECT_LE(test::max_rel_err(row, one.values), 1e-6) << "input " << i;
  }
}

TEST_P(EmbeddingFamily, ExportKeepsTheEmbeddingFacts) {
  test::TempDir dir;
  const std::string hf = embed_path(GetParam(), true), out = dir.path("e.gguf");
  ConvertOptions o;
  ASSERT_TRUE(weight_type_from_name("f32", &o.type));
  o.metadata = tokenizer_gguf_keys(hf);
  export_hf_to_gguf(hf, out, o);
  std::unique_ptr<GgufFile> f = GgufFile::open(out);
  const std::string arch = GetParam() == Family::kQwen3 ? "qwen3" : "gemma-embedding";
  EXPECT_EQ(f->get_string("general.architecture").value_or(""), arch);
  EXPECT_EQ(f->get_int(arch + ".pooling_type").value_or(-1), GetParam() == Family::kQwen3 ? 3 : 1);
  if (GetParam() == Family::kGemma3) {
    EXPECT_EQ(f->get_int(arch + ".dense_2_feat_out").value_or(0), 4 * 64);
    EXPECT_EQ(f->get_int(arch + ".dense_3_feat_in").value_or(0), 4 * 64);
    EXPECT_NE(f->find("dense_2.weight"), nullptr);
    EXPECT_NE(f->find("dense_3.weight"), nullptr);
    EXPECT_EQ(f->get(arch + ".attention.causal"), nullptr);  // implied by the arch
  }
  std::unique_ptr<Model> h = Model::load(hf), g = Model::load(out);
  const auto inputs = some_inputs(h->n_vocab());
  EXPECT_LE(test::max_rel_err(embed_all(*g, inputs).values, embed_all(*h, inputs).values), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Both, EmbeddingFamily, ::testing::Values(Family::kQwen3, Family::kGemma3),
                         [](const auto& i) { return test::family_param_name(i.param); });

TEST(Embedding, BidirectionalDiffersFromCausal) {
  // The same gemma3 weights with causal attention give other vectors: the
  // bidirectional mask is really in force.
  synth::SynthSpec causal = synth::tiny_embedding_spec(Family::kGemma3);
  causal.bidirectional = false;
  std::unique_ptr<Model> c = Model::load(test::synth_path(causal, false, "embed-gemma3-causal"));
  std::unique_ptr<Model> b = Model::load(embed_path(Family::kGemma3, false));
  const auto inputs = some_inputs(c->n_vocab());
  EXPECT_GT(test::max_rel_err(embed_all(*c, inputs).values, embed_all(*b, inputs).values), 1e-3);
}

TEST(Embedding, RefusalsNameTheProblem) {
  std::unique_ptr<Model> gen = Model::load(test::synth_gguf(Family::kQwen3));
  Embeddings e;
  Batch b;
  b.rows.push_back({5, 0, 0, false});
  try {
    gen->embed(b, e);
    FAIL() << "a generative model embedded";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("not an embedding model"), std::string::npos) << err.what();
  }
  std::unique_ptr<Model> bidi = Model::load(embed_path(Family::kGemma3, false));
  b.rows.push_back({6, 0, 2, false});  // a gap: not a whole sequence
  EXPECT_THROW(bidi->embed(b, e), Error);
  // A bidirectional model cannot decode.
  auto cache = make_kv_cache(KvKind::kReference, bidi->kv_geometry(), KvPolicy{});
  std::vector<float> logits;
  Batch one;
  one.rows.push_back({5, 0, 0, true});
  try {
    bidi->forward(one, *cache, logits);
    FAIL() << "a bidirectional model decoded";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("cannot generate"), std::string::npos) << err.what();
  }
}

TEST(Embedding, UnsupportedFileFieldsAreErrors) {
  test::TempDir dir;
  const std::string src = embed_path(Family::kQwen3, false);
  auto expect_error = [&](const GgufValue& v, const std::string& key, const std::string& want) {
    const std::string out = dir.path("bad.gguf");
    test::GgufEdit e;
    e.set_keys.push_back({key, v});
    test::rewrite_gguf(src, out, e);
    try {
      Model::load(out);
      FAIL() << key << " was accepted";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(want), std::string::npos) << err.what();
    }
  };
  expect_error(GgufValue::make_u32(4), "qwen3.pooling_type", "qwen3.pooling_type = 4");
  expect_error(GgufValue::make_u32(64), "qwen3.dense_3_feat_in", "dense_3_feat_* without");
  expect_error(GgufValue::make_string("yes"), "qwen3.attention.causal", "attention.causal must be a bool");

  // HF: a sentence-transformers module we do not run.
  const std::string hf = dir.path("hf");
  fs::copy(embed_path(Family::kQwen3, true), hf, fs::copy_options::recursive);
  std::ofstream(hf + "/modules.json") << R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
    {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
    {"idx":2,"name":"2","path":"2_Lstm","type":"sentence_transformers.models.LSTM"}])";
  try {
    Model::load(hf);
    FAIL() << "an LSTM module was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("LSTM"), std::string::npos) << err.what();
  }
  std::ofstream(hf + "/modules.json") << R"([{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])";
  std::ofstream(hf + "/1_Pooling/config.json") << R"({"pooling_mode_max_tokens": true})";
  try {
    Model::load(hf);
    FAIL() << "max pooling was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("pooling_mode_max_tokens"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace og
