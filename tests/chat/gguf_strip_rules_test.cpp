// GGUF vocabularies carry no lstrip/rstrip flags: the name-based rules (Phi-3's
// special pieces swallow the whitespace on their right) checked against the ids
// llama.cpp's tokenizer gives for the same text on the same vocabulary files.
#include <gtest/gtest.h>

#include <algorithm>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

const std::string kVocab = std::string(OG_TESTDATA_DIR) + "/vocab/";

TEST(GgufStripRules, Phi3SpecialPiecesSwallowWhitespaceOnTheRight) {
  auto tok = Tokenizer::from_path(kVocab + "ggml-vocab-phi-3.gguf");
  // <|user|> 32010, ▁Hello 15043, <|end|> 32007, <|assistant|> 32001: the newlines go.
  EXPECT_EQ(tok->encode("<|user|>\nHello<|end|>\n<|assistant|>", true, true),
            (std::vector<int32_t>{1, 32010, 15043, 32007, 32001}));
  // Every kind of ASCII whitespace, and the text after it gets the SPM space prefix (▁x 921).
  EXPECT_EQ(tok->encode("<|system|>  \t\n You are<|end|> x", true, true),
            (std::vector<int32_t>{1, 32006, 887, 526, 32007, 921}));
  // <|endoftext|>, <s> and <unk> keep the whitespace after them; </s> does not.
  EXPECT_EQ(tok->encode("<|endoftext|>  x</s>\n\ny<s> z<unk> w", true, true),
            (std::vector<int32_t>{1, 32000, 259, 921, 2, 343, 1, 29871, 503, 0, 29871, 281}));
  // Whitespace on the left stays.
  EXPECT_EQ(tok->encode("a <|user|>b", true, true), (std::vector<int32_t>{1, 263, 29871, 32010, 289}));
  // Without parse_special the marker is plain text and nothing is stripped.
  const std::vector<int32_t> plain = tok->encode("<|user|>\nHi", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 32010), 0);
  EXPECT_EQ(tok->decode(plain), "<|user|>\nHi");
}

TEST(GgufStripRules, OtherVocabulariesKeepWhitespaceAfterSpecialPieces) {
  auto tok = Tokenizer::from_path(kVocab + "ggml-vocab-llama-spm.gguf");
  // </s> 2, ▁ 29871, \n 13, Hi 18567, <s> 1, ▁▁ 259, x 921 (llama.cpp gives the same).
  EXPECT_EQ(tok->encode("</s>\nHi<s>  x", true, true), (std::vector<int32_t>{1, 2, 29871, 13, 18567, 1, 259, 921}));
}

TEST(GgufStripRules, ChatDeltaAfterAStrippingTokenDropsLeadingWhitespace) {
  auto tok = Tokenizer::from_path(kVocab + "ggml-vocab-phi-3.gguf");
  const int32_t end = *tok->find_piece("<|end|>"), eot = *tok->find_piece("<|endoftext|>");
  EXPECT_TRUE(tok->strips_space_after(end));
  EXPECT_FALSE(tok->strips_space_after(eot));
  EXPECT_FALSE(tok->strips_space_after(15043));  // ▁Hello, an ordinary piece
  // Whitespace-only segments are dropped whole, and stripping goes on into the next one.
  const ChatSegments delta = {{"\n", true}, {" \t", false}, {"<|user|>\nHi", true}};
  const std::vector<int32_t> after_end = encode_chat(*tok, delta, false, end);
  EXPECT_EQ(after_end, (std::vector<int32_t>{32010, 6324}));  // <|user|> ▁Hi
  EXPECT_EQ(after_end, tok->encode("<|user|>\nHi", false, true));
  // After a token that keeps whitespace, or with no context, nothing is dropped.
  EXPECT_EQ(encode_chat(*tok, delta, false, eot), encode_chat(*tok, delta, false));
  EXPECT_EQ(encode_chat(*tok, delta, false).front(), 29871);  // ▁ (then \n ...)
  // A first turn: llama.cpp tokenizes this render of phi3 to the same ids (no newline tokens).
  auto t = make_chat_template("phi3", std::nullopt);
  const std::vector<ChatMessage> msgs = {{"user", "Hi"}};
  EXPECT_EQ(t->render(msgs, true), "<|user|>\nHi<|end|>\n<|assistant|>\n");
  EXPECT_EQ(encode_chat(*tok, t->render_segments(msgs, true), true), (std::vector<int32_t>{1, 32010, 6324, 32007, 32001}));
}

}  // namespace
}  // namespace og
