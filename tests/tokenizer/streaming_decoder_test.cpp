// StreamingDecoder: pushing ids one at a time and flushing yields exactly
// Tokenizer::decode() of every prefix, on a small hand-made vocabulary and on
// real ones (stories260K SPM with byte fallback, Llama 3.2 byte-level BPE).
#include "tokenizer/streaming_decoder.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>

#include "base/error.h"

namespace og {
namespace {

// A hand-made vocabulary: control tokens, SentencePiece-style pieces, byte
// pieces and pieces holding parts of multi-byte characters. decode() follows
// the documented rule: skip control tokens, concatenate token_bytes, drop one
// leading space.
class FakeTokenizer : public Tokenizer {
 public:
  explicit FakeTokenizer(bool strip) : strip_(strip) {
    add("<s>", "<s>", TokenType::kControl);
    add("</s>", "</s>", TokenType::kControl);
    add("\xE2\x96\x81Hello", " Hello", TokenType::kNormal);
    add("\xE2\x96\x81world", " world", TokenType::kNormal);
    add("!", "!", TokenType::kNormal);
    add("<0xF0>", "\xF0", TokenType::kByte);  // first byte of a 4-byte emoji
    add("<0x9F>", "\x9F", TokenType::kByte);
    add("<0x98>", "\x98", TokenType::kByte);
    add("<0x80>", "\x80", TokenType::kByte);  // also a lone continuation byte
    add("\xE2\x96\x81", " ", TokenType::kNormal);
    add("\xE4\xBD", "\xE4\xBD", TokenType::kNormal);  // first two bytes of 你 (byte-level style)
    add("\xA0", "\xA0", TokenType::kNormal);          // its last byte
    add("\xC3", "\xC3", TokenType::kNormal);          // lead byte of é
    add("\xA9", "\xA9", TokenType::kNormal);
    add("<|eot|>", "<|eot|>", TokenType::kControl);
    add("empty", "", TokenType::kNormal);
  }
  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    for (int32_t id : ids) {
      if (skip_special && types_.at(id) == TokenType::kControl) continue;
      out += bytes_.at(id);
    }
    if (strip_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }
  std::string token_bytes(int32_t id) const override { return bytes_.at(id); }
  bool strips_leading_space() const override { return strip_; }
  int32_t n_vocab() const override { return static_cast<int32_t>(pieces_.size()); }
  const std::string& piece(int32_t id) const override { return pieces_.at(id); }
  TokenType token_type(int32_t id) const override { return types_.at(id); }
  std::optional<int32_t> find_piece(std::string_view p) const override {
    for (size_t i = 0; i < pieces_.size(); ++i)
      if (pieces_[i] == p) return static_cast<int32_t>(i);
    return std::nullopt;
  }
  const SpecialTokens& special() const override { return special_; }
  std::string kind() const override { return "fake"; }

