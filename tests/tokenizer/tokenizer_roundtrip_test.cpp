// decode(encode(x)) == x for lossless tokenizers over a hostile corpus, and
// invalid UTF-8 never crashes (byte-level and byte-fallback vocabularies keep
// it byte-exact).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tokenizer/tokenizer.h"

namespace og {
namespace {

const std::string kVocab = std::string(OG_TESTDATA_DIR) + "/vocab/";
const std::string kModels = std::string(OG_TESTDATA_DIR) + "/models/";

std::vector<std::string> corpus() {
  std::vector<std::string> c = {
      "",
      "Hello world",
      " leading space",
      "   three leading spaces and trailing   ",
      "emoji 😀👩‍👩‍👧‍👦🏳️‍🌈 ✅ 🇯🇵",
      "CJK 日本語のテキスト 中文字符 한국어 텍스트",
      "combining e\xCC\x81 a\xCC\x8A\xCC\x81 Z\xCD\x91\xCD\x97\xCD\x9B (zalgo) and precomposed \xC3\xA9",
      "RTL \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D \xD8\xA7\xD9\x84\xD8\xB3\xD9\x84\xD8\xA7\xD9\x85 \xD8\xB9\xD9\x84\xD9\x8A\xD9\x83\xD9\x85 \xE2\x80\x8F mark",
      "control \x01\x02\x07\x1b[31m\x7f chars\ttab\rcr\x0b\x0c",
      std::string(300, ' '),
      std::string(200, '\n') + "x" + std::string(50, '\t'),
      "\n\n\n \n \t \t\t \t\n  \n   \n    \n     \n",
      "code: for (int i = 0; i < n; ++i) { x[i] += 'a'; } // ''''''```````\"\"\"\"......!!!!!!",
      "numbers 3 33 333 3333 33333 3.14159 1,000,000 ٣٤٥ ₂ ½",
      "mixed Ελληνικά кириллица ไทย हिन्दी ქართული",
      "zero width \xE2\x80\x8B joiner \xE2\x80\x8D non-joiner \xE2\x80\x8C bom \xEF\xBB\xBF",
      "I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL",
  };
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += c[i % c.size()] + " ";
  c.push_back(long_text);
  return c;
}

const std::vector<std::string> kInvalidUtf8 = {
    std::string("\xff\xfe\x80", 3), std::string("abc\xc3", 4), std::string("\xe2\x82", 2),
    std::string("mid\xed\xa0\x80surrogate", 14), std::string("over\xf8\x88\x80\x80\x80long", 13),
    std::string("nul\0byte", 8), std::string("\xc0\xaf overlong slash", 17),
};

// invalid_too: the vocabulary has a piece for every byte, so even invalid
// UTF-8 comes back byte-exact. controls_ok: it has pieces for the C0 controls.
void expect_lossless(const Tokenizer& tok, bool invalid_too, bool controls_ok = true) {
  for (const std::string& x : corpus()) {
    if (!controls_ok && x.find('\x0b') != std::string::npos) continue;
    const auto ids = tok.encode(x, false, false);
    EXPECT_EQ(tok.decode(ids), x) << tok.kind() << " on [" << x.substr(0, 60) << "]";
    // With BOS/EOS added, skip_special gives the same text back.
    EXPECT_EQ(tok.decode(tok.encode(x, true, false)), x) << tok.kind();
    std::string joined;
    for (int32_t id : ids) joined += tok.token_bytes(id);
    if (tok.strips_leading_space() && !joined.empty() && joined[0] == ' ') joined.erase(0, 1);
    EXPECT_EQ(joined, x) << tok.kind() << ": token_bytes concatenation differs from decode";
  }
  for (const std::string& x : kInvalidUtf8) {
    const auto ids = tok.encode(x, true, true);
    const std::string back = tok.decode(ids);
    if (invalid_too) {
      EXPECT_EQ(back, x) << tok.kind();
    }
  }
}

TEST(TokenizerRoundTrip, ByteLevelGguf) {
  expect_lossless(*Tokenizer::from_path(kVocab + "ggml-vocab-gpt-2.gguf"), true);
  // These vocabularies have no piece for the bytes that never occur in valid
  // UTF-8 (0xC0, 0xC1, 0xF5..0xFF, ...): lossless on valid text only.
  for (const char* v : {"deepseek-coder", "deepseek-llm", "mpt", "refact", "starcoder", "gpt-neox"})
    expect_lossless(*Tokenizer::from_path(kVocab + "ggml-vocab-" + v + ".gguf"), false);
  // Falcon also lacks 0x03-0x05, 0x0B, 0x11, 0x13-0x17, 0x19, 0x1C-0x1E.
  expect_lossless(*Tokenizer::from_path(kVocab + "ggml-vocab-falcon.gguf"), false, false);
}

TEST(TokenizerRoundTrip, ByteLevelTokenizerJson) {
  expect_lossless(*Tokenizer::from_path(kVocab + "llama3.2-bpe/tokenizer.json"), true);
}

TEST(TokenizerRoundTrip, SentencePieceByteFallbackGguf) {
  for (const char* v : {"llama-spm", "phi-3"})
    expect_lossless(*Tokenizer::from_path(kVocab + "ggml-vocab-" + v + ".gguf"), true);
  expect_lossless(*Tokenizer::from_path(kModels + "stories260K/stories260K.gguf"), true);
}

TEST(TokenizerRoundTrip, SentencePieceStyleTokenizerJson) {
  expect_lossless(*Tokenizer::from_path(kModels + "stories260K-hf/tokenizer.json"), true);
}

TEST(TokenizerRoundTrip, SentencePieceLibrary) {
  // libsentencepiece replaces invalid UTF-8 itself, so only valid text is lossless.
  expect_lossless(*Tokenizer::from_path(kVocab + "llama2-spm/tokenizer.model"), false);
}

TEST(TokenizerRoundTrip, SentencePieceCollapsingWhitespaceDoesNotCrash) {
  // tok512.model normalizes with remove_extra_whitespaces (SentencePiece's
  // default), so runs of spaces collapse by design: only check it survives.
  auto tok = Tokenizer::from_path(kModels + "stories260K/tok512.model");
  for (const std::string& x : corpus()) EXPECT_FALSE(tok->encode(x, true, true).empty() && !x.empty()) << x;
  for (const std::string& x : kInvalidUtf8) (void)tok->decode(tok->encode(x, true, true));
  EXPECT_EQ(tok->decode(tok->encode("a  b", false, false)), "a b");
}

}  // namespace
}  // namespace og

namespace og {
namespace {

// encode is const and shared by server threads: concurrent encodes (sharing
// the word cache and regex scratch) give the single-threaded ids.
TEST(TokenizerRoundTrip, ConcurrentEncodeMatchesSerial) {
  auto tok = Tokenizer::from_path(kVocab + "ggml-vocab-gpt-2.gguf");
  const auto texts = corpus();
  std::vector<std::vector<int32_t>> want;
  for (const auto& t : texts) want.push_back(tok->encode(t, true, true));
  auto fresh = Tokenizer::from_path(kVocab + "ggml-vocab-gpt-2.gguf");  // cold cache
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep)
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t k = (i + static_cast<size_t>(t) * 3) % texts.size();
          if (fresh->encode(texts[k], true, true) != want[k]) ++bad;
        }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace og
