// Embedder (runtime/embedder.h): inputs packed many to a forward pass give the
// vectors they give one pass each; truncation then normalisation; every bad
// input is an og::Error naming it.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "runtime/embedder.h"
#include "synth/synth.h"
#include "temp_dir.h"

namespace og {
namespace {

class EmbedderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = dir_.path("g.gguf");
    synth::write_gguf(synth::tiny_embedding_spec(synth::Family::kGemma3), path);
    m_ = Model::load(path);
  }
  test::TempDir dir_;
  std::unique_ptr<Model> m_;
};

std::vector<std::vector<int32_t>> inputs() {
  return {{1, 5, 9, 33, 2}, {1, 7}, {1, 100, 200, 300, 400, 17, 18, 19, 20}, {1}};
}

TEST_F(EmbedderTest, PackingDoesNotChangeVectors) {
  const Embedder e(*m_);
  EmbedOptions packed;
  const EmbedResult a = e.embed(inputs(), packed);
  EXPECT_EQ(a.forward_passes, 1);
  EXPECT_EQ(a.prompt_tokens, 17);
  EmbedOptions single = packed;
  single.batch_rows = 1;  // each input in a pass of its own
  const EmbedResult b = e.embed(inputs(), single);
  EXPECT_EQ(b.forward_passes, 4);
  ASSERT_EQ(a.vectors.size(), 4u);
  for (size_t i = 0; i < a.vectors.size(); ++i) {
    ASSERT_EQ(a.vectors[i].size(), 64u);
    for (size_t k = 0; k < 64; ++k) EXPECT_NEAR(a.vectors[i][k], b.vectors[i][k], 1e-6) << i;
  }
  EmbedOptions two = packed;
  two.batch_rows = 10;  // 5 + 2 tokens, then 9 + 1
  EXPECT_EQ(e.embed(inputs(), two).forward_passes, 2);
}

TEST_F(EmbedderTest, DimensionsTruncateThenNormalise) {
  const Embedder e(*m_);
  EmbedOptions raw;
  raw.normalize = -1;
  const std::vector<float> full = e.embed({{1, 5, 9}}, raw).vectors[0];
  EmbedOptions cut;
  cut.dimensions = 10;
  const EmbedResult r = e.embed({{1, 5, 9}}, cut);
  ASSERT_EQ(r.dim, 10);
  double n = 0;
  for (int k = 0; k < 10; ++k) n += double(full[k]) * full[k];
  n = std::sqrt(n);
  for (int k = 0; k < 10; ++k) EXPECT_NEAR(r.vectors[0][k], full[k] / n, 1e-6);
}

TEST_F(EmbedderTest, BadInputsAreErrors) {
  const Embedder e(*m_);
  auto expect_error = [&](const std::vector<std::vector<int32_t>>& in, EmbedOptions o, const std::string& want) {
    try {
      e.embed(in, o);
      FAIL() << "accepted: " << want;
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(want), std::string::npos) << err.what();
    }
  };
  expect_error({}, {}, "no input");
  expect_error({{1}, {}}, {}, "input 1 is empty");
  expect_error({{1, 512}}, {}, "input 0: token id 512 is out of range [0, 512)");
  expect_error({std::vector<int32_t>(3000, 5)}, {}, "more than the model's context of 2048");
  EmbedOptions d;
  d.dimensions = 65;
  expect_error({{1}}, d, "dimensions 65");
  EmbedOptions n;
  n.normalize = -2;
  expect_error({{1}}, n, "normalisation -2");
}

TEST(Embedder, AGenerativeModelIsRefused) {
  test::TempDir dir;
  synth::write_gguf(synth::tiny_spec(synth::Family::kQwen3), dir.path("q.gguf"));
  std::unique_ptr<Model> m = Model::load(dir.path("q.gguf"));
  EXPECT_NE(embedding_refusal(*m).find("not an embedding model"), std::string::npos);
  EXPECT_THROW(Embedder(*m).embed({{1, 2}}, {}), Error);
}

}  // namespace
}  // namespace og
