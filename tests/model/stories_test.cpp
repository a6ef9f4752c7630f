// stories260K, a real trained checkpoint, in its GGUF (tied and untied) and HF
// layouts: greedy decoding reproduces REFERENCE_OUTPUTS.md exactly.
#include <gtest/gtest.h>

#include "model/config.h"
#include "model_test_util.h"

namespace og {
namespace {

const std::string kModels = std::string(OG_TESTDATA_DIR) + "/models/";

// REFERENCE_OUTPUTS.md case A: prompt "Once upon a time", positions 0..64.
const std::vector<int32_t> kCaseA = {
    1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410,
    408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388,
    426, 338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310};

// Case B: BOS only, positions 0..256.
const std::vector<int32_t> kCaseB = {
    1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410,
    408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388,
    426, 338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439,
    419, 357, 336, 432, 313, 438, 310, 432, 278, 316, 439, 419, 298, 414, 267, 265, 282, 295, 433, 426, 436, 317,
    286, 296, 418, 269, 279, 292, 416, 439, 413, 409, 416, 327, 263, 415, 294, 267, 400, 426, 338, 336, 432, 313,
    442, 391, 267, 337, 335, 364, 420, 268, 388, 432, 398, 359, 280, 303, 439, 413, 272, 417, 264, 312, 426, 436,
    13,  438, 310, 286, 296, 418, 269, 279, 292, 416, 439, 413, 409, 416, 327, 263, 415, 294, 267, 400, 426, 338,
    336, 432, 313, 442, 439, 423, 262, 304, 420, 422, 432, 317, 426, 359, 279, 292, 416, 439, 413, 409, 416, 327,
    263, 415, 294, 267, 400, 426, 436, 13,  438, 310, 279, 292, 416, 439, 413, 391, 267, 281, 421, 427, 311, 357,
    432, 384, 358, 336, 432, 313, 442, 439, 423, 262, 304, 420, 422, 432, 357, 426, 359, 279, 292, 416, 439, 413,
    409, 416, 327, 263, 415, 294, 267, 400, 426, 436, 320, 285, 357, 336, 432, 313, 455, 289, 439, 413, 263, 304,
    420, 422, 432, 317, 426, 410, 448, 411, 280, 303, 281, 421, 427, 364, 426};

std::vector<int32_t> run_case(const std::string& path, const std::vector<int32_t>& prompt, size_t total,
                              KvKind kind = KvKind::kReference) {
  std::unique_ptr<Model> m = Model::load(path);
  KvPolicy policy;
  policy.max_capacity = 512;
  auto cache = make_kv_cache(kind, m->kv_geometry(), policy);
  return test::greedy(*m, *cache, prompt, total);
}

class Stories : public ::testing::TestWithParam<std::string> {};

TEST_P(Stories, CaseA) {
  const std::vector<int32_t> prompt(kCaseA.begin(), kCaseA.begin() + 5);
  EXPECT_EQ(run_case(kModels + GetParam(), prompt, kCaseA.size()), kCaseA);
}

TEST_P(Stories, CaseB) { EXPECT_EQ(run_case(kModels + GetParam(), {1}, kCaseB.size()), kCaseB); }

TEST_P(Stories, CaseASequenceCache) {
  const std::vector<int32_t> prompt(kCaseA.begin(), kCaseA.begin() + 5);
  EXPECT_EQ(run_case(kModels + GetParam(), prompt, kCaseA.size(), KvKind::kSequence), kCaseA);
}

INSTANTIATE_TEST_SUITE_P(Files, Stories,
                         ::testing::Values("stories260K/stories260K.gguf", "stories260K/stories260K-ggml-org.gguf",
                                           "stories260K-hf"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

TEST(StoriesConfig, ReadsTheHyperParameters) {
  for (const std::string p : {"stories260K/stories260K.gguf", "stories260K-hf"}) {
    std::unique_ptr<Model> m = Model::load(kModels + p);
    const ModelConfig& c = m->config();
    EXPECT_EQ(m->architecture(), "llama");
    EXPECT_EQ(c.d_model, 64);
    EXPECT_EQ(c.n_layers(), 5);
    EXPECT_EQ(m->n_vocab(), 512);
    EXPECT_TRUE(c.tied_output);
    EXPECT_EQ(c.layers[0].n_heads, 8);
    EXPECT_EQ(c.layers[0].n_kv_heads, 4);
    EXPECT_EQ(c.layers[0].head_dim_k, 8);
    EXPECT_EQ(c.layers[0].d_ff, 172);
    EXPECT_EQ(c.layers[0].rope_interleaved, p.ends_with(".gguf"));
    EXPECT_NEAR(c.eps, 1e-5, 1e-9);
    const KvGeometry g = m->kv_geometry();
    EXPECT_EQ(g.caches.size(), 5u);
    EXPECT_EQ(g.caches[0].n_kv_heads, 4);
    EXPECT_EQ(g.caches[0].window, 0);
  }
}

// A real converted F16 file (random weights, the Llama 2 vocabulary): loads,
// reads its hyper-parameters and gives finite logits that depend on the input.
TEST(LlamaTinyRandom, LoadsAndRuns) {
  std::unique_ptr<Model> m = Model::load(kModels + "llama-2-tiny-random-gguf/llama-2-tiny-random.gguf");
  const ModelConfig& c = m->config();
  EXPECT_EQ(m->n_vocab(), 32000);
  EXPECT_EQ(c.d_model, 8);
  EXPECT_EQ(c.n_layers(), 1);
  EXPECT_EQ(c.layers[0].n_heads, 2);
  EXPECT_EQ(c.layers[0].head_dim_k, 4);
  EXPECT_EQ(c.layers[0].d_ff, 32);
  EXPECT_FALSE(c.tied_output);
  auto cache = make_kv_cache(KvKind::kReference, m->kv_geometry(), KvPolicy{});
  std::vector<float> a, b;
  Batch batch;
  batch.rows = {{1, 0, 0, true}, {15043, 0, 1, true}};
  ASSERT_TRUE(m->forward(batch, *cache, a).ok());
  ASSERT_EQ(a.size(), 64000u);
  for (float x : a) ASSERT_TRUE(std::isfinite(x));
  EXPECT_GT(test::max_rel_err({a.begin(), a.begin() + 32000}, {a.begin() + 32000, a.end()}), 1e-3);
}

}  // namespace
}  // namespace og
