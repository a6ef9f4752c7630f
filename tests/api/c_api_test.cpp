// The C API's calls on the real model: version, model info, tokenizer, chat
// template, sessions (generate, callbacks, stream, logits, undo / rewind /
// reset, fork, stats) and the RAII layer (offgraph.hpp).
#include <algorithm>
#include <cstring>

#include "api/api_test_util.h"
#include "offgraph/offgraph.hpp"

namespace {

using namespace og_test;

TEST(CApiVersion, MacroAndFunctionAgree) {
  EXPECT_STREQ(og_version(), OG_VERSION_STRING);
  EXPECT_EQ(OG_VERSION, OG_VERSION_MAJOR * 10000 + OG_VERSION_MINOR * 100 + OG_VERSION_PATCH);
  EXPECT_STREQ(og_status_name(OG_ERR_BUSY), "busy");
  EXPECT_STREQ(og_stop_reason_name(OG_STOP_CANCELLED), "cancelled");
  EXPECT_STREQ(og_finish_reason_name(OG_FINISH_REFUSED), "refused");
}

TEST_F(ModelTest, Info) {
  og_model_info i{};
  ASSERT_EQ(og_model_get_info(model_, &i), OG_OK) << og_last_error();
  EXPECT_STREQ(i.architecture, "llama");
  EXPECT_STREQ(i.chat_template, "0");
  EXPECT_EQ(i.n_vocab, 512);
  EXPECT_GT(i.n_ctx, 0);
  EXPECT_GT(i.d_model, 0);
  EXPECT_GT(i.n_layers, 0);
  EXPECT_GT(i.n_heads, 0);
  EXPECT_GT(i.n_kv_heads, 0);
  EXPECT_GT(i.head_dim, 0);
  EXPECT_GT(i.d_ff, 0);
  EXPECT_EQ(i.n_kv_caches, i.n_layers);
  EXPECT_NE(std::string(i.tokenizer_kind), "");
}

TEST_F(ModelTest, Tokenizer) {
  og_tokens t{};
  ASSERT_EQ(og_tokenize(model_, kPrompt.data(), kPrompt.size(), 1, 0, &t), OG_OK) << og_last_error();
  EXPECT_EQ(std::vector<int32_t>(t.ids, t.ids + t.n), kPromptIds);
  og_string s{};
  ASSERT_EQ(og_detokenize(model_, t.ids, t.n, 1, &s), OG_OK);
  EXPECT_EQ(std::string(s.data, s.len), kPrompt);
  og_string_free(&s);
  og_string_free(&s);  // twice is fine
  og_tokens_free(&t);
  ASSERT_EQ(og_tokenize(model_, kPrompt.data(), kPrompt.size(), 0, 0, &t), OG_OK);
  EXPECT_EQ(std::vector<int32_t>(t.ids, t.ids + t.n), std::vector<int32_t>(kPromptIds.begin() + 1, kPromptIds.end()));
  og_tokens_free(&t);
  ASSERT_EQ(og_tokenize(model_, nullptr, 0, 0, 0, &t), OG_OK);  // empty text
  EXPECT_EQ(t.n, 0u);
  og_tokens_free(&t);

  og_special_ids sp{};
  ASSERT_EQ(og_special_tokens(model_, &sp), OG_OK);
  EXPECT_EQ(sp.bos, 1);
  EXPECT_EQ(sp.eos, 2);
  EXPECT_EQ(sp.add_bos, 1);
  ASSERT_EQ(og_stop_ids(model_, &t), OG_OK);
  EXPECT_NE(std::find(t.ids, t.ids + t.n, 2), t.ids + t.n);
  og_tokens_free(&t);

  const char* piece = nullptr;
  size_t len = 0;
  ASSERT_EQ(og_token_piece(model_, 1, &piece, &len), OG_OK);
  EXPECT_EQ(std::string(piece, len), "<s>");
  EXPECT_EQ(og_token_piece(model_, 512, &piece, &len), OG_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(og_last_error()).find("token id 512"), std::string::npos) << og_last_error();
  const int32_t bad[] = {5, -1};
  EXPECT_EQ(og_detokenize(model_, bad, 2, 1, &s), OG_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(og_last_error()).find("[1]: token id -1 is out of range [0, "), std::string::npos) << og_last_error();
}

TEST_F(ModelTest, ChatTemplate) {
  const og_chat_message msgs[] = {{"user", "Once upon a time"}};
  og_string s{};
  ASSERT_EQ(og_chat_render(model_, msgs, 1, 1, &s), OG_OK) << og_last_error();
  EXPECT_EQ(std::string(s.data, s.len), kPrompt);  // raw text
  og_string_free(&s);
  og_tokens t{};
  ASSERT_EQ(og_chat_encode(model_, msgs, 1, 1, &t), OG_OK);
  EXPECT_EQ(std::vector<int32_t>(t.ids, t.ids + t.n), kPromptIds);
  og_tokens_free(&t);
  const og_chat_message bad[] = {{"robot", "x"}};
  EXPECT_EQ(og_chat_render(model_, bad, 1, 1, &s), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("robot"), std::string::npos);
  const og_chat_message null_content[] = {{"user", nullptr}};
  EXPECT_EQ(og_chat_encode(model_, null_content, 1, 1, &t), OG_ERR_INVALID_ARGUMENT);

  // Another template by name.
  og_model_options mo;
  og_model_options_init(&mo);
  mo.chat_template = "chatml";
  og_model* m = nullptr;
  ASSERT_EQ(og_model_open(kModelPath.c_str(), &mo, &m), OG_OK) << og_last_error();
  ASSERT_EQ(og_chat_render(m, msgs, 1, 1, &s), OG_OK);
  EXPECT_EQ(std::string(s.data, s.len), "<|im_start|>user\nOnce upon a time<|im_end|>\n<|im_start|>assistant\n");
  og_string_free(&s);
  og_model_info i{};
  ASSERT_EQ(og_model_get_info(m, &i), OG_OK);
  EXPECT_STREQ(i.chat_template, "chatml");
  og_model_close(m);
  mo.chat_template = "nosuch";
  EXPECT_EQ(og_model_open(kModelPath.c_str(), &mo, &m), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("nosuch"), std::string::npos) << og_last_error();
}

struct Collected {
  std::string text;
  std::vector<int32_t> tokens;
  int cancel_after = -1;
};

int on_text(void* ud, const char* t, size_t n) {
  static_cast<Collected*>(ud)->text.append(t, n);
  return 0;
}
int on_token(void* ud, int32_t id) {
  auto* c = static_cast<Collected*>(ud);
  c->tokens.push_back(id);
  return c->cancel_after >= 0 && static_cast<int>(c->tokens.size()) >= c->cancel_after;
}

TEST_F(ModelTest, GreedyGenerateEqualsReference) {
  og_session* s = new_session();
  Collected c;
  og_generate_options o = greedy(60);
  o.on_text = on_text;
  o.on_token = on_token;
  o.user_data = &c;
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(text_of(g), kContinuation);
  EXPECT_EQ(c.text, kContinuation);
  EXPECT_EQ(g.tokens.n, 60u);
  EXPECT_EQ(c.tokens, std::vector<int32_t>(g.tokens.ids, g.tokens.ids + g.tokens.n));
  EXPECT_EQ(g.tokens.ids[0], 432);
  EXPECT_EQ(g.stop_reason, OG_STOP_MAX_TOKENS);
  EXPECT_EQ(g.prompt_tokens, 5);
  og_generation_free(&g);
  int64_t pos = 0;
  ASSERT_EQ(og_session_position(s, &pos), OG_OK);
  EXPECT_EQ(pos, 65);
  og_session_stats st{};
  ASSERT_EQ(og_session_get_stats(s, &st), OG_OK);
  EXPECT_EQ(st.generated_tokens, 60);
  EXPECT_EQ(st.prompt_tokens, 5);
  EXPECT_GT(st.cache_capacity, 0);
  EXPECT_EQ(og_session_free(s), OG_OK);
}

TEST_F(ModelTest, CallbackCancels) {
  og_session* s = new_session();
  Collected c;
  c.cancel_after = 5;
  og_generate_options o = greedy(60);
  o.on_token = on_token;
  o.user_data = &c;
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(g.stop_reason, OG_STOP_CANCELLED);
  EXPECT_EQ(g.tokens.n, 5u);
  EXPECT_EQ(kContinuation.rfind(text_of(g), 0), 0u) << text_of(g);  // a prefix of the reference
  og_generation_free(&g);
  og_session_free(s);
}

TEST_F(ModelTest, StopStringAndModelStopIds) {
  og_session* s = new_session();
  og_generate_options o = greedy(60);
  const char* stops[] = {"Lily."};
  o.stop_strings = stops;
  o.n_stop_strings = 1;
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(g.stop_reason, OG_STOP_STRING);
  EXPECT_EQ(text_of(g), ", there was a little girl named ");
  og_generation_free(&g);
  og_session_free(s);
}

TEST_F(ModelTest, StreamEqualsGenerate) {
  og_session* s = new_session();
  og_generate_options o = greedy(60);
  ASSERT_EQ(og_session_stream_start(s, kPromptIds.data(), kPromptIds.size(), &o), OG_OK) << og_last_error();
  // Nothing else while a stream runs.
  EXPECT_EQ(og_session_reset(s), OG_ERR_STATE);
  std::string text;
  std::vector<int32_t> tokens;
  int done = 0;
  while (!done) {
    int32_t tok = -1;
    const char* t = nullptr;
    size_t n = 0;
    ASSERT_EQ(og_session_stream_next(s, &tok, &t, &n, &done), OG_OK) << og_last_error();
    if (tok >= 0) tokens.push_back(tok);
    text.append(t, n);
    if (tok >= 0) {
      const float* l = nullptr;
      size_t nv = 0;
      ASSERT_EQ(og_session_logits(s, &l, &nv), OG_OK) << og_last_error();
      EXPECT_EQ(std::max_element(l, l + nv) - l, tok);  // greedy: the argmax
    }
  }
  og_generation g{};
  ASSERT_EQ(og_session_stream_finish(s, &g), OG_OK);
  EXPECT_EQ(text, kContinuation);
  EXPECT_EQ(text_of(g), kContinuation);
  EXPECT_EQ(tokens, std::vector<int32_t>(g.tokens.ids, g.tokens.ids + g.tokens.n));
  og_generation_free(&g);
  int32_t tok;
  const char* t;
  size_t n;
  int done2;
  EXPECT_EQ(og_session_stream_next(s, &tok, &t, &n, &done2), OG_ERR_STATE);
  EXPECT_EQ(og_session_stream_finish(s, nullptr), OG_ERR_STATE);

  // A cancelled stream keeps what it generated.
  ASSERT_EQ(og_session_reset(s), OG_OK);
  ASSERT_EQ(og_session_stream_start(s, kPromptIds.data(), kPromptIds.size(), &o), OG_OK);
  ASSERT_EQ(og_session_stream_next(s, &tok, &t, &n, &done2), OG_OK);
  ASSERT_EQ(og_session_stream_cancel(s), OG_OK);
  ASSERT_EQ(og_session_stream_next(s, &tok, &t, &n, &done2), OG_OK);
  EXPECT_EQ(done2, 1);
  ASSERT_EQ(og_session_stream_finish(s, &g), OG_OK);
  EXPECT_EQ(g.stop_reason, OG_STOP_CANCELLED);
  EXPECT_EQ(g.tokens.n, 1u);
  og_generation_free(&g);
  og_session_free(s);
}

TEST_F(ModelTest, LogitsAfterPrefill) {
  og_session* s = new_session();
  const float* l = nullptr;
  size_t n = 0;
  EXPECT_EQ(og_session_logits(s, &l, &n), OG_ERR_STATE);
  EXPECT_EQ(og_session_prefill(s, nullptr, 0, 1), OG_ERR_STATE);  // nothing to take logits from
  ASSERT_EQ(og_session_prefill(s, kPromptIds.data(), kPromptIds.size(), 1), OG_OK) << og_last_error();
  ASSERT_EQ(og_session_logits(s, &l, &n), OG_OK) << og_last_error();
  ASSERT_EQ(n, 512u);
  EXPECT_EQ(std::max_element(l, l + n) - l, 432);
  // Generating on from the prefilled history gives the reference.
  og_generate_options o = greedy(60);
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, nullptr, 0, &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(text_of(g), kContinuation);
  og_generation_free(&g);
  ASSERT_EQ(og_session_rewind(s, 3), OG_OK);
  EXPECT_EQ(og_session_logits(s, &l, &n), OG_ERR_STATE);
  og_session_free(s);
}

TEST_F(ModelTest, UndoRewindReset) {
  og_session* s = new_session();
  og_generate_options o = greedy(10);
  og_generation g1{}, g2{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g1), OG_OK);
  const int32_t more[] = {403};
  ASSERT_EQ(og_session_generate(s, more, 1, &o, &g2), OG_OK);
  int64_t pos = 0;
  og_session_position(s, &pos);
  EXPECT_EQ(pos, 5 + 10 + 1 + 10);
  ASSERT_EQ(og_session_undo(s), OG_OK);
  og_session_position(s, &pos);
  EXPECT_EQ(pos, 15);
  // The same turn again gives the same reply.
  og_generation g3{};
  ASSERT_EQ(og_session_generate(s, more, 1, &o, &g3), OG_OK);
  EXPECT_EQ(text_of(g3), text_of(g2));
  ASSERT_EQ(og_session_undo(s), OG_OK);
  ASSERT_EQ(og_session_undo(s), OG_OK);
  og_session_position(s, &pos);
  EXPECT_EQ(pos, 0);
  EXPECT_EQ(og_session_undo(s), OG_ERR_STATE);
  EXPECT_EQ(std::string(og_last_error()), "nothing to undo");
  EXPECT_EQ(og_session_rewind(s, 1), OG_ERR_OUT_OF_RANGE);
  ASSERT_EQ(og_session_prefill(s, kPromptIds.data(), kPromptIds.size(), 0), OG_OK);
  og_tokens h{};
  ASSERT_EQ(og_session_history(s, &h), OG_OK);
  EXPECT_EQ(std::vector<int32_t>(h.ids, h.ids + h.n), kPromptIds);
  og_tokens_free(&h);
  ASSERT_EQ(og_session_rewind(s, 2), OG_OK);
  og_session_position(s, &pos);
  EXPECT_EQ(pos, 2);
  ASSERT_EQ(og_session_reset(s), OG_OK);
  og_session_position(s, &pos);
  EXPECT_EQ(pos, 0);
  for (og_generation* g : {&g1, &g2, &g3}) og_generation_free(g);
  og_session_free(s);
}

