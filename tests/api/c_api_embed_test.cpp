// og_embed / og_embed_tokens and og_model_info's embedding facts on og-synth's
// embedding models (written by the og-synth binary at test time): a causal
// qwen3 with last-token pooling and a bidirectional bert (cls pooling). An
// embedding-only model refuses sessions and engines with a clear error, and a
// generating model without pooling refuses og_embed. (python/tests checks the
// vectors against POST /v1/embeddings bit for bit.)
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "api/api_test_util.h"
#include "offgraph/offgraph.hpp"

namespace og_test {
namespace {

namespace fs = std::filesystem;

struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("og-api-embed-" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// og-synth's embedding model of `family`, written once per process.
std::string embed_file(const std::string& family) {
  static const ScratchDir scratch;
  const std::string out = (scratch.path / (family + ".gguf")).string();
  if (!fs::exists(out)) {
    const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family " + family +
                            " --embedding --format gguf --out '" + out + "' > /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  return out;
}

og_model* open_model(const std::string& path) {
  og_model* m = nullptr;
  EXPECT_EQ(og_model_open(path.c_str(), nullptr, &m), OG_OK) << og_last_error();
  return m;
}

double norm(const float* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(v[i]) * v[i];
  return std::sqrt(s);
}

TEST(CApiEmbed, InfoSaysWhetherAModelEmbedsOrGenerates) {
  og_model* stories = open_model(kModelPath);
  og_model* bert = open_model(embed_file("bert"));
  og_model* qwen = open_model(embed_file("qwen3"));
  ASSERT_TRUE(stories && bert && qwen);
  og_model_info i{};
  ASSERT_EQ(og_model_get_info(stories, &i), OG_OK);
  EXPECT_EQ(i.generates, 1);
  EXPECT_EQ(i.embeds, 0);
  EXPECT_EQ(i.embedding_dim, 0);
  EXPECT_STREQ(i.pooling, "");
  ASSERT_EQ(og_model_get_info(bert, &i), OG_OK);
  EXPECT_EQ(i.generates, 0);
  EXPECT_EQ(i.embeds, 1);
  EXPECT_GT(i.embedding_dim, 0);
  EXPECT_STREQ(i.pooling, "cls");
  ASSERT_EQ(og_model_get_info(qwen, &i), OG_OK);
  EXPECT_EQ(i.generates, 1);
  EXPECT_EQ(i.embeds, 1);
  EXPECT_STRNE(i.pooling, "");
  for (og_model* m : {stories, bert, qwen}) og_model_close(m);
}

TEST(CApiEmbed, OneOrManyTextsWithThePooledUnitVectors) {
  for (const std::string family : {"bert", "qwen3"}) {
    og_model* m = open_model(embed_file(family));
    ASSERT_TRUE(m);
    og_model_info info{};
    ASSERT_EQ(og_model_get_info(m, &info), OG_OK);
    const char* texts[] = {"Once upon a time", "The cat sat on the mat"};
    og_embeddings two{};
    ASSERT_EQ(og_embed(m, texts, 2, nullptr, &two), OG_OK) << og_last_error();
    ASSERT_EQ(two.n, 2u);
    ASSERT_EQ(two.dim, info.embedding_dim);
    EXPECT_GT(two.prompt_tokens, 4);
    for (size_t k = 0; k < 2; ++k) EXPECT_NEAR(norm(two.data + k * two.dim, two.dim), 1.0, 1e-5) << family;
    // Each alone, and as token ids, gives the same vector.
    for (size_t k = 0; k < 2; ++k) {
      og_embeddings one{};
      ASSERT_EQ(og_embed(m, &texts[k], 1, nullptr, &one), OG_OK) << og_last_error();
      ASSERT_EQ(one.n, 1u);
      for (int64_t j = 0; j < one.dim; ++j) EXPECT_NEAR(one.data[j], two.data[k * two.dim + j], 1e-5) << family;
      og_tokens t{};
      ASSERT_EQ(og_tokenize(m, texts[k], std::strlen(texts[k]), 1, 0, &t), OG_OK);
      const int32_t* ids[] = {t.ids};
      const size_t lens[] = {t.n};
      og_embeddings by_ids{};
      ASSERT_EQ(og_embed_tokens(m, ids, lens, 1, nullptr, &by_ids), OG_OK) << og_last_error();
      EXPECT_EQ(std::memcmp(by_ids.data, one.data, one.dim * sizeof(float)), 0) << family;
      og_embeddings_free(&by_ids);
      og_tokens_free(&t);
      og_embeddings_free(&one);
    }
    // Matryoshka: the first 16 values, normalised again; no normalisation keeps the raw pooled values.
    og_embed_options o;
    og_embed_options_init(&o);
    EXPECT_EQ(o.normalize, 2);
    o.dimensions = 16;
    og_embeddings cut{};
    ASSERT_EQ(og_embed(m, texts, 1, &o, &cut), OG_OK) << og_last_error();
    EXPECT_EQ(cut.dim, 16);
    EXPECT_NEAR(norm(cut.data, 16), 1.0, 1e-5);
    og_embeddings_free(&cut);
    og_embeddings_free(&two);
    og_embeddings_free(&two);  // twice is fine
    og_model_close(m);
  }
}

TEST(CApiEmbed, BadInputsAreClearErrors) {
  og_model* bert = open_model(embed_file("bert"));
  og_model* stories = open_model(kModelPath);
  ASSERT_TRUE(bert && stories);
  og_embeddings e{};
  const char* texts[] = {"hello", ""};
  EXPECT_EQ(og_embed(stories, texts, 1, nullptr, &e), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("is not an embedding model"), std::string::npos) << og_last_error();
  EXPECT_EQ(og_embed(bert, texts, 0, nullptr, &e), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_embed(bert, nullptr, 1, nullptr, &e), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_embed(bert, texts, 1, nullptr, nullptr), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_embed(bert, texts, 2, nullptr, &e), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "texts[1] is empty");
  og_embed_options o;
  og_embed_options_init(&o);
  o.dimensions = 1 << 20;
  EXPECT_EQ(og_embed(bert, texts, 1, &o, &e), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("dimensions 1048576"), std::string::npos) << og_last_error();
  og_embed_options_init(&o);
  o.normalize = -2;
  EXPECT_EQ(og_embed(bert, texts, 1, &o, &e), OG_ERR_INVALID_ARGUMENT);
  const int32_t bad[] = {1, 1 << 30};
  const int32_t* ids[] = {bad};
  const size_t lens[] = {2};
  EXPECT_EQ(og_embed_tokens(bert, ids, lens, 1, nullptr, &e), OG_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(og_last_error()).find("ids[0][1]: token id 1073741824 is out of range [0, "), std::string::npos) << og_last_error();
  EXPECT_EQ(e.data, nullptr);
  EXPECT_EQ(og_embed(nullptr, texts, 1, nullptr, &e), OG_ERR_INVALID_HANDLE);
  og_model_close(stories);
  og_model_close(bert);
}

TEST(CApiEmbed, AnEmbeddingOnlyModelRefusesToGenerate) {
  og_model* bert = open_model(embed_file("bert"));
  ASSERT_TRUE(bert);
  og_session* s = nullptr;
  EXPECT_EQ(og_session_new(bert, nullptr, &s), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("only embeds (bidirectional attention), so it cannot generate: use og_embed"),
            std::string::npos)
      << og_last_error();
  EXPECT_EQ(s, nullptr);
  og_engine* e = nullptr;
  EXPECT_EQ(og_engine_new(bert, nullptr, &e), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("only embeds"), std::string::npos) << og_last_error();
  og_model_close(bert);
}

TEST(CApiEmbed, ThreadsEmbedAndGenerateAtOnce) {
  og_model* qwen = open_model(embed_file("qwen3"));
  ASSERT_TRUE(qwen);
  og_embeddings ref{};
  const char* text[] = {"Once upon a time"};
  ASSERT_EQ(og_embed(qwen, text, 1, nullptr, &ref), OG_OK) << og_last_error();
  std::thread gen([&] {
    og_session* s = nullptr;
    ASSERT_EQ(og_session_new(qwen, nullptr, &s), OG_OK) << og_last_error();
    og_generate_options g = greedy(20);
    og_generation out{};
    const int32_t prompt[] = {1, 2, 3};
    EXPECT_EQ(og_session_generate(s, prompt, 3, &g, &out), OG_OK) << og_last_error();
    og_generation_free(&out);
    og_session_free(s);
  });
  for (int k = 0; k < 5; ++k) {
    og_embeddings e{};
    ASSERT_EQ(og_embed(qwen, text, 1, nullptr, &e), OG_OK) << og_last_error();
    EXPECT_EQ(std::memcmp(e.data, ref.data, ref.dim * sizeof(float)), 0);
    og_embeddings_free(&e);
  }
  gen.join();
  og_embeddings_free(&ref);
  og_model_close(qwen);
}

TEST(CApiEmbed, TheCppWrapperGivesTheSameVectors) {
  offgraph::Model m(embed_file("qwen3"));
  const std::vector<std::vector<float>> v = m.embed({"Once upon a time", "A dog"});
  ASSERT_EQ(v.size(), 2u);
  og_embeddings e{};
  const char* texts[] = {"Once upon a time", "A dog"};
  ASSERT_EQ(og_embed(m.get(), texts, 2, nullptr, &e), OG_OK);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(v[i], std::vector<float>(e.data + i * e.dim, e.data + (i + 1) * e.dim));
  og_embeddings_free(&e);
  offgraph::Model stories(kModelPath);
  EXPECT_THROW(stories.embed({"x"}), offgraph::Error);
}

}  // namespace
}  // namespace og_test
