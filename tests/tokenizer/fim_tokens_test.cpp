// Fill-in-the-middle markers: found by their texts in vocabularies of code
// models (StarCoder's <fim_prefix>..., DeepSeek-Coder's <｜fim▁begin｜>...),
// none in a vocabulary without them, the GGUF keys taking precedence, a
// partial set (one key alone) giving none, and vocabulary export writing them.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

const std::string kVocab = std::string(OG_TESTDATA_DIR) + "/vocab/";
const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

TEST(FimTokens, FoundByTheirTexts) {
  ASSERT_TRUE(std::filesystem::exists(kVocab + "ggml-vocab-starcoder.gguf")) << "missing test data";
  auto t = Tokenizer::from_path(kVocab + "ggml-vocab-starcoder.gguf");
  const SpecialTokens& s = t->special();
  ASSERT_GE(s.fim_pre, 0);
  EXPECT_EQ(t->token_bytes(s.fim_pre), "<fim_prefix>");
  EXPECT_EQ(t->token_bytes(s.fim_suf), "<fim_suffix>");
  EXPECT_EQ(t->token_bytes(s.fim_mid), "<fim_middle>");
  auto d = Tokenizer::from_path(kVocab + "ggml-vocab-deepseek-coder.gguf");
  ASSERT_GE(d->special().fim_pre, 0);
  EXPECT_EQ(d->token_bytes(d->special().fim_pre), "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>");
  EXPECT_EQ(d->token_bytes(d->special().fim_suf), "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>");
  EXPECT_EQ(d->token_bytes(d->special().fim_mid), "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>");
}

TEST(FimTokens, NoneWithoutThem) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data";
  const auto t = Tokenizer::from_path(kStories);
  const SpecialTokens& s = t->special();
  EXPECT_EQ(s.fim_pre, -1);
  EXPECT_EQ(s.fim_suf, -1);
  EXPECT_EQ(s.fim_mid, -1);
}

// The stories vocabulary with extra keys, as a vocabulary-only GGUF.
std::unique_ptr<Tokenizer> stories_with(const std::vector<std::pair<std::string, uint32_t>>& keys) {
  auto g = GgufFile::open(kStories);
  GgufWriter w;
  for (const auto& [k, v] : g->metadata())
    if (k.rfind("tokenizer.", 0) == 0 || k == "general.architecture") w.set(k, v);
  for (const auto& [k, v] : keys) w.set(k, GgufValue::make_u32(v));
  const std::string path = (std::filesystem::temp_directory_path() / "og_fim_vocab_test.gguf").string();
  w.write(path);
  auto t = Tokenizer::from_path(path);
  std::filesystem::remove(path);
  return t;
}

TEST(FimTokens, GgufKeysTakePrecedenceAndComeAsASet) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data";
  auto t = stories_with({{"tokenizer.ggml.fim_pre_token_id", 10},
                         {"tokenizer.ggml.fim_suf_token_id", 11},
                         {"tokenizer.ggml.fim_mid_token_id", 12}});
  EXPECT_EQ(t->special().fim_pre, 10);
  EXPECT_EQ(t->special().fim_suf, 11);
  EXPECT_EQ(t->special().fim_mid, 12);
  // The older key names.
  t = stories_with({{"tokenizer.ggml.prefix_token_id", 20},
                    {"tokenizer.ggml.suffix_token_id", 21},
                    {"tokenizer.ggml.middle_token_id", 22}});
  EXPECT_EQ(t->special().fim_pre, 20);
  EXPECT_EQ(t->special().fim_mid, 22);
  t = stories_with({{"tokenizer.ggml.fim_pre_token_id", 10}});
  EXPECT_EQ(t->special().fim_pre, -1);
  EXPECT_THROW(stories_with({{"tokenizer.ggml.fim_mid_token_id", 100000}}), Error);
}

}  // namespace
}  // namespace og