TEST_F(ModelTest, ForkContinuesIndependently) {
  og_session* s = new_session();
  og_generate_options o = greedy(20);
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK);
  og_generation_free(&g);
  og_session* f = nullptr;
  ASSERT_EQ(og_session_fork(s, &f), OG_OK) << og_last_error();
  const float *la = nullptr, *lb = nullptr;
  size_t na = 0, nb = 0;
  ASSERT_EQ(og_session_logits(s, &la, &na), OG_OK);
  ASSERT_EQ(og_session_logits(f, &lb, &nb), OG_OK);
  ASSERT_EQ(na, nb);
  EXPECT_EQ(std::memcmp(la, lb, na * sizeof(float)), 0);
  o.max_new_tokens = 40;
  og_generation a{}, b{};
  ASSERT_EQ(og_session_generate(s, nullptr, 0, &o, &a), OG_OK) << og_last_error();
  ASSERT_EQ(og_session_generate(f, nullptr, 0, &o, &b), OG_OK) << og_last_error();
  EXPECT_EQ(text_of(a), text_of(b));
  og_tokens h{};
  og_session_history(f, &h);
  EXPECT_EQ(h.n, 65u);
  og_tokens_free(&h);
  // Undoing in the fork leaves the original alone.
  ASSERT_EQ(og_session_undo(f), OG_OK);
  int64_t pa = 0, pb = 0;
  og_session_position(s, &pa);
  og_session_position(f, &pb);
  EXPECT_EQ(pa, 65);
  EXPECT_EQ(pb, 25);
  og_generation_free(&a);
  og_generation_free(&b);
  og_session_free(f);
  og_session_free(s);
}

