// Bad uses of the C API are a status and a one-line message, never a crash:
// null, freed and closed handles, null out-pointers, bad options, out-of-range
// ids, a prompt that does not fit, and a session used from two threads.
#include <atomic>
#include <chrono>
#include <thread>

#include "api/api_test_util.h"

namespace {

using namespace og_test;

TEST(CApiMisuse, NullModelHandle) {
  og_model_info info{};
  og_tokens t{};
  og_string s{};
  og_special_ids sp{};
  const char* piece = nullptr;
  size_t len = 0;
  const og_chat_message msg[] = {{"user", "x"}};
  og_session* session = nullptr;
  EXPECT_EQ(og_model_get_info(nullptr, &info), OG_ERR_INVALID_HANDLE);
  EXPECT_STREQ(og_last_error(), "the model handle is NULL");
  EXPECT_EQ(og_special_tokens(nullptr, &sp), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_stop_ids(nullptr, &t), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_tokenize(nullptr, "a", 1, 1, 0, &t), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_detokenize(nullptr, nullptr, 0, 1, &s), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_token_piece(nullptr, 1, &piece, &len), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_chat_render(nullptr, msg, 1, 1, &s), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_chat_encode(nullptr, msg, 1, 1, &t), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_new(nullptr, nullptr, &session), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_model_close(nullptr), OG_OK);
  // A pointer that was never a handle.
  int junk = 0;
  EXPECT_EQ(og_model_get_info(reinterpret_cast<og_model*>(&junk), &info), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_model_close(reinterpret_cast<og_model*>(&junk)), OG_ERR_INVALID_HANDLE);
}

TEST(CApiMisuse, NullSessionHandle) {
  og_session* s = nullptr;
  og_session* out = nullptr;
  og_generation g{};
  og_tokens t{};
  int64_t v = 0;
  const float* l = nullptr;
  size_t n = 0;
  int32_t tok = 0;
  const char* text = nullptr;
  int done = 0;
  og_session_stats st{};
  EXPECT_EQ(og_session_fork(s, &out), OG_ERR_INVALID_HANDLE);
  EXPECT_STREQ(og_last_error(), "the session handle is NULL");
  EXPECT_EQ(og_session_prefill(s, nullptr, 0, 0), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_generate(s, nullptr, 0, nullptr, &g), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_stream_start(s, nullptr, 0, nullptr), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_stream_next(s, &tok, &text, &n, &done), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_stream_cancel(s), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_stream_finish(s, &g), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_logits(s, &l, &n), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_position(s, &v), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_history(s, &t), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_capacity(s, &v), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_rewind(s, 0), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_undo(s), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_reset(s), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_get_stats(s, &st), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_free(s), OG_OK);
}

TEST(CApiMisuse, OpenErrors) {
  og_model* m = reinterpret_cast<og_model*>(0x1);
  EXPECT_EQ(og_model_open("/nonexistent/model.gguf", nullptr, &m), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(og_last_error()).find("/nonexistent/model.gguf: no such file or directory"),
            std::string::npos)
      << og_last_error();
  EXPECT_EQ(og_model_open(nullptr, nullptr, &m), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "path is NULL");
  EXPECT_EQ(og_model_open(kModelPath.c_str(), nullptr, nullptr), OG_ERR_INVALID_ARGUMENT);
  og_model_options o;
  og_model_options_init(&o);
  o.threads = -3;
  EXPECT_EQ(og_model_open(kModelPath.c_str(), &o, &m), OG_ERR_INVALID_ARGUMENT);
  // A file that is not a model.
  EXPECT_EQ(og_model_open((std::string(OG_SOURCE_DIR) + "/README.md").c_str(), nullptr, &m), OG_ERR_RUNTIME);
  EXPECT_NE(std::string(og_last_error()), "");
}

TEST_F(ModelTest, ClosedModel) {
  og_session* s = new_session();
  og_model* m = model_;
  ASSERT_EQ(og_model_close(m), OG_OK);
  model_ = nullptr;  // TearDown closes nullptr (fine)
  og_model_info info{};
  EXPECT_EQ(og_model_get_info(m, &info), OG_ERR_INVALID_HANDLE);
  EXPECT_STREQ(og_last_error(), "the model handle is closed or not a model");
  og_tokens t{};
  EXPECT_EQ(og_tokenize(m, "a", 1, 1, 0, &t), OG_ERR_INVALID_HANDLE);
  og_session* s2 = nullptr;
  EXPECT_EQ(og_session_new(m, nullptr, &s2), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_model_close(m), OG_ERR_INVALID_HANDLE);
  // The session made before keeps the weights alive.
  og_generate_options o = greedy(60);
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(text_of(g), kContinuation);
  og_generation_free(&g);
  EXPECT_EQ(og_session_free(s), OG_OK);
  // A freed session.
  int64_t pos = 0;
  EXPECT_EQ(og_session_position(s, &pos), OG_ERR_INVALID_HANDLE);
  EXPECT_STREQ(og_last_error(), "the session handle is freed or not a session");
  EXPECT_EQ(og_session_free(s), OG_ERR_INVALID_HANDLE);
}

TEST_F(ModelTest, NullOutputsAndBadOptions) {
  og_session* s = new_session();
  EXPECT_EQ(og_model_get_info(model_, nullptr), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "out is NULL");
  EXPECT_EQ(og_tokenize(model_, nullptr, 3, 1, 0, nullptr), OG_ERR_INVALID_ARGUMENT);
  og_tokens t{};
  EXPECT_EQ(og_tokenize(model_, nullptr, 3, 1, 0, &t), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "text is NULL");
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), nullptr, nullptr), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_session_prefill(s, nullptr, 2, 0), OG_ERR_INVALID_ARGUMENT);
  og_generation g{};
  EXPECT_EQ(og_session_generate(s, nullptr, 0, nullptr, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("nothing to generate from"), std::string::npos);

  og_generate_options o = greedy(10);
  o.sampler.temperature = -1;
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "sampler.temperature is -1, outside [0, 2]");
  // The server's and the commands' bound and words (runtime/generation_limits.h).
  o.sampler.temperature = 3;
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "sampler.temperature is 3, outside [0, 2]");
  o = greedy(10);
  o.sampler.presence_penalty = 2.5;
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "sampler.presence_penalty is 2.5, outside [-2, 2]");
  o = greedy(-5);
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "max_new_tokens is -5, outside [0, 2147483647]");
  o = greedy(10);
  const char* empty_stop[] = {"x", ""};
  o.stop_strings = empty_stop;
  o.n_stop_strings = 2;
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "stop_strings[1] is empty");
  o = greedy(10);
  const char* stops[] = {nullptr};
  o.stop_strings = stops;
  o.n_stop_strings = 1;
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "stop_strings[0] is NULL");
  int64_t pos = -1;
  og_session_position(s, &pos);
  EXPECT_EQ(pos, 0);  // nothing happened

  og_session_options so;
  og_session* s2 = nullptr;
  og_session_options_init(&so);
  so.kv_dtype = "f8";
  EXPECT_EQ(og_session_new(model_, &so, &s2), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("kv_dtype \"f8\""), std::string::npos);
  og_session_options_init(&so);
  so.kv_kind = "batched-cell";
  EXPECT_EQ(og_session_new(model_, &so, &s2), OG_ERR_INVALID_ARGUMENT);
  og_session_options_init(&so);
  so.kv_max_capacity = -1;
  EXPECT_EQ(og_session_new(model_, &so, &s2), OG_ERR_INVALID_ARGUMENT);
  og_session_options_init(&so);
  so.n_kv_windows = 2;
  EXPECT_EQ(og_session_new(model_, &so, &s2), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(), "kv_windows is NULL");
  EXPECT_EQ(s2, nullptr);
  og_session_free(s);
}

