// An HF WordPiece tokenizer.json (BERT: BertNormalizer, BertPreTokenizer,
// [CLS] $A [SEP]) tokenizes as the same vocabulary in GGUF "bert" form (the
// test data's BGE vocabulary; og-synth writes both), and exports to that
// GGUF form (tokenizer.ggml.model bert, cls / seperator ids).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "synth/synth.h"
#include "tokenizer/gguf_vocab_export.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

struct Files {
  std::string gguf, hf;
};

const Files& files() {
  static const Files f = [] {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("og_wpm_tok_" + std::to_string(std::random_device{}()))).string();
    std::filesystem::create_directories(dir);
    const synth::SynthSpec spec = synth::tiny_spec(synth::Family::kBert);
    Files x{dir + "/b.gguf", dir + "/hf"};
    synth::write_gguf(spec, x.gguf);
    synth::write_hf(spec, x.hf);
    return x;
  }();
  return f;
}

TEST(WordPieceJson, TokenizesAsTheGgufVocabulary) {
  auto g = Tokenizer::from_path(files().gguf), h = Tokenizer::from_path(files().hf);
  EXPECT_EQ(h->kind(), "tokenizer.json WordPiece");
  for (const char* text : {"Hello world, unaffable naive CAFE!", "na\xC3\xAFve caf\xC3\xA9 \xE6\x9D\xB1\xE4\xBA\xAC x",
                           "  spaces\tand\nnewlines  ", "[CLS] is text here", "12,345.67 don't", ""}) {
    EXPECT_EQ(h->encode(text, true, false), g->encode(text, true, false)) << text;
    EXPECT_EQ(h->decode(h->encode(text, false, false)), g->decode(g->encode(text, false, false))) << text;
  }
  const std::vector<int32_t> ids = h->encode("hello", true, false);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 101);  // [CLS]
  EXPECT_EQ(ids.back(), 102);   // [SEP]
  EXPECT_EQ(h->special().unk, 100);
  EXPECT_EQ(h->special().pad, 0);
}

TEST(WordPieceJson, ExportsAsGgufBert) {
  std::map<std::string, GgufValue> k;
  for (auto& [key, v] : tokenizer_gguf_keys(files().hf)) k.emplace(key, v);
  ASSERT_TRUE(k.count("tokenizer.ggml.model"));
  EXPECT_EQ(k.at("tokenizer.ggml.model").s, "bert");
  EXPECT_EQ(k.at("tokenizer.ggml.cls_token_id").u, 101u);
  EXPECT_EQ(k.at("tokenizer.ggml.seperator_token_id").u, 102u);
  EXPECT_EQ(k.at("tokenizer.ggml.unknown_token_id").u, 100u);
  EXPECT_EQ(k.at("tokenizer.ggml.tokens").arr.size(), 30522u);
}

}  // namespace
}  // namespace og
