// Stop tokens of a harmony (gpt-oss) vocabulary: <|end|> closes a message in
// the middle of a reply (the analysis channel), so with <|return|> and
// <|call|> in the vocabulary it is no stop and the turn ends at <|return|>;
// a vocabulary with <|end|> alone (Phi-3) keeps it as a stop.
#include <gtest/gtest.h>

#include <algorithm>

#include "chat/chat_template.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

GgufValue strings(std::vector<std::string> v) {
  std::vector<GgufValue> e;
  for (auto& s : v) e.push_back(GgufValue::make_string(std::move(s)));
  return GgufValue::make_array(GgufType::STRING, std::move(e));
}

// A byte-level BPE vocabulary: "a", "b", "ab", then the given control tokens.
std::unique_ptr<Tokenizer> vocab_with(const std::vector<std::string>& specials, int32_t eos) {
  std::vector<std::string> tokens = {"a", "b", "ab"};
  tokens.insert(tokens.end(), specials.begin(), specials.end());
  std::vector<GgufValue> types;
  for (size_t i = 0; i < tokens.size(); ++i) types.push_back(GgufValue::make_i32(i < 3 ? 1 : 3));
  GgufWriter w;
  w.set("tokenizer.ggml.model", GgufValue::make_string("gpt2"));
  w.set("tokenizer.ggml.pre", GgufValue::make_string("gpt-2"));
  w.set("tokenizer.ggml.tokens", strings(tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::make_array(GgufType::I32, std::move(types)));
  w.set("tokenizer.ggml.merges", strings({"a b"}));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::make_u32(static_cast<uint32_t>(eos)));
  static std::vector<uint8_t> bytes;
  bytes = w.serialize();
  auto g = GgufFile::parse(bytes.data(), bytes.size(), "test.gguf");
  return Tokenizer::from_gguf(*g);
}

bool has(const std::vector<int32_t>& v, int32_t id) { return std::find(v.begin(), v.end(), id) != v.end(); }

TEST(HarmonyStops, EndIsNoStopWhereReturnAndCallExist) {
  // ids: 3 <|start|>, 4 <|end|>, 5 <|message|>, 6 <|channel|>, 7 <|return|>, 8 <|call|>
  auto tok = vocab_with({"<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>"}, 7);
  const std::vector<int32_t>& stops = tok->special().stop_ids;
  EXPECT_FALSE(has(stops, 4));
  EXPECT_TRUE(has(stops, 7));
  EXPECT_TRUE(has(stops, 8));
  EXPECT_EQ(tok->special().eot, 7);
  const std::vector<int32_t> chat = chat_stop_ids(*make_chat_template("harmony", std::nullopt), *tok);
  EXPECT_FALSE(has(chat, 4));
  EXPECT_TRUE(has(chat, 7) && has(chat, 8));
}

TEST(HarmonyStops, EndStaysAStopElsewhere) {
  auto tok = vocab_with({"<|user|>", "<|end|>", "<|endoftext|>"}, 5);
  EXPECT_TRUE(has(tok->special().stop_ids, 4));
}

}  // namespace
}  // namespace og
