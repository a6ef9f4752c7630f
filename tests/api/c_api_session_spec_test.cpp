// A session's speculation (og_session_options' spec fields, issue 47 in the
// library): greedy turns through og_session_generate, the stream and a fork
// give plain decoding's tokens with prompt lookup and with a draft model (the
// target as its own draft: every draft token accepted); og_session_spec_stats
// adds up; bad fields and another vocabulary are refused naming the field.
#include <cstddef>
#include <numeric>
#include <tuple>

#include "api/api_test_util.h"
#include "offgraph/offgraph.hpp"

namespace {

using namespace og_test;

const std::string kStory =
    "Once upon a time, there was a little girl named Lily. She liked to play. Once upon a time, there was a little";

struct Turn {
  std::vector<int32_t> tokens;
  std::string text;
};

Turn generate(og_session* s, const std::vector<int32_t>& prompt, int64_t n) {
  og_generate_options o = greedy(n);
  og_generation g{};
  EXPECT_EQ(og_session_generate(s, prompt.data(), prompt.size(), &o, &g), OG_OK) << og_last_error();
  Turn t{std::vector<int32_t>(g.tokens.ids, g.tokens.ids + g.tokens.n), text_of(g)};
  og_generation_free(&g);
  return t;
}

// The same turn pulled with og_session_stream_next: one token per call.
Turn stream(og_session* s, const std::vector<int32_t>& prompt, int64_t n) {
  og_generate_options o = greedy(n);
  EXPECT_EQ(og_session_stream_start(s, prompt.data(), prompt.size(), &o), OG_OK) << og_last_error();
  Turn t;
  for (int done = 0; !done;) {
    int32_t token = -1;
    const char* text = nullptr;
    size_t len = 0;
    if (og_session_stream_next(s, &token, &text, &len, &done) != OG_OK) {
      ADD_FAILURE() << og_last_error();
      break;
    }
    if (token >= 0) t.tokens.push_back(token);
    t.text.append(text, len);
  }
  og_generation g{};
  EXPECT_EQ(og_session_stream_finish(s, &g), OG_OK) << og_last_error();
  EXPECT_EQ(std::vector<int32_t>(g.tokens.ids, g.tokens.ids + g.tokens.n), t.tokens);
  og_generation_free(&g);
  return t;
}

og_spec_stats spec_stats(og_session* s) {
  og_spec_stats st{};
  st.struct_size = sizeof(st);
  EXPECT_EQ(og_session_spec_stats(s, &st), OG_OK) << og_last_error();
  return st;
}

void expect_adds_up(const og_spec_stats& s) {
  EXPECT_LE(s.accepted_tokens, s.draft_tokens);
  const int64_t per_pos = std::accumulate(s.accepted_per_pos, s.accepted_per_pos + OG_SPEC_POSITIONS, int64_t{0});
  EXPECT_EQ(per_pos + s.accepted_beyond, s.accepted_tokens);
  EXPECT_EQ(s.pauses, 0);
}

class SessionSpec : public ModelTest {
 protected:
  og_session* spec_session(int ngram, og_model* draft) {
    og_session_options o;
    og_session_options_init(&o);
    o.kv_dtype = "f32";
    o.spec_ngram_size = ngram;
    o.draft_model = draft;
    o.spec_draft_p_min = 0;  // a draft model always drafts spec_draft_max tokens
    og_session* s = nullptr;
    EXPECT_EQ(og_session_new(model_, &o, &s), OG_OK) << og_last_error();
    return s;
  }
};

TEST_F(SessionSpec, GreedyTurnsAreThePlainOnesWithEitherProposer) {
  og_tokens t{};
  ASSERT_EQ(og_tokenize(model_, kStory.data(), kStory.size(), 1, 0, &t), OG_OK) << og_last_error();
  const std::vector<int32_t> story(t.ids, t.ids + t.n);
  og_tokens_free(&t);
  og_session* plain = new_session("f32");
  const Turn want_a = generate(plain, kPromptIds, 60);
  const Turn want_b = generate(plain, {}, 20);  // a second turn over the first's history
  EXPECT_EQ(og_session_reset(plain), OG_OK);
  const Turn want_story = generate(plain, story, 40);
  EXPECT_EQ(spec_stats(plain).drafts, 0);
  og_session_free(plain);
  EXPECT_EQ(want_a.text, kContinuation);

  og_model* draft = nullptr;
  ASSERT_EQ(og_model_open(kModelPath.c_str(), nullptr, &draft), OG_OK) << og_last_error();
  for (int mode = 0; mode < 2; ++mode) {  // 0: prompt lookup, 1: the target as its own draft
    og_session* s = mode == 0 ? spec_session(3, nullptr) : spec_session(0, draft);
    ASSERT_NE(s, nullptr);
    if (mode == 1) ASSERT_EQ(og_model_close(draft), OG_OK);  // the session keeps the weights
    const Turn a = generate(s, kPromptIds, 60);
    EXPECT_EQ(a.tokens, want_a.tokens) << mode;
    EXPECT_EQ(a.text, want_a.text) << mode;
    // A fork: a proposer of its own, counters from zero, the same next turn.
    og_session* f = nullptr;
    ASSERT_EQ(og_session_fork(s, &f), OG_OK) << og_last_error();
    EXPECT_EQ(spec_stats(f).drafts, 0);
    EXPECT_EQ(stream(f, {}, 20).tokens, want_b.tokens) << mode;
    og_session_free(f);
    EXPECT_EQ(stream(s, {}, 20).text, want_b.text) << mode;
    EXPECT_EQ(og_session_reset(s), OG_OK);
    const Turn st = stream(s, story, 40);
    EXPECT_EQ(st.tokens, want_story.tokens) << mode;
    EXPECT_EQ(st.text, want_story.text) << mode;
    const og_spec_stats c = spec_stats(s);
    EXPECT_GT(c.drafts, 0) << mode;
    EXPECT_GT(c.accepted_tokens, 0) << mode;
    if (mode == 1) EXPECT_EQ(c.accepted_tokens, c.draft_tokens);  // 100 %: the draft is the target
    expect_adds_up(c);
    og_session_stats ss{};
    ASSERT_EQ(og_session_get_stats(s, &ss), OG_OK);
    EXPECT_LT(ss.decode_steps, 60 + 20 + 40) << mode;  // fewer target forwards than tokens
    og_session_free(s);
  }
}

// og_session_chat runs through the same turn options: the reply is the plain
// session's, free and under a JSON grammar (greedy), with drafts accepted.
TEST_F(SessionSpec, ChatRepliesAreThePlainOnes) {
  const og_chat_msg user{"user", "Once upon a time, there was a little girl named Lily. Once upon a time, there was",
                         nullptr, nullptr, nullptr, 0, nullptr};
  auto reply = [&](og_session* s, const char* format) {
    og_chat_request q;
    og_chat_request_init(&q);
    q.messages = &user;
    q.n_messages = 1;
    q.response_format = format;
    og_generate_options g = greedy(40);
    og_chat_result r{};
    EXPECT_EQ(og_session_chat(s, &q, &g, &r), OG_OK) << og_last_error();
    const std::string content(r.content.data ? r.content.data : "", r.content.len);
    og_chat_result_free(&r);
    EXPECT_EQ(og_session_reset(s), OG_OK);
    return content;
  };
  og_session* plain = new_session("f32");
  og_session* spec = spec_session(3, nullptr);
  for (const char* format : {static_cast<const char*>(nullptr), "json_object"})
    EXPECT_EQ(reply(spec, format), reply(plain, format)) << (format ? format : "text");
  EXPECT_GT(spec_stats(spec).accepted_tokens, 0);
  og_session_free(spec);
  og_session_free(plain);
}

TEST_F(SessionSpec, BadFieldsAndAnotherVocabularyAreRefusedNamingTheField) {
  for (auto [ngram, min, max_draft, field] :
       {std::tuple{17, 1, 4, "spec_ngram_size"}, std::tuple{3, 4, 4, "spec_ngram_min"},
        std::tuple{3, 1, 300, "spec_draft_max"}}) {
    og_session_options o;
    og_session_options_init(&o);
    EXPECT_EQ(o.spec_ngram_size, 0);
    EXPECT_EQ(o.draft_model, nullptr);
    EXPECT_EQ(o.spec_draft_p_min, 0.75);
    o.spec_ngram_size = ngram;
    o.spec_ngram_min = min;
    o.spec_draft_max = max_draft;
    og_session* s = nullptr;
    EXPECT_EQ(og_session_new(model_, &o, &s), OG_ERR_INVALID_ARGUMENT) << field;
    EXPECT_EQ(std::string(og_last_error()).rfind(field, 0), 0u) << og_last_error();
    EXPECT_EQ(s, nullptr);
  }
  const std::string other_path =
      std::string(OG_TESTDATA_DIR) + "/models/llama-2-tiny-random-gguf/llama-2-tiny-random.gguf";
  og_model* other = nullptr;
  ASSERT_EQ(og_model_open(other_path.c_str(), nullptr, &other), OG_OK) << og_last_error();
  og_session_options o;
  og_session_options_init(&o);
  o.draft_model = other;
  og_session* s = nullptr;
  EXPECT_EQ(og_session_new(model_, &o, &s), OG_ERR_INVALID_ARGUMENT);
  const std::string msg = og_last_error();
  EXPECT_EQ(msg.rfind("draft_model: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("same tokenizer"), std::string::npos) << msg;
  EXPECT_EQ(og_model_close(other), OG_OK);
  // A program built against ABI 2's header (the struct ending before the spec fields) keeps their defaults.
  og_session_options_init(&o);
  o.spec_ngram_size = 99;  // beyond the old struct_size: never read
  o.struct_size = offsetof(og_session_options, spec_ngram_size);
  ASSERT_EQ(og_session_new(model_, &o, &s), OG_OK) << og_last_error();
  generate(s, kPromptIds, 8);
  EXPECT_EQ(spec_stats(s).drafts, 0);
  og_session_free(s);
  {  // the C++ wrapper
    og_session_options so;
    og_session_options_init(&so);
    so.spec_ngram_size = 2;
    offgraph::Model m(kModelPath);
    offgraph::Session cs = m.session(&so);
    cs.generate(kPromptIds, greedy(30));
    const og_spec_stats c = cs.spec_stats();
    EXPECT_EQ(c.struct_size, sizeof(og_spec_stats));
    expect_adds_up(c);
  }
  og_session* plain = new_session();
  og_spec_stats bad{};
  EXPECT_EQ(og_session_spec_stats(plain, &bad), OG_ERR_INVALID_ARGUMENT);  // struct_size 0
  og_session_free(plain);
}

}  // namespace
