// Cancelling from another thread at any point, prefill chunks included:
// og_session_cancel stops a generate or a prefill before its next forward
// step, og_session_stream_cancel is never BUSY while og_session_stream_next
// runs, and the session stays usable (a generate cut mid-prefill keeps its
// prompt and the next turn prefills the rest; a cancelled prefill is taken
// back whole). A prefill chunk of one row makes a 400-token prompt take
// hundreds of forward steps, so a cancel lands inside it. A blocking call
// races its canceller thread (on a loaded machine the thread may first run
// after the call ended), so those tests try again on a fresh session until a
// cancel lands inside, checking the invariants on every try; the stream tests
// wait for the cancel between steps and need no retry.
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "api/api_test_util.h"
#include "offgraph/offgraph.hpp"

namespace og_test {
namespace {

constexpr size_t kLongPrompt = 400;
constexpr int kAttempts = 20;

std::vector<int32_t> long_prompt() {
  std::vector<int32_t> p = {1};
  for (size_t i = 1; i < kLongPrompt; ++i) p.push_back(static_cast<int32_t>(260 + i % 200));
  return p;
}

class CancelTest : public ModelTest {
 protected:
  og_session* chunked_session() {
    og_session_options o;
    og_session_options_init(&o);
    o.prefill_chunk_size = 1;
    og_session* s = nullptr;
    EXPECT_EQ(og_session_new(model_, &o, &s), OG_OK) << og_last_error();
    return s;
  }
  int64_t cached(og_session* s) {
    og_session_stats st{};
    EXPECT_EQ(og_session_get_stats(s, &st), OG_OK);
    return st.cache_positions;
  }
};

// Calls `cancel` every 0.2 ms until `stop`; counts the statuses it got.
struct Canceller {
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::thread t;
  template <class F>
  explicit Canceller(F cancel) {
    t = std::thread([this, cancel] {
      while (!stop.load()) {
        const og_status s = cancel();
        (s == OG_OK ? ok : s == OG_ERR_BUSY ? busy : other)++;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  void join() {
    stop = true;
    t.join();
  }
};

TEST_F(CancelTest, GenerateStopsMidPrefillAndTheNextTurnPrefillsTheRest) {
  const std::vector<int32_t> prompt = long_prompt();
  og_generate_options o = greedy(8);
  og_session* s = nullptr;
  for (int attempt = 0; attempt < kAttempts && !s; ++attempt) {
    og_session* t = chunked_session();
    og_generation g{};
    og_status st = OG_OK;
    {
      Canceller c([&] { return og_session_cancel(t); });
      st = og_session_generate(t, prompt.data(), prompt.size(), &o, &g);
      c.join();
      EXPECT_EQ(c.busy.load(), 0);
      EXPECT_EQ(c.other.load(), 0);
    }
    ASSERT_EQ(st, OG_OK) << og_last_error();
    int64_t pos = 0;
    ASSERT_EQ(og_session_position(t, &pos), OG_OK);
    EXPECT_EQ(pos, static_cast<int64_t>(kLongPrompt));
    // A cancel that came after the prefill (during decode, or after the call) is a miss.
    const bool landed = g.stop_reason == OG_STOP_CANCELLED && g.tokens.n == 0;
    if (landed) {
      EXPECT_LT(cached(t), static_cast<int64_t>(kLongPrompt) - 1) << "the cancel did not stop the prefill";
    }
    og_generation_free(&g);
    if (landed) s = t;
    else og_session_free(t);
  }
  ASSERT_NE(s, nullptr) << "no cancel landed inside the prefill in " << kAttempts << " tries";
  // The next turn continues as an uncancelled one would.
  og_generation rest{};
  ASSERT_EQ(og_session_generate(s, nullptr, 0, &o, &rest), OG_OK) << og_last_error();
  og_session* fresh = chunked_session();
  og_generation ref{};
  ASSERT_EQ(og_session_generate(fresh, prompt.data(), prompt.size(), &o, &ref), OG_OK) << og_last_error();
  EXPECT_EQ(std::vector<int32_t>(rest.tokens.ids, rest.tokens.ids + rest.tokens.n),
            std::vector<int32_t>(ref.tokens.ids, ref.tokens.ids + ref.tokens.n));
  EXPECT_EQ(ref.tokens.n, 8u);
  og_generation_free(&rest);
  og_generation_free(&ref);
  og_session_free(fresh);
  og_session_free(s);
}

TEST_F(CancelTest, StreamCancelFromAnotherThreadIsNeverBusy) {
  const std::vector<int32_t> prompt = long_prompt();
  og_session* s = chunked_session();
  og_generate_options o = greedy(8);
  ASSERT_EQ(og_session_stream_start(s, prompt.data(), prompt.size(), &o), OG_OK) << og_last_error();
  std::optional<Canceller> c;
  int done = 0, steps = 0;
  while (!done) {
    int32_t tok = -1;
    const char* t = nullptr;
    size_t n = 0;
    ASSERT_EQ(og_session_stream_next(s, &tok, &t, &n, &done), OG_OK) << og_last_error();
    ++steps;
    // After the first chunk, start cancelling and wait until a cancel has been taken, so it
    // lands mid-prefill however late the thread first runs; it keeps calling while the next
    // step runs.
    if (steps == 1 && !done) {
      c.emplace([&] { return og_session_stream_cancel(s); });
      while (c->ok.load() == 0 && c->other.load() == 0) std::this_thread::yield();
    }
  }
  og_generation g{};
  ASSERT_EQ(og_session_stream_finish(s, &g), OG_OK) << og_last_error();
  ASSERT_TRUE(c.has_value()) << "the stream ended at its first step";
  c->join();
  EXPECT_EQ(c->busy.load(), 0) << "og_session_stream_cancel answered BUSY while stream_next ran";
  EXPECT_GT(c->ok.load(), 0);
  EXPECT_EQ(g.stop_reason, OG_STOP_CANCELLED);
  EXPECT_EQ(g.tokens.n, 0u);
  EXPECT_GT(steps, 1);  // prefill chunks come back one by one
  EXPECT_LT(cached(s), static_cast<int64_t>(kLongPrompt) - 1);
  og_generation_free(&g);
  // Without a stream it is a state error, as before.
  EXPECT_EQ(og_session_stream_cancel(s), OG_ERR_STATE);
  og_session_free(s);
  EXPECT_EQ(og_session_cancel(s), OG_ERR_INVALID_HANDLE);
  EXPECT_EQ(og_session_cancel(nullptr), OG_ERR_INVALID_HANDLE);
}

TEST_F(CancelTest, ACancelledPrefillIsTakenBackWhole) {
  const std::vector<int32_t> prompt = long_prompt();
  og_session* s = nullptr;
  for (int attempt = 0; attempt < kAttempts && !s; ++attempt) {
    og_session* t = chunked_session();
    ASSERT_EQ(og_session_prefill(t, kPromptIds.data(), kPromptIds.size(), 0), OG_OK);
    og_status st = OG_OK;
    {
      Canceller c([&] { return og_session_cancel(t); });
      st = og_session_prefill(t, prompt.data() + 1, prompt.size() - 1, 1);
      c.join();
      EXPECT_EQ(c.busy.load(), 0);
    }
    if (st == OG_OK) {  // the canceller first ran after the prefill: try again
      og_session_free(t);
      continue;
    }
    EXPECT_EQ(st, OG_ERR_CANCELLED);
    s = t;
  }
  ASSERT_NE(s, nullptr) << "no cancel landed inside the prefill in " << kAttempts << " tries";
  EXPECT_STREQ(og_status_name(OG_ERR_CANCELLED), "cancelled");
  EXPECT_NE(std::string(og_last_error()).find("cancelled"), std::string::npos) << og_last_error();
  int64_t pos = 0;
  ASSERT_EQ(og_session_position(s, &pos), OG_OK);
  EXPECT_EQ(pos, static_cast<int64_t>(kPromptIds.size()));
  EXPECT_EQ(cached(s), static_cast<int64_t>(kPromptIds.size()));
  // The earlier prefill is still the one to undo; a cancel made while nothing runs is forgotten.
  ASSERT_EQ(og_session_cancel(s), OG_OK);
  ASSERT_EQ(og_session_undo(s), OG_OK);
  ASSERT_EQ(og_session_position(s, &pos), OG_OK);
  EXPECT_EQ(pos, 0);
  og_generate_options o = greedy(20);
  og_generation g{}, ref{};
  ASSERT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  og_session* fresh = chunked_session();
  ASSERT_EQ(og_session_generate(fresh, kPromptIds.data(), kPromptIds.size(), &o, &ref), OG_OK);
  EXPECT_EQ(g.stop_reason, OG_STOP_MAX_TOKENS);
  EXPECT_EQ(text_of(g), text_of(ref));
  og_generation_free(&g);
  og_generation_free(&ref);
  og_session_free(fresh);
  og_session_free(s);
}

TEST_F(CancelTest, TheCppStreamAndCancelWrappers) {
  offgraph::Model m(kModelPath);
  og_session_options so;
  og_session_options_init(&so);
  so.prefill_chunk_size = 1;
  offgraph::Session s = m.session(&so);
  const std::vector<int32_t> prompt = long_prompt();
  offgraph::Stream st = s.stream(prompt, greedy(8));
  std::atomic<bool> first_step{false}, cancelled{false};
  std::thread other([&] {
    while (!first_step.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    st.cancel();  // never BUSY while next() runs on this thread
    cancelled = true;
  });
  std::string text;
  int steps = 0;
  while (st.next(&text)) {
    ++steps;
    first_step = true;
    // Wait for the cancel after the first chunk (it may come while a step runs):
    // a late thread must not let the whole prefill finish first.
    while (steps == 1 && !cancelled.load()) std::this_thread::yield();
  }
  first_step = true;
  other.join();
  const offgraph::Generation g = st.finish();
  EXPECT_EQ(g.stop_reason, OG_STOP_CANCELLED);
  EXPECT_GT(steps, 0);
  EXPECT_LT(s.stats().cache_positions, static_cast<int64_t>(kLongPrompt) - 1);
  // A whole stream equals generate().
  s.reset();
  std::string streamed;
  {
    offgraph::Stream whole = s.stream(kPromptIds, greedy(60));
    while (whole.next(&streamed)) {
    }
    EXPECT_EQ(whole.finish().text, kContinuation);
  }
  EXPECT_EQ(streamed, kContinuation);
  s.cancel();  // nothing runs: forgotten by the next call
  s.undo();
  EXPECT_EQ(s.generate(kPromptIds, greedy(60)).stop_reason, OG_STOP_MAX_TOKENS);
}

}  // namespace
}  // namespace og_test