TEST_F(ModelTest, OutOfRangeIdsAndCapacity) {
  og_session* s = new_session();
  const int32_t bad[] = {1, 403, 512};
  og_generation g{};
  EXPECT_EQ(og_session_generate(s, bad, 3, nullptr, &g), OG_ERR_OUT_OF_RANGE);
  EXPECT_STREQ(og_last_error(), "prompt[2]: token id 512 is out of range [0, 512)");
  EXPECT_EQ(og_session_prefill(s, bad, 3, 0), OG_ERR_OUT_OF_RANGE);
  EXPECT_EQ(og_session_stream_start(s, bad, 3, nullptr), OG_ERR_OUT_OF_RANGE);
  int64_t pos = -1;
  og_session_position(s, &pos);
  EXPECT_EQ(pos, 0);
  og_session_free(s);

  og_session_options so;
  og_session_options_init(&so);
  so.kv_max_capacity = 4;
  ASSERT_EQ(og_session_new(model_, &so, &s), OG_OK) << og_last_error();
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), nullptr, &g), OG_ERR_CAPACITY);
  EXPECT_NE(std::string(og_last_error()).find("does not fit"), std::string::npos) << og_last_error();
  // A generation that fills the cache stops with a reason.
  const int32_t two[] = {1, 403};
  og_generate_options o = greedy(100);
  ASSERT_EQ(og_session_generate(s, two, 2, &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(g.stop_reason, OG_STOP_CAPACITY);
  og_generation_free(&g);
  og_session_free(s);
}

// A callback that calls back into its own session is refused, not deadlocked.
int reenter(void* ud, int32_t) {
  auto* s = static_cast<og_session*>(ud);
  int64_t pos = 0;
  return og_session_position(s, &pos) == OG_ERR_BUSY ? 1 : 0;  // cancel when refused as expected
}

TEST_F(ModelTest, SessionFromItsOwnCallbackIsBusy) {
  og_session* s = new_session();
  og_generate_options o = greedy(30);
  o.on_token = reenter;
  o.user_data = s;
  og_generation g{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  EXPECT_EQ(g.stop_reason, OG_STOP_CANCELLED);
  EXPECT_EQ(g.tokens.n, 1u);
  og_generation_free(&g);
  og_session_free(s);
}

struct TwoThreads {
  std::atomic<bool> inside{false}, release{false};
};

int hold(void* ud, int32_t) {
  auto* t = static_cast<TwoThreads*>(ud);
  t->inside = true;
  while (!t->release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return 1;
}

TEST_F(ModelTest, SessionFromTwoThreadsIsBusy) {
  og_session* s = new_session();
  TwoThreads sync;
  og_generate_options o = greedy(30);
  o.on_token = hold;
  o.user_data = &sync;
  og_status st = OG_ERR_RUNTIME;
  og_generation g{};
  std::thread worker([&] { st = og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g); });
  while (!sync.inside) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int32_t one[] = {1};
  EXPECT_EQ(og_session_prefill(s, one, 1, 0), OG_ERR_BUSY);
  EXPECT_NE(std::string(og_last_error()).find("in use by another thread"), std::string::npos) << og_last_error();
  EXPECT_EQ(og_session_free(s), OG_ERR_BUSY);
  og_session* f = nullptr;
  EXPECT_EQ(og_session_fork(s, &f), OG_ERR_BUSY);
  sync.release = true;
  worker.join();
  EXPECT_EQ(st, OG_OK);
  // The message is per thread: the worker's calls since left this thread's alone.
  EXPECT_NE(std::string(og_last_error()).find("in use by another thread"), std::string::npos) << og_last_error();
  og_generation_free(&g);
  EXPECT_EQ(og_session_free(s), OG_OK);
}

}  // namespace
