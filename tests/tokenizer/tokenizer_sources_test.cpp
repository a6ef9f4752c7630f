// Tokenizer sources: the same stories260K vocabulary through GGUF, tokenizer.json
// (file and directory) and SentencePiece, special ids, flags and stop ids.
#include <gtest/gtest.h>

#include "tokenizer/loaders.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

const std::string kModels = std::string(OG_TESTDATA_DIR) + "/models/";
const std::string kVocab = std::string(OG_TESTDATA_DIR) + "/vocab/";
const std::vector<int32_t> kOnceUponATime = {1, 403, 407, 261, 378};

void check_stories(const Tokenizer& tok) {
  EXPECT_EQ(tok.encode("Once upon a time", true, false), kOnceUponATime) << tok.kind();
  EXPECT_EQ(tok.n_vocab(), 512);
  EXPECT_EQ(tok.special().bos, 1);
  EXPECT_EQ(tok.special().eos, 2);
  EXPECT_TRUE(tok.special().add_bos);
  EXPECT_FALSE(tok.special().add_eos);
  EXPECT_TRUE(tok.strips_leading_space());
  EXPECT_EQ(tok.decode(kOnceUponATime), "Once upon a time");
  EXPECT_EQ(tok.special().stop_ids, std::vector<int32_t>{2});
  EXPECT_EQ(tok.token_type(1), TokenType::kControl);
  EXPECT_EQ(tok.token_bytes(3 + 'A'), "A");  // <0x41> byte piece
  EXPECT_EQ(tok.token_type(3 + 'A'), TokenType::kByte);
  EXPECT_EQ(tok.find_piece("<s>"), std::optional<int32_t>(1));
  // A user's text cannot inject control tokens unless asked to.
  EXPECT_NE(tok.encode("<s>", false, false), std::vector<int32_t>{1});
  EXPECT_EQ(tok.encode("<s>", false, true), std::vector<int32_t>{1});
}

TEST(TokenizerSources, Stories260kGguf) { check_stories(*Tokenizer::from_path(kModels + "stories260K/stories260K.gguf")); }
TEST(TokenizerSources, Stories260kGgmlOrgGguf) {
  auto tok = Tokenizer::from_path(kModels + "stories260K/stories260K-ggml-org.gguf");
  EXPECT_EQ(tok->encode("Once upon a time", true, false), kOnceUponATime);
  EXPECT_EQ(tok->special().pad, -1);  // 4294967295 means none
}
TEST(TokenizerSources, Stories260kTokenizerJson) {
  check_stories(*Tokenizer::from_path(kModels + "stories260K-hf/tokenizer.json"));
}
TEST(TokenizerSources, Stories260kHfDirectory) { check_stories(*Tokenizer::from_path(kModels + "stories260K-hf")); }
TEST(TokenizerSources, Stories260kSentencePiece) {
  check_stories(*Tokenizer::from_path(kModels + "stories260K/tok512.model"));
}

TEST(TokenizerSources, Llama2TinyRandomGguf) {
  auto tok = Tokenizer::from_path(kModels + "llama-2-tiny-random-gguf/llama-2-tiny-random.gguf");
  EXPECT_EQ(tok->n_vocab(), 32000);
  // Same vocabulary as llama2-spm/tokenizer.model.
  auto sp = Tokenizer::from_path(kVocab + "llama2-spm/tokenizer.model");
  for (const char* s : {"Hello world", " leading", "tabs\tand\nnewlines", "Ünïcödé 日本語 🙂"})
    EXPECT_EQ(tok->encode(s, true, false), sp->encode(s, true, false)) << s;
}

TEST(TokenizerSources, Llama32SpecialTokens) {
  auto tok = Tokenizer::from_path(kVocab + "llama3.2-bpe/tokenizer.json");
  EXPECT_EQ(tok->n_vocab(), 128256);
  EXPECT_EQ(tok->encode("Hello world", true, false), (std::vector<int32_t>{128000, 9906, 1917}));
  EXPECT_EQ(tok->special().bos, 128000);
  EXPECT_EQ(tok->special().eot, 128009);
  EXPECT_EQ(tok->special().eom, 128008);
  const auto& stop = tok->special().stop_ids;
  for (int32_t id : {128001, 128008, 128009})
    EXPECT_NE(std::find(stop.begin(), stop.end(), id), stop.end()) << id;
  EXPECT_EQ(tok->token_type(128009), TokenType::kControl);
  // parse_special: control texts become their ids only when asked.
  const std::string chat = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
  EXPECT_EQ(tok->encode(chat, false, true),
            (std::vector<int32_t>{128006, 882, 128007, 271, 13347, 128009}));
  const auto plain = tok->encode(chat, false, false);
  for (int32_t id : plain) EXPECT_LT(id, 128000);
  EXPECT_EQ(tok->decode(plain), chat);
  EXPECT_EQ(tok->decode(tok->encode(chat, true, true), false), "<|begin_of_text|>" + chat);
  EXPECT_EQ(tok->decode(tok->encode(chat, true, true), true), "user\n\nHi");
}

TEST(TokenizerSources, GgufSpecialIdsAndFlags) {
  auto phi3 = Tokenizer::from_path(kVocab + "ggml-vocab-phi-3.gguf");
  EXPECT_EQ(phi3->special().eos, 32000);
  EXPECT_EQ(phi3->special().eot, 32007);  // <|end|>
  EXPECT_TRUE(phi3->special().add_bos);
  auto gpt2 = Tokenizer::from_path(kVocab + "ggml-vocab-gpt-2.gguf");
  EXPECT_FALSE(gpt2->special().add_bos);
  EXPECT_EQ(gpt2->special().stop_ids, std::vector<int32_t>{50256});
  // gpt-neox: no tokenizer.ggml.pre -> the default regex chain.
  auto neox = Tokenizer::from_path(kVocab + "ggml-vocab-gpt-neox.gguf");
  EXPECT_EQ(neox->decode(neox->encode("Hello world 123", false, false)), "Hello world 123");
  auto baichuan = Tokenizer::from_path(kVocab + "ggml-vocab-baichuan.gguf");
  EXPECT_EQ(baichuan->decode(baichuan->encode("Hello world", false, false)), "Hello world");
}

}  // namespace
}  // namespace og