TEST_F(ModelTest, SessionOptions) {
  og_session_options so;
  og_session_options_init(&so);
  so.kv_kind = "reference";
  so.kv_dtype = "f32";
  so.kv_max_capacity = 100;
  so.prefill_chunk_size = 2;
  const int64_t windows[] = {0};
  so.kv_windows = windows;
  so.n_kv_windows = 1;
  og_session* s = nullptr;
  ASSERT_EQ(og_session_new(model_, &so, &s), OG_OK) << og_last_error();
  int64_t cap = 0;
  ASSERT_EQ(og_session_capacity(s, &cap), OG_OK);
  EXPECT_EQ(cap, 100);
  og_generate_options o = greedy(60);
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(text_of(g), kContinuation);
  og_generation_free(&g);
  og_session_free(s);
}

TEST_F(ModelTest, CppLayer) {
  og_model_options mo;
  og_model_options_init(&mo);
  offgraph::Model m(kModelPath, &mo);
  EXPECT_EQ(m.info().n_vocab, 512);
  EXPECT_EQ(m.encode(kPrompt), kPromptIds);
  EXPECT_EQ(m.decode(kPromptIds), kPrompt);
  EXPECT_EQ(m.piece(1), "<s>");
  EXPECT_EQ(m.encode_chat({{"user", kPrompt}}), kPromptIds);
  offgraph::Session s = m.session();
  og_generate_options o = offgraph::default_generate_options();
  o.max_new_tokens = 60;
  std::string streamed;
  const offgraph::Generation g = s.generate(m.encode(kPrompt), o, [&](std::string_view t) {
    streamed += t;
    return true;
  });
  EXPECT_EQ(g.text, kContinuation);
  EXPECT_EQ(streamed, kContinuation);
  offgraph::Session f = s.fork();
  EXPECT_EQ(f.history(), s.history());
  s.undo();
  EXPECT_EQ(s.position(), 0);
  try {
    s.rewind(5);
    FAIL() << "no error";
  } catch (const offgraph::Error& e) {
    EXPECT_EQ(e.status(), OG_ERR_OUT_OF_RANGE);
    EXPECT_NE(std::string(e.what()).find("cannot rewind to 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(offgraph::Model("/nonexistent.gguf"), offgraph::Error);
}

// A C-style on_token using user_data beside the C++ text callback: both are
// called, each with its own data (the wrapper used to overwrite user_data, and
// such an on_token read the functor as its own struct and crashed).
TEST_F(ModelTest, CppLayerKeepsTheCCallbacksUserData) {
  offgraph::Model m(kModelPath);
  offgraph::Session s = m.session();
  struct Counts {
    int tokens = 0;
    std::string c_text;
  } counts;
  og_generate_options o = offgraph::default_generate_options();
  o.max_new_tokens = 60;
  o.user_data = &counts;
  o.on_token = [](void* ud, int32_t) -> int {
    ++static_cast<Counts*>(ud)->tokens;
    return 0;
  };
  o.on_text = [](void* ud, const char* t, size_t n) -> int {
    static_cast<Counts*>(ud)->c_text.append(t, n);
    return 0;
  };
  std::string streamed;
  const offgraph::Generation g = s.generate(m.encode(kPrompt), o, [&](std::string_view t) {
    streamed += t;
    return true;
  });
  EXPECT_EQ(g.text, kContinuation);
  EXPECT_EQ(streamed, kContinuation);
  EXPECT_EQ(counts.c_text, kContinuation);
  EXPECT_EQ(counts.tokens, static_cast<int>(g.tokens.size()));
  // Either callback can cancel.
  offgraph::Session s2 = m.session();
  o.on_text = [](void*, const char*, size_t) -> int { return 1; };
  const offgraph::Generation c = s2.generate(m.encode(kPrompt), o, [](std::string_view) { return true; });
  EXPECT_EQ(c.stop_reason, OG_STOP_CANCELLED);
}

}  // namespace
