// The struct behind og_session, shared by the session calls (c_api_session.cpp)
// and the state file (c_api_state.cpp); SessionUse holds its busy flag.
#pragma once

#include <deque>
#include <functional>

#include "api/c_api_internal.h"
#include "runtime/chat_images.h"

namespace og::capi {
struct ChatTurn;     // c_api_chat.cpp
class SessionSpec;   // c_api_spec.h
}

struct og_session {
  std::shared_ptr<og::capi::ModelCore> core;
  og::CacheSetup setup;
  og::KvPolicy policy;
  std::unique_ptr<og::KvCache> loaded_cache;  // the cache of a loaded session (og_session_load); outlives s
  std::unique_ptr<og::Session> s;
  std::atomic<bool> busy{false};
  // Set by og_session_cancel / og_session_stream_cancel from any thread; a
  // running prefill, generate or stream checks it between forward steps.
  // Cleared when a prefill, generate or stream starts.
  std::atomic<bool> cancel{false};
  std::atomic<bool> streaming{false};  // a stream is between start and finish
  std::vector<int64_t> undo_marks;    // history length before each prefill / turn
  bool have_logits = false;           // s->logits() are the last asked-for row's
  std::vector<float> forked_logits;   // a fork's copy, until its first call that changes it
  std::vector<float> logits_out;      // [n_vocab] what og_session_logits hands out (never reallocated)

  // A turn pulled step by step (og_session_stream_*).
  struct Stream {
    std::unique_ptr<og::Sampler> sampler;
    og::GenerateOptions opts;
    og::TextCallback on_text;
    og_generate_options user{};
    std::vector<std::string> stop_strings;
    std::string pending;  // text ready since the last next()
    std::string handed;   // what the last next() returned (kept alive)
    // Tokens sampled but not yet handed out: a speculative step samples several,
    // and og_session_stream_next hands out one per call.
    std::deque<int32_t> sampled;
    std::vector<og::TokenEvent> events;  // each token's logprobs, when asked
  };
  std::unique_ptr<Stream> stream;
  // A chat turn being streamed on `stream` (og_session_chat_*, c_api_chat.cpp).
  std::shared_ptr<og::capi::ChatTurn> chat;
  // og_session_options' speculation (null: off), applied to every turn.
  std::shared_ptr<og::capi::SessionSpec> spec;
  // The images of the last chat turn and og_session_append_image, encoded (c_api_images.cpp).
  og::ImageCache images;
};

namespace og::capi {

// Holds a session's busy flag for one call (OG_ERR_BUSY when another thread holds it).
class SessionUse {
 public:
  explicit SessionUse(og_session* s);
  ~SessionUse() { s_->busy.store(false); }
  SessionUse(const SessionUse&) = delete;
  SessionUse& operator=(const SessionUse&) = delete;

 private:
  og_session* s_;
};

// OG_ERR_STATE while a stream runs.
void no_stream(const og_session* s);
// After a call that changed (or dropped) the logits.
void logits_changed(og_session* s, bool have);

// The bodies of og_session_stream_start / _next / _finish for a caller that
// holds the session (SessionUse) and has read the options; adjust (may be
// null) changes the turn's runtime options before it starts (a chat's grammar).
void stream_start_held(og_session* s, const int32_t* prompt, size_t n, const og_generate_options& o,
                       const std::function<void(GenerateOptions&)>& adjust);
void stream_next_held(og_session* s, int32_t* token, const char** text, size_t* len, int* done);
void stream_finish_held(og_session* s, og_generation* out);

}  // namespace og::capi