 private:
  void add(std::string piece, std::string bytes, TokenType t) {
    pieces_.push_back(std::move(piece));
    bytes_.push_back(std::move(bytes));
    types_.push_back(t);
  }
  bool strip_;
  std::vector<std::string> pieces_, bytes_;
  std::vector<TokenType> types_;
  SpecialTokens special_;
};

bool is_valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

// For every prefix of ids: streamed pushes + flush == decode(prefix). When the
// whole decode is valid UTF-8, every push output is valid UTF-8 by itself.
void check_every_prefix(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip_special = true) {
  StreamingDecoder dec(tok, skip_special);
  std::string streamed;
  bool all_valid = is_valid_utf8(tok.decode(ids, skip_special));
  for (size_t n = 0; n < ids.size(); ++n) {
    std::string piece = dec.push(ids[n]);
    if (all_valid) {
      EXPECT_TRUE(is_valid_utf8(piece)) << "token " << n << " id " << ids[n];
    }
    streamed += piece;
    StreamingDecoder end = dec;  // finish this prefix on a copy
    std::span<const int32_t> prefix(ids.data(), n + 1);
    ASSERT_EQ(streamed + end.flush(), tok.decode(prefix, skip_special))
        << "prefix of " << n + 1 << " tokens (" << tok.kind() << ")";
  }
  EXPECT_EQ(streamed + dec.flush(), tok.decode(ids, skip_special));
}

TEST(StreamingDecoder, FakeVocabularyHoldsPartialCharacters) {
  FakeTokenizer tok(true);
  StreamingDecoder dec(tok);
  EXPECT_EQ(dec.push(0), "");          // <s> skipped
  EXPECT_EQ(dec.push(2), "Hello");     // leading space stripped once
  EXPECT_EQ(dec.push(3), " world");
  EXPECT_EQ(dec.push(5), "");          // F0: held
  EXPECT_EQ(dec.push(6), "");          // 9F: held
  EXPECT_EQ(dec.pending_bytes(), 2u);
  EXPECT_EQ(dec.push(7), "");          // 98: held
  EXPECT_EQ(dec.push(8), "\xF0\x9F\x98\x80");  // 😀 complete
  EXPECT_EQ(dec.push(10), "");
  EXPECT_EQ(dec.push(11), "\xE4\xBD\xA0");  // 你
  EXPECT_EQ(dec.push(14), "");         // <|eot|> skipped
  EXPECT_EQ(dec.flush(), "");
}

TEST(StreamingDecoder, FakeVocabularyEveryPrefix) {
  for (bool strip : {true, false}) {
    FakeTokenizer tok(strip);
    check_every_prefix(tok, {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 1});
    check_every_prefix(tok, {9, 2, 0, 9, 3});         // a lone ▁ first
    check_every_prefix(tok, {15, 9, 2});              // an empty piece first
    check_every_prefix(tok, {8, 5, 2, 12, 4, 10, 3});  // ill-formed bytes pass through as decode gives them
    check_every_prefix(tok, {5, 6, 12, 13, 10});      // a character cut by another lead byte
    check_every_prefix(tok, {0, 2, 14, 3}, /*skip_special=*/false);
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
      std::vector<int32_t> ids(30);
      for (auto& id : ids) id = static_cast<int32_t>(rng() % tok.n_vocab());
      check_every_prefix(tok, ids);
    }
  }
}

TEST(StreamingDecoder, ResetStartsANewStream) {
  FakeTokenizer tok(true);
  StreamingDecoder dec(tok);
  EXPECT_EQ(dec.push(2), "Hello");
  EXPECT_EQ(dec.push(5), "");
  dec.reset();  // drops the held byte; the next text is a new decode
  EXPECT_EQ(dec.pending_bytes(), 0u);
  EXPECT_EQ(dec.push(3), "world");
  EXPECT_EQ(dec.flush(), "");
  EXPECT_EQ(dec.push(3), "world");  // after flush: a new stream too
  dec.reset_continuation();         // continues earlier text: keeps the space
  EXPECT_EQ(dec.push(3), " world");
  EXPECT_EQ(dec.push(2), " Hello");
}

TEST(StreamingDecoder, OutOfRangeIdIsAnError) {
  FakeTokenizer tok(true);
  StreamingDecoder dec(tok);
  EXPECT_THROW(dec.push(-1), Error);
  EXPECT_THROW(dec.push(tok.n_vocab()), Error);
  EXPECT_EQ(dec.push(4), "!");  // still usable
}

const char* kTexts[] = {
    "Once upon a time, there was a little girl named Lily.",
    "Emoji 😀🎉 and CJK 你好，世界 — mixed with Ελληνικά and עברית.",
    "  leading spaces\n\n\ttabs and newlines   ",
    "e\xCC\x81 combining, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, 🏳️‍🌈 ZWJ",
    "日本語のテキスト。한국어 텍스트.",
};

// Loads each real tokenizer once per test run (the Llama 3.2 one is large).
const Tokenizer& load(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& t = cache[path];
  if (!t) t = Tokenizer::from_path(path);
  return *t;
}

void check_real(const std::string& path) {
  const Tokenizer* tok = &load(path);
  for (const char* text : kTexts) {
    SCOPED_TRACE(text);
    for (bool add_special : {true, false}) {
      std::vector<int32_t> ids = tok->encode(text, add_special, false);
      ASSERT_FALSE(ids.empty());
      check_every_prefix(*tok, ids);
      check_every_prefix(*tok, ids, /*skip_special=*/false);
    }
  }
  // Random ids: ill-formed byte runs, control tokens anywhere.
  std::mt19937 rng(11);
  for (int round = 0; round < 10; ++round) {
    std::vector<int32_t> ids(40);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % tok->n_vocab());
    check_every_prefix(*tok, ids);
  }
}

TEST(StreamingDecoder, Stories260kSpmByteFallback) {
  std::string path = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
  check_real(path);
  // The emoji and CJK text really does go through byte-fallback pieces.
  const Tokenizer* tok = &load(path);
  int bytes = 0;
  for (int32_t id : tok->encode(kTexts[1], false, false)) bytes += tok->token_type(id) == TokenType::kByte;
  EXPECT_GT(bytes, 8);
}

TEST(StreamingDecoder, Llama32ByteLevelBpe) {
  std::string path = std::string(OG_TESTDATA_DIR) + "/vocab/llama3.2-bpe/tokenizer.json";
  check_real(path);
  // Some token holds an incomplete character, so holding back is exercised.
  const Tokenizer* tok = &load(path);
  bool partial = false;
  for (const char* text : kTexts)
    for (int32_t id : tok->encode(text, false, false)) partial |= !is_valid_utf8(tok->token_bytes(id));
  EXPECT_TRUE(partial);
}

TEST(StreamingDecoder, Stories260kOtherSources) {
  check_real(std::string(OG_TESTDATA_DIR) + "/models/stories260K/tok512.model");  // libsentencepiece
  check_real(std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf");           // tokenizer.json
}

TEST(StreamingDecoder, LlamaSpmVocabulary) {
  check_real(std::string(OG_TESTDATA_DIR) + "/vocab/ggml-vocab-llama-spm.gguf");
}

}  // namespace
}  // namespace og
