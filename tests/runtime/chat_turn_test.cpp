// runtime/chat_turn: a chat turn renders the whole conversation and keeps
// the prefix of the session's history it shares. The kept prefix is the
// longest shared one (less one token when the prompt is all history, never
// inside an image); a template that renders an earlier reply differently
// once a turn follows (Qwen 3 drops the <think> block of replies before the
// last user turn) rewinds into that reply, and the session then holds
// exactly a fresh render: its logits equal a fresh session's bit for bit.
#include "runtime/chat_turn.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "chat/jinja_chat.h"
#include "model/synth_fixture.h"

namespace og {
namespace {

using namespace og::test;

std::vector<int32_t> ids(std::initializer_list<int32_t> v) { return v; }

TEST(ChatTurn, SharedPrefixIsTheLongestLessOneAndStopsAtAnImage) {
  EXPECT_EQ(shared_prompt_prefix(ids({1, 2, 3, 4}), {}, ids({1, 2, 5})), 2);
  EXPECT_EQ(shared_prompt_prefix({}, {}, ids({1, 2})), 0);
  // All of the prompt is history: its last token is prefilled again for logits.
  EXPECT_EQ(shared_prompt_prefix(ids({1, 2, 3}), {}, ids({1, 2, 3})), 2);
  EXPECT_EQ(shared_prompt_prefix(ids({1, 2, 3, 4}), {}, ids({1, 2})), 1);
  EXPECT_EQ(shared_prompt_prefix(ids({1, 2, 3}), {}, ids({1, 2, 3, 9})), 3);
  // An image at [1, 3) in the history that the prompt lacks ends the prefix where it begins.
  const std::vector<ImageSpan> image = {ImageSpan{1, 2, Sha256Digest{}}};
  EXPECT_EQ(shared_prompt_prefix(ids({1, 7, 7, 4, 5}), image, ids({1, 7, 7, 4, 6})), 1);
  // The same image at the same place in both is kept.
  EXPECT_EQ(shared_prompt_prefix(ids({1, 7, 7, 4, 5}), image, ids({1, 7, 7, 4, 6}), image), 4);
}

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    synth::SynthSpec spec = synth::tiny_spec(synth::Family::kQwen3);
    spec.tokenizer = "llama3";  // the chat markers are control tokens
    Loaded x;
    x.model = Model::load(synth_path(spec, false, "qwen3-llama3"));
    x.tok = Tokenizer::from_path(x.model->source_path());
    return x;
  }();
  return l;
}

std::unique_ptr<Session> new_session(ModelEngine& engine) {
  KvPolicy p;
  p.max_capacity = 512;
  p.initial_capacity = 64;
  p.max_write = 512;
  return std::make_unique<Session>(engine, make_kv_cache(KvKind::kSequence, loaded().model->kv_geometry(), p),
                                   *loaded().tok);
}

ChatRequestMessage msg(const char* role, const char* text) {
  ChatRequestMessage m;
  m.role = role;
  m.content = text;
  return m;
}

// The session holds `first` rendered without a generation prompt (a finished
// reply as the template writes it); the next turn adds a user message.
// Returns the plan of that turn after checking that what it keeps is the
// longest shared prefix and that, once it is prefilled, the logits are those
// of a fresh session given the whole prompt.
ChatTurnPrompt next_turn_is_a_fresh_render(const ChatFormat& format, const std::vector<ChatRequestMessage>& first,
                                           int64_t* history_size) {
  const Loaded& l = loaded();
  ModelEngine engine(*l.model);
  ChatSetup setup;
  setup.format = &format;
  ChatRequest before;
  before.messages = first;
  before.add_generation_prompt = false;
  const std::vector<int32_t> history = encode_chat(*l.tok, plan_chat(before, setup).segments, true);
  *history_size = static_cast<int64_t>(history.size());
  std::unique_ptr<Session> s = new_session(engine);
  s->prefill(history);

  ChatRequest next;
  next.messages = first;
  next.messages.push_back(msg("user", "And now?"));
  const ChatTurnPrompt p = plan_chat_turn(next, setup, *l.tok, *s);
  EXPECT_EQ(p.ids, encode_chat(*l.tok, plan_chat(next, setup).segments, true));
  size_t common = 0;
  while (common < history.size() && history[common] == p.ids[common]) ++common;
  EXPECT_EQ(p.keep, static_cast<int64_t>(common));
  EXPECT_EQ(s->position(), *history_size);  // planning changes nothing
  keep_shared_prefix(*s, p);
  EXPECT_EQ(s->position(), p.keep);
  s->prefill(p.added(), /*want_logits=*/true);
  EXPECT_EQ(s->history(), p.ids);

  std::unique_ptr<Session> fresh = new_session(engine);
  fresh->prefill(p.ids, /*want_logits=*/true);
  const std::vector<float> a(s->logits().begin(), s->logits().end());
  const std::vector<float> b(fresh->logits().begin(), fresh->logits().end());
  EXPECT_EQ(a, b);
  return p;
}

TEST(ChatTurn, ATemplateThatDropsEarlierReasoningRewindsIntoTheReplyAndEqualsAFreshRender) {
  const std::string dir = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/";
  std::ifstream in(dir + "Qwen-Qwen3-0.6B.jinja");
  ASSERT_TRUE(in) << dir;
  const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const JinjaChatTemplate qwen3(source, jinja_options_of(*loaded().tok), "Qwen 3's");
  int64_t history = 0;
  const ChatTurnPrompt p = next_turn_is_a_fresh_render(
      qwen3, {msg("user", "Hi"), msg("assistant", "<think>\nLet me think.\n</think>\n\nHello!")}, &history);
  // The reply's reasoning is gone from its render once a user turn follows it.
  EXPECT_LT(p.keep, history);
  EXPECT_EQ(p.plan.rendered.find("Let me think"), std::string::npos) << p.plan.rendered;

  // A template that renders earlier turns unchanged keeps the whole history:
  // the turn prefills only the tokens it adds.
  const std::unique_ptr<ChatFormat> llama3 = make_chat_template("llama3", std::nullopt);
  const ChatTurnPrompt q =
      next_turn_is_a_fresh_render(*llama3, {msg("system", "Be brief."), msg("user", "Hi"), msg("assistant", "Hello!")},
                                  &history);
  EXPECT_EQ(q.keep, history);
  EXPECT_EQ(loaded().tok->decode(q.added(), false),
            "<|start_header_id|>user<|end_header_id|>\n\nAnd now?<|eot_id|><|start_header_id|>assistant<|end_header_id|>"
            "\n\n");
}

}  // namespace
}  // namespace og
