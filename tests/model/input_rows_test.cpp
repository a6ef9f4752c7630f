// The vision seam in the forward pass (docs/vision.md): a batch row that
// carries an embedding instead of a token id, and bidirectional spans
// (image tokens that see each other), without any vision tower. An embedding
// row equal to the token's own scaled embedding gives the token row's logits
// bit for bit; a span gives what a plain forward with the non-causal mask
// gives, on the reference cache and on the fast kinds.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"
#include "file_edit.h"
#include "model/families/family.h"
#include "model/gguf_convert.h"
#include "model/quant_mix.h"
#include "naive_forward.h"
#include "synth_fixture.h"

namespace og {
namespace {

using synth::Family;

std::unique_ptr<KvCache> cache_of(const Model& m, KvKind kind, int64_t max_write = 512, KvDType dt = KvDType::F32) {
  KvPolicy p;
  p.dtype = dt;
  p.max_capacity = 64;
  p.initial_capacity = 16;
  p.max_write = max_write;
  p.max_sequences = 4;
  auto c = make_kv_cache(kind, m.kv_geometry(), p);
  if (kind != KvKind::kSequence)
    for (int s = 1; s < 3; ++s) EXPECT_TRUE(c->add_sequence(s).ok());
  return c;
}

// The row the forward would build for `token`: its embedding times the family's scale (f32, as forward.cpp).
std::vector<float> scaled_embedding(const ModelConfig& c, const GgufFile& f, int32_t token) {
  const float* w = test::tensor_f32(f, "token_embd.weight") + int64_t{token} * c.d_model;
  std::vector<float> e(w, w + c.d_model);
  if (c.embedding_scale != 1.0f)
    for (float& x : e) x *= c.embedding_scale;
  return e;
}

// Logits of `rows` forwarded as steps [cuts[i], cuts[i+1]).
std::vector<float> run_steps(const Model& m, KvCache& cache, const std::vector<BatchRow>& rows,
                             const std::vector<size_t>& cuts) {
  std::vector<float> out, logits;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    Batch b;
    b.rows.assign(rows.begin() + cuts[i], rows.begin() + cuts[i + 1]);
    const KvResult r = m.forward(b, cache, logits);
    if (!r.ok()) throw Error("forward refused: " + r.message);
    out.insert(out.end(), logits.begin(), logits.end());
  }
  return out;
}

std::vector<BatchRow> token_rows(const std::vector<int32_t>& toks, int seq = 0) {
  std::vector<BatchRow> rows;
  for (size_t i = 0; i < toks.size(); ++i) rows.push_back({toks[i], seq, int64_t(i), true});
  return rows;
}

// Tiny Gemma 4 without per-layer inputs: its GGUF reads as
// use_bidirectional_attention = "vision" (spans open in the sliding layers).
std::string gemma4_vision_gguf() {
  synth::SynthSpec s = synth::tiny_spec(Family::kGemma4);
  s.d_per_layer = 0;
  return test::synth_path(s, false, "gemma4-no-ple");
}

// The layers whose config opens image spans (LayerConfig::opens_image_spans).
std::vector<bool> span_layers(const ModelConfig& c) {
  std::vector<bool> v;
  for (const LayerConfig& L : c.layers) v.push_back(L.opens_image_spans);
  return v;
}

class InputRows : public ::testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    // Gemma 4 with per-layer inputs (E2B-style) opens no span: the seam is checked on the "vision" form.
    path_ = GetParam() == Family::kGemma4 ? gemma4_vision_gguf() : test::synth_gguf(GetParam());
    model_ = Model::load(path_);
    file_ = GgufFile::open(path_);
  }
  std::string path_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<GgufFile> file_;
};

TEST_P(InputRows, AnEmbeddingRowEqualToTheTokensGivesItsLogitsBitForBit) {
  const ModelConfig& c = model_->config();
  const std::vector<int32_t> toks = test::test_tokens(12, model_->n_vocab(), 4);
  std::vector<std::vector<float>> embd;
  for (int32_t t : toks) embd.push_back(scaled_embedding(c, *file_, t));
  std::vector<BatchRow> plain = token_rows(toks), mixed = plain;
  for (size_t i : {3, 4, 5, 6, 11}) mixed[i].embedding = embd[i];  // a prefill run and a decode row
  for (KvKind kind : {KvKind::kReference, KvKind::kSequence, KvKind::kBatchedCell}) {
    auto a = cache_of(*model_, kind);
    auto b = cache_of(*model_, kind);
    const std::vector<float> want = run_steps(*model_, *a, plain, {0, 2, 11, 12});
    const std::vector<float> got = run_steps(*model_, *b, mixed, {0, 2, 11, 12});
    ASSERT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want) << kv_kind_name(kind) << ": max rel err " << test::max_rel_err(got, want);
  }
}

