// Chat templates against real vocabularies: markers are single tokens, BOS
// comes exactly once, stop ids include the turn end, and the tokens of an
// incremental chat equal the tokens of the full render.
#include <gtest/gtest.h>

#include <algorithm>

#include "tokenizer/chat_template.h"

namespace og {
namespace {

const std::string kVocab = std::string(OG_TESTDATA_DIR) + "/vocab";

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Runs a three-turn chat the way the runtime does (prefill the first render,
// append generated reply ids and the turn-end id, then only each delta) and
// compares the token history with encoding the full render at once.
void check_token_incremental(const Tokenizer& tok, const ChatTemplate& t) {
  std::vector<ChatMessage> msgs = {{"system", "You are terse."}, {"user", "Hi there"}};
  std::string text = t.render(msgs);
  std::vector<int32_t> history = encode_chat_text(tok, t, text, true);
  const char* replies[] = {"Hello! How can I help?", "Sure: 2 + 2 = 4.", "Bye"};
  const char* users[] = {"What is 2 + 2?", "Thanks, bye!", "One more."};
  auto end_id = tok.find_piece(t.turn_end());
  ASSERT_TRUE(end_id.has_value()) << t.turn_end();
  for (int turn = 0; turn < 3; ++turn) {
    msgs.push_back({"assistant", replies[turn]});
    // The model's reply tokens: what the reply encodes to in context (a
    // SentencePiece vocabulary encodes it differently at the start of a text).
    std::vector<int32_t> in_context = encode_chat_text(tok, t, text + replies[turn], true);
    ASSERT_TRUE(in_context.size() > history.size() &&
                std::equal(history.begin(), history.end(), in_context.begin()));
    history = in_context;
    history.push_back(*end_id);
    size_t n_done = msgs.size();
    msgs.push_back({"user", users[turn]});
    std::string delta = t.render_delta(msgs, n_done, true);
    text += replies[turn] + t.turn_end() + delta;
    history = cat(history, encode_chat_text(tok, t, delta, false));
    EXPECT_EQ(history, encode_chat_text(tok, t, t.render(msgs), true)) << t.name() << " turn " << turn;
  }
}

TEST(ChatTemplateTokens, Llama3OnLlama32Vocabulary) {
  auto tok = Tokenizer::from_path(kVocab + "/llama3.2-bpe/tokenizer.json");
  auto t = make_chat_template("llama3", std::nullopt);
  std::vector<ChatMessage> msgs = {{"user", "Hi"}};
  std::vector<int32_t> ids = encode_chat_text(*tok, *t, t->render(msgs), true);
  auto bos = tok->find_piece("<|begin_of_text|>");
  auto header = tok->find_piece("<|start_header_id|>");
  ASSERT_TRUE(bos && header);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[0], *bos);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *bos), 1);
  EXPECT_EQ(ids[1], *header);  // the marker text became its control token
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *header), 2);
  // Deltas never carry BOS.
  std::vector<int32_t> later = encode_chat_text(*tok, *t, t->render(msgs), false);
  EXPECT_EQ(std::count(later.begin(), later.end(), *bos), 0);
  std::vector<int32_t> stops = chat_stop_ids(*t, *tok);
  for (const char* m : {"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"}) {
    auto id = tok->find_piece(m);
    ASSERT_TRUE(id.has_value()) << m;
    EXPECT_TRUE(std::binary_search(stops.begin(), stops.end(), *id)) << m;
  }
  check_token_incremental(*tok, *t);
}

TEST(ChatTemplateTokens, Phi3OnPhi3Vocabulary) {
  auto tok = Tokenizer::from_path(kVocab + "/ggml-vocab-phi-3.gguf");
  auto t = make_chat_template("phi3", std::nullopt);
  for (const char* m : {"<|user|>", "<|assistant|>", "<|system|>", "<|end|>"}) EXPECT_TRUE(tok->find_piece(m)) << m;
  std::vector<int32_t> stops = chat_stop_ids(*t, *tok);
  EXPECT_TRUE(std::binary_search(stops.begin(), stops.end(), *tok->find_piece("<|end|>")));
  std::vector<ChatMessage> msgs = {{"user", "Hi"}};
  std::vector<int32_t> ids = encode_chat_text(*tok, *t, t->render(msgs), true);
  const SpecialTokens& sp = tok->special();
  int bos = static_cast<int>(std::count(ids.begin(), ids.end(), sp.bos));
  EXPECT_EQ(bos, sp.add_bos ? 1 : 0);
  EXPECT_NE(std::find(ids.begin(), ids.end(), *tok->find_piece("<|user|>")), ids.end());
  check_token_incremental(*tok, *t);
}

TEST(ChatTemplateTokens, Llama2AndMistralOnLlamaSpmVocabulary) {
  auto tok = Tokenizer::from_path(kVocab + "/ggml-vocab-llama-spm.gguf");
  auto llama2 = make_chat_template("llama2", std::nullopt);
  std::vector<ChatMessage> msgs = {{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}};
  std::vector<int32_t> ids = encode_chat_text(*tok, *llama2, llama2->render(msgs), true);
  // BOS opens the first turn (from the encoder) and the second (from the text); EOS closes the reply.
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok->special().bos), 2);
  EXPECT_EQ(ids[0], tok->special().bos);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok->special().eos), 1);
  check_token_incremental(*tok, *llama2);
  check_token_incremental(*tok, *make_chat_template("mistral", std::nullopt));
}

TEST(ChatTemplateTokens, RawTextDoesNotParseSpecialTokens) {
  auto tok = Tokenizer::from_path(std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf");
  auto t = make_chat_template("auto", std::nullopt);  // stories260K has no chat template
  ASSERT_EQ(t->name(), "0");
  std::vector<int32_t> ids = encode_chat_text(*tok, *t, "Once upon a time</s>", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);                                // BOS once
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 0);  // "</s>" stays text
  std::vector<int32_t> stops = chat_stop_ids(*t, *tok);
  EXPECT_TRUE(std::binary_search(stops.begin(), stops.end(), 2));  // EOS still stops
}

}  // namespace
}  // namespace og