TEST_P(InputRows, ABidirectionalSpanMatchesThePlainForwardWithTheNonCausalMask) {
  const ModelConfig& c = model_->config();
  const std::vector<int32_t> toks = test::test_tokens(16, model_->n_vocab(), 6);
  const int64_t a = 4, e = 10;  // the span [4, 10), longer than nothing, inside the window (8) only in part
  std::vector<BatchRow> causal = token_rows(toks), spanned = causal;
  for (int64_t p = a; p < e; ++p) spanned[size_t(p)].span_end = e;
  const std::vector<float> want = test::naive_forward(c, *file_, toks, false, a, e, span_layers(c));
  const std::vector<float> causal_want = test::naive_forward(c, *file_, toks);
  const int64_t V = model_->n_vocab();
  // The mask matters: the span's first row differs from causal attention.
  std::vector<float> w4(want.begin() + a * V, want.begin() + (a + 1) * V);
  std::vector<float> c4(causal_want.begin() + a * V, causal_want.begin() + (a + 1) * V);
  ASSERT_GT(test::max_rel_err(w4, c4), 1e-3);
  std::vector<float> ref_out;
  for (KvKind kind : {KvKind::kReference, KvKind::kSequence, KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    auto ch = cache_of(*model_, kind);
    auto cc = cache_of(*model_, kind);
    const std::vector<float> got = run_steps(*model_, *ch, spanned, {0, 3, 4, 12, 13, 16});
    const std::vector<float> plain = run_steps(*model_, *cc, causal, {0, 3, 4, 12, 13, 16});
    EXPECT_LE(test::max_rel_err(got, want), test::logit_tol(GetParam())) << kv_kind_name(kind);
    // Rows before the span are the causal run's, bit for bit.
    EXPECT_TRUE(std::equal(got.begin(), got.begin() + a * V, plain.begin())) << kv_kind_name(kind);
    if (kind == KvKind::kReference) ref_out = got;
    else EXPECT_LE(test::max_rel_err(got, ref_out), test::logit_tol(GetParam())) << "fast " << kv_kind_name(kind);
  }
}

TEST_P(InputRows, SpansOnTheFastKindsEqualTheReferenceAtEveryStorageDtype) {
  const std::vector<int32_t> toks = test::test_tokens(14, model_->n_vocab(), 10);
  const std::vector<BatchRow> causal = token_rows(toks);
  std::vector<BatchRow> rows = causal;
  for (int64_t p = 3; p < 11; ++p) rows[size_t(p)].span_end = 11;
  const std::vector<size_t> steps = {0, 2, 3, 12, 14};
  // The fast kinds' 16-bit and q8_0 kernels round differently from the
  // reference's double accumulation even without a span (up to ~1e-4 here);
  // the span itself moves the logits by far more than the tolerance.
  constexpr double kTol = 5e-4;
  for (KvDType dt : {KvDType::F16, KvDType::BF16, KvDType::Q8_0}) {  // K in blocks (f16, bf16) and in rows (q8_0)
    auto ref = cache_of(*model_, KvKind::kReference, 512, dt);
    auto ref_causal = cache_of(*model_, KvKind::kReference, 512, dt);
    const std::vector<float> want = run_steps(*model_, *ref, rows, steps);
    ASSERT_GT(test::max_rel_err(run_steps(*model_, *ref_causal, causal, steps), want), 20 * kTol);
    for (KvKind kind : {KvKind::kSequence, KvKind::kBatchedCell}) {
      auto c = cache_of(*model_, kind, 512, dt);
      EXPECT_LE(test::max_rel_err(run_steps(*model_, *c, rows, steps), want), kTol)
          << kv_kind_name(kind) << " " << kv_dtype_name(dt);
    }
  }
}

TEST_P(InputRows, ASpanInABatchOfSequencesEqualsTheSequenceAlone) {
  const std::vector<int32_t> t0 = test::test_tokens(10, model_->n_vocab(), 8);
  const std::vector<int32_t> t1 = test::test_tokens(7, model_->n_vocab(), 9);
  std::vector<BatchRow> r0 = token_rows(t0, 1), r1 = token_rows(t1, 2);
  for (int64_t p = 2; p < 7; ++p) r0[size_t(p)].span_end = 7;
  auto alone = cache_of(*model_, KvKind::kBatchedCell);
  const std::vector<float> want = run_steps(*model_, *alone, r0, {0, 10});
  auto shared = cache_of(*model_, KvKind::kBatchedCell);
  Batch b;
  b.rows = r1;
  b.rows.insert(b.rows.end(), r0.begin(), r0.end());
  std::vector<float> logits;
  ASSERT_TRUE(model_->forward(b, *shared, logits).ok());
  const std::vector<float> got(logits.begin() + 7 * model_->n_vocab(), logits.end());
  EXPECT_TRUE(got == want) << test::max_rel_err(got, want);
}

INSTANTIATE_TEST_SUITE_P(Families, InputRows, ::testing::ValuesIn(test::all_families()),
                         [](const auto& i) { return test::family_param_name(i.param); });

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(InputRowsBad, WrongWidthSpansOutsideTheStepAndBrokenSpansAreClearErrors) {
  std::unique_ptr<Model> m = Model::load(test::synth_gguf(Family::kGemma3));
  const int64_t d = m->config().d_model;
  auto cache = cache_of(*m, KvKind::kReference);
  std::vector<float> logits, narrow(size_t(d - 1), 0.5f);
  Batch b;
  b.rows = token_rows({5, 6, 7});
  b.rows[1].embedding = narrow;
  EXPECT_NE(error_of([&] { (void)m->forward(b, *cache, logits); }).find("carries an embedding of " +
                                                                          std::to_string(d - 1) + " values"),
            std::string::npos);
  EXPECT_EQ(cache->length(0), 0);
  // A span that ends past the step: refused, nothing changed.
  b.rows = token_rows({5, 6, 7});
  b.rows[1].span_end = 5;
  b.rows[2].span_end = 5;
  KvResult r = m->forward(b, *cache, logits);
  EXPECT_EQ(r.status, KvStatus::kInvalid);
  EXPECT_NE(r.message.find("a span must be whole in one step"), std::string::npos) << r.message;
  EXPECT_EQ(cache->length(0), 0);
  // A row after a span's start that sees less than the one before: not a whole span.
  b.rows = token_rows({5, 6, 7});
  b.rows[0].span_end = 3;
  r = m->forward(b, *cache, logits);
  EXPECT_EQ(r.status, KvStatus::kInvalid);
  EXPECT_NE(r.message.find("sees less than the row before it"), std::string::npos) << r.message;
  // mark_bidirectional wants every position of the span in the batch.
  b.rows = token_rows({5, 6, 7});
  EXPECT_NE(error_of([&] { b.mark_bidirectional(0, 1, 4); }).find("has 2 of its 3 positions in the batch"),
            std::string::npos);
  EXPECT_NE(error_of([&] { b.mark_bidirectional(0, 2, 2); }).find("is empty"), std::string::npos);
  b.mark_bidirectional(0, 1, 3);
  EXPECT_EQ(b.rows[0].span_end, 0);
  EXPECT_EQ(b.rows[1].span_end, 3);
  EXPECT_EQ(b.rows[2].span_end, 3);
  EXPECT_TRUE(m->forward(b, *cache, logits).ok());
}

TEST(InputRowsBad, AnEmbeddingPassRefusesASpan) {
  std::unique_ptr<Model> m =
      Model::load(test::synth_path(synth::tiny_embedding_spec(Family::kQwen3), false, "embed-qwen3"));
  Batch b;
  b.rows = token_rows({5, 6, 7});
  b.rows[0].span_end = 2;
  b.rows[1].span_end = 2;
  Embeddings out;
  EXPECT_NE(error_of([&] { m->embed(b, out); }).find("only a cached forward step supports"), std::string::npos);
}

// Gemma 4 as transformers' Gemma4Model.forward: without "vision" (E2B/E4B)
// image tokens are causal in every layer; with it they attend to their image
// in the sliding layers only (create_masks_for_vision_model); Gemma 3 in all.
TEST(InputRowsGemma4, WithoutVisionAnImageSpanIsExactlyCausal) {
  const std::string path = test::synth_gguf(Family::kGemma4);  // per-layer inputs: the flag unset
  std::unique_ptr<Model> m = Model::load(path);
  for (const LayerConfig& L : m->config().layers) EXPECT_FALSE(L.opens_image_spans);
  const std::vector<int32_t> toks = test::test_tokens(14, m->n_vocab(), 12);
  std::vector<BatchRow> causal = token_rows(toks), spanned = causal;
  for (int64_t p = 3; p < 11; ++p) spanned[size_t(p)].span_end = 11;
  for (KvKind kind : {KvKind::kReference, KvKind::kSequence, KvKind::kBatchedCell}) {
    auto a = cache_of(*m, kind);
    auto b = cache_of(*m, kind);
    EXPECT_TRUE(run_steps(*m, *a, spanned, {0, 2, 12, 14}) == run_steps(*m, *b, causal, {0, 2, 12, 14}))
        << kv_kind_name(kind);
  }
}

TEST(InputRowsGemma4, WithVisionOnlyTheSlidingLayersOpenTheSpan) {
  const std::string path = gemma4_vision_gguf();
  std::unique_ptr<Model> m = Model::load(path);
  std::unique_ptr<GgufFile> f = GgufFile::open(path);
  const ModelConfig& c = m->config();
  std::vector<bool> sliding;
  for (const LayerConfig& L : c.layers) sliding.push_back(L.window > 0);
  ASSERT_NE(std::count(sliding.begin(), sliding.end(), false), 0);  // full layers exist
  EXPECT_EQ(span_layers(c), sliding);
  const std::vector<int32_t> toks = test::test_tokens(16, m->n_vocab(), 13);
  const int64_t a = 4, e = 10;
  std::vector<BatchRow> rows = token_rows(toks);
  for (int64_t p = a; p < e; ++p) rows[size_t(p)].span_end = e;
  const std::vector<float> want = test::naive_forward(c, *f, toks, false, a, e, sliding);
  const std::vector<float> every = test::naive_forward(c, *f, toks, false, a, e);  // Gemma 3's mask
  const std::vector<float> causal = test::naive_forward(c, *f, toks);
  // Both other masks give other logits: the test tells the three apart.
  ASSERT_GT(test::max_rel_err(want, every), 1e-3);
  ASSERT_GT(test::max_rel_err(want, causal), 1e-3);
  for (KvKind kind : {KvKind::kReference, KvKind::kSequence, KvKind::kBatchedCell}) {
    auto cache = cache_of(*m, kind);
    EXPECT_LE(test::max_rel_err(run_steps(*m, *cache, rows, {0, 3, 4, 12, 13, 16}), want),
              test::logit_tol(Family::kGemma4))
        << kv_kind_name(kind);
  }
}

TEST(InputRowsGemma4, TheHfConfigsUseBidirectionalAttentionDecides) {
  const std::string src = test::synth_hf(Family::kGemma4);
  test::TempDir dir;
  auto layers_with = [&](const nlohmann::json* v, const std::string& name) {
    test::HfEdit e;
    e.config = [v](nlohmann::json& c) {
      if (v != nullptr) c["text_config"]["use_bidirectional_attention"] = *v;
    };
    test::rewrite_hf(src, dir.path(name), e);
    return span_layers(Model::load(dir.path(name))->config());
  };
  const nlohmann::json vision = "vision", no = false;
  std::unique_ptr<Model> m = Model::load(src);
  std::vector<bool> sliding, none(size_t(m->config().n_layers()), false);
  for (const LayerConfig& L : m->config().layers) sliding.push_back(L.window > 0);
  EXPECT_EQ(layers_with(nullptr, "unset"), none);  // E2B, E4B
  EXPECT_EQ(layers_with(&no, "false"), none);
  EXPECT_EQ(layers_with(&vision, "vision"), sliding);  // 26B-A4B, 31B
  // GGUF has no key for it: per-layer inputs with "vision" (no such Google
  // model) would read back causal, so export refuses it; the usual form exports.
  ConvertOptions o;
  ASSERT_TRUE(weight_type_from_name("f32", &o.type));
  std::string error = "(no error)";
  try {
    export_hf_to_gguf(dir.path("vision"), dir.path("v.gguf"), o);
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("has no GGUF key"), std::string::npos) << error;
  export_hf_to_gguf(dir.path("unset"), dir.path("u.gguf"), o);
  EXPECT_EQ(span_layers(Model::load(dir.path("u.gguf"))->config()), none);
}

TEST(InputRowsGemma4, GemmaThreeOpensTheSpanInEveryLayer) {
  std::unique_ptr<Model> m = Model::load(test::synth_gguf(Family::kGemma3));
  for (const LayerConfig& L : m->config().layers) EXPECT_TRUE(L.opens_image_spans);
}

TEST(InputRowsFamilies, GemmaDeclaresBidirectionalImageSpansAndOthersDoNot) {
  EXPECT_TRUE(family_by_name("gemma3")->image_spans_bidirectional);
  EXPECT_TRUE(family_by_name("gemma4")->image_spans_bidirectional);
  EXPECT_FALSE(family_by_name("llama")->image_spans_bidirectional);
  EXPECT_FALSE(family_by_name("qwen2")->image_spans_bidirectional);
}

}  // namespace
}  // namespace og
