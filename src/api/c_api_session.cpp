// The C API's sessions (offgraph.h): one conversation over its own KV cache;
// prefill, generate (whole or streamed step by step), logits, rewind / undo /
// reset, fork. A session is used by one thread at a time: a busy flag taken
// under the registry's lock turns a second thread into OG_ERR_BUSY.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "api/c_api_images.h"
#include "api/c_api_session.h"
#include "api/c_api_spec.h"
#include "kv/kv_types.h"
#include "runtime/prompt_room.h"

namespace og::capi {

SessionUse::SessionUse(og_session* s) : s_(s) {
  if (!s) api_fail(OG_ERR_INVALID_HANDLE, "the session handle is NULL");
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (!is_live_locked(s, Kind::kSession))
    api_fail(OG_ERR_INVALID_HANDLE, "the session handle is freed or not a session");
  if (s->busy.exchange(true))
    api_fail(OG_ERR_BUSY, "the session is in use by another thread (or by its own callback); a session is used "
                          "by one thread at a time");
}

void no_stream(const og_session* s) {
  if (s->stream) api_fail(OG_ERR_STATE, "a stream is running in this session: finish it first (og_session_stream_finish)");
}

void logits_changed(og_session* s, bool have) {
  s->have_logits = have;
  s->forked_logits.clear();
}

namespace {

og_stop_reason stop_reason_of(StopReason r) {
  switch (r) {
    case StopReason::kStopToken: return OG_STOP_TOKEN;
    case StopReason::kStopString: return OG_STOP_STRING;
    case StopReason::kMaxTokens: return OG_STOP_MAX_TOKENS;
    case StopReason::kCapacity: return OG_STOP_CAPACITY;
    case StopReason::kInterrupted: return OG_STOP_CANCELLED;
    case StopReason::kNone: return OG_STOP_NONE;
  }
  return OG_STOP_NONE;
}

// Prompt ids checked, and room for them plus one generated token.
void check_prompt(const og_session* s, const int32_t* prompt, size_t n, bool generating) {
  check_ids(prompt, n, s->core->n_vocab(), "prompt");
  if (generating && n == 0 && s->s->position() == 0)
    api_fail(OG_ERR_INVALID_ARGUMENT, "the prompt is empty and so is the history: nothing to generate from");
  // A generation's prompt leaves room for a generated token (runtime/prompt_room.h, the server's rule).
  if (generating) {
    if (const std::string e = prompt_room_error(s->s->position(), static_cast<int64_t>(n), s->s->capacity());
        !e.empty())
      api_fail(OG_ERR_CAPACITY, e, " (raise kv_max_capacity)");
  } else if (!s->s->fits(static_cast<int64_t>(n))) {
    api_fail(OG_ERR_CAPACITY, "the prompt of ", n, " tokens does not fit: ", s->s->position(), "/",
             s->s->capacity(), " positions used (raise kv_max_capacity)");
  }
}

// The runtime's options for a turn; callbacks set `cancel` when they ask to stop.
GenerateOptions generate_options_of(const og_session* s, const og_generate_options& o,
                                    std::vector<std::string>* stop_strings, std::atomic<bool>* cancel,
                                    std::vector<TokenEvent>* events) {
  check_generate_options(o);
  GenerateOptions g;
  g.logprobs = o.logprobs != 0 || o.top_logprobs > 0;
  g.top_logprobs = o.top_logprobs;
  g.max_new_tokens = o.max_new_tokens;
  if (o.stop_at_model_stop_ids) g.stop_ids = s->core->run.loaded.stop_ids;
  for (size_t i = 0; i < o.n_stop_strings; ++i) stop_strings->push_back(o.stop_strings[i]);
  g.stop_strings = *stop_strings;
  g.interrupt = cancel;
  if (s->spec) apply_session_spec(*s->spec, g);
  og_token_callback cb = o.on_token;
  void* ud = o.user_data;
  const bool keep = g.logprobs;
  if (cb || keep) {
    g.on_token = [cb, ud, cancel, keep, events](const TokenEvent& ev) {
      if (keep) events->push_back(ev);
      if (cb && cb(ud, ev.id) != 0) cancel->store(true);
    };
  }
  return g;
}

TextCallback text_callback_of(const og_generate_options& o, std::atomic<bool>* cancel, std::string* sink) {
  og_text_callback cb = o.on_text;
  void* ud = o.user_data;
  if (!cb && !sink) return nullptr;
  return [cb, ud, cancel, sink](std::string_view piece) {
    if (sink) sink->append(piece);
    if (cb && cb(ud, piece.data(), piece.size()) != 0) cancel->store(true);
  };
}

template <class T>
T* c_array(size_t n) {
  T* p = static_cast<T*>(std::malloc(std::max<size_t>(1, n) * sizeof(T)));
  if (!p) throw std::bad_alloc();
  return p;
}

// The logprobs of `events` (one per generated token) into g's arrays.
void fill_logprobs(const std::vector<TokenEvent>& events, int32_t top_k, og_generation* g) {
  const size_t n = events.size();
  g->top_k = top_k;
  g->logprobs = c_array<float>(n);
  if (top_k > 0) {
    g->top_ids = c_array<int32_t>(n * top_k);
    g->top_logprobs = c_array<float>(n * top_k);
  }
  for (size_t i = 0; i < n; ++i) {
    g->logprobs[i] = events[i].logprob;
    for (int32_t k = 0; k < top_k; ++k) {
      const bool have = k < static_cast<int32_t>(events[i].top.size());
      g->top_ids[i * top_k + k] = have ? events[i].top[k].id : -1;
      g->top_logprobs[i * top_k + k] = have ? events[i].top[k].logprob : -INFINITY;
    }
  }
}

void fill_generation(const TurnResult& r, const og_generate_options& o, const std::vector<TokenEvent>& events,
                     og_generation* out) {
  og_generation g{};
  try {
    g.tokens = make_tokens(r.tokens);
    g.text = make_string(r.text);
    if (o.logprobs != 0 || o.top_logprobs > 0) fill_logprobs(events, o.top_logprobs, &g);
  } catch (...) {
    og_generation_free(&g);
    throw;
  }
  g.stop_reason = stop_reason_of(r.reason);
  g.prompt_tokens = r.prefilled;
  *out = g;
}

// og_session_cancel and og_session_stream_cancel: any thread, any time, never
// BUSY. The registry's lock keeps the handle alive while the flag is set.
void request_cancel(og_session* s, bool stream_only) {
  if (!s) api_fail(OG_ERR_INVALID_HANDLE, "the session handle is NULL");
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (!is_live_locked(s, Kind::kSession)) api_fail(OG_ERR_INVALID_HANDLE, "the session handle is freed or not a session");
  if (stream_only && !s->streaming.load()) api_fail(OG_ERR_STATE, "no stream is running in this session");
  s->cancel.store(true);
}

// Session::prefill one cache write at a time, checking the cancel flag between
// them: a cancelled prefill is taken back whole (OG_ERR_CANCELLED).
void prefill_in_chunks(og_session* s, std::span<const int32_t> tokens, bool want_logits) {
  Session& ss = *s->s;
  const int64_t mark = ss.position();
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, ss.cache().policy().max_write));
  if (tokens.empty()) return ss.prefill(tokens, want_logits);
  try {
    for (size_t done = 0; done < tokens.size();) {
      if (s->cancel.load()) {
        ss.rewind_to(mark);
        api_fail(OG_ERR_CANCELLED, "the prefill was cancelled (og_session_cancel): the history is as before it");
      }
      const size_t n = std::min(chunk, tokens.size() - done);
      ss.prefill(tokens.subspan(done, n), want_logits && done + n == tokens.size());
      done += n;
    }
  } catch (const ApiError&) {
    throw;
  } catch (...) {
    if (ss.position() > mark) ss.rewind_to(mark);
    throw;
  }
}

std::unique_ptr<Session> new_session(const og_session* s) {
  return std::make_unique<Session>(
      *s->core->engine,
      cache_of(s->setup, s->core->run.model(), s->policy,
               "og_session_options.kv_max_capacity, kv_initial_capacity, kv_windows or prefill_chunk_size"),
      s->core->tok());
}

}  // namespace

// The stream calls' bodies (c_api_session.h), for callers that hold the session.
void stream_start_held(og_session* session, const int32_t* prompt, size_t n, const og_generate_options& o,
                       const std::function<void(GenerateOptions&)>& adjust) {
  no_stream(session);
  check_prompt(session, prompt, n, true);
  auto st = std::make_unique<og_session::Stream>();
  st->user = o;
  session->cancel.store(false);
  st->opts = generate_options_of(session, o, &st->stop_strings, &session->cancel, &st->events);
  if (adjust) adjust(st->opts);
  auto* raw = st.get();
  auto user_token = st->opts.on_token;
  st->opts.on_token = [raw, user_token](const TokenEvent& ev) {
    raw->sampled.push_back(ev.id);
    if (user_token) user_token(ev);
  };
  st->sampler = std::make_unique<Sampler>(sampler_config_of(o.sampler));
  st->on_text = text_callback_of(o, &session->cancel, &st->pending);
  const int64_t mark = session->s->position();
  session->s->begin_turn(std::span<const int32_t>(prompt, n), *st->sampler, st->opts, st->on_text);
  session->undo_marks.push_back(mark);
  logits_changed(session, false);
  session->stream = std::move(st);
  session->streaming.store(true);
}

void stream_next_held(og_session* session, int32_t* token, const char** text, size_t* len, int* done) {
  need(token, "token");
  need(text, "text");
  need(len, "len");
  need(done, "done");
  og_session::Stream* st = session->stream.get();
  if (!st) api_fail(OG_ERR_STATE, "no stream is running in this session (og_session_stream_start)");
  Session& s = *session->s;
  try {
    while (!s.turn_done() && st->sampled.empty()) {
      if (session->cancel.load()) {
        s.interrupt_turn();
        break;
      }
      // A prefill chunk that is not the prompt's last returns at once (token -1),
      // so that a caller (Python's Ctrl-C) can act between chunks.
      const bool chunk = s.in_prefill();
      s.step();
      if (chunk && st->sampled.empty()) break;
    }
  } catch (...) {
    s.abort_turn();
    session->stream.reset();
    session->streaming.store(false);
    session->undo_marks.pop_back();
    throw;
  }
  st->handed.swap(st->pending);
  st->pending.clear();
  *token = -1;
  if (!st->sampled.empty()) {
    *token = st->sampled.front();
    st->sampled.pop_front();
  }
  *text = st->handed.c_str();
  *len = st->handed.size();
  *done = s.turn_done() && st->sampled.empty() ? 1 : 0;
}

void stream_finish_held(og_session* session, og_generation* out) {
  if (out) *out = og_generation{};
  if (!session->stream) api_fail(OG_ERR_STATE, "no stream is running in this session");
  Session& s = *session->s;
  if (!s.turn_done()) s.interrupt_turn();
  std::unique_ptr<og_session::Stream> st = std::move(session->stream);
  session->streaming.store(false);
  const TurnResult r = s.end_turn();
  logits_changed(session, !s.logits().empty());
  if (out) fill_generation(r, st->user, st->events, out);
}

}  // namespace og::capi

using namespace og;
using namespace og::capi;

extern "C" {

void og_session_options_init(og_session_options* opts) {
  if (opts)
    *opts = og_session_options{sizeof(og_session_options), "sequence", "f16", 0, 512, nullptr, 0, 0,
                               0, 1, 4, 0, nullptr, 0.75};  // no speculation
}

void og_generate_options_init(og_generate_options* opts) {
  if (!opts) return;
  og_generate_options o{};
  o.struct_size = sizeof(og_generate_options);
  o.max_new_tokens = 256;
  o.sampler = og_sampler_options{0.0, 0, 1.0, 0.0, 1.0, 64, 0.0, 0.0, 0};
  o.stop_at_model_stop_ids = 1;
  *opts = o;
}

const char* og_stop_reason_name(og_stop_reason reason) {
  switch (reason) {
    case OG_STOP_NONE: return "none";
    case OG_STOP_TOKEN: return "stop_token";
    case OG_STOP_STRING: return "stop_string";
    case OG_STOP_MAX_TOKENS: return "max_new_tokens";
    case OG_STOP_CAPACITY: return "capacity";
    case OG_STOP_CANCELLED: return "cancelled";
  }
  return "unknown";
}

void og_generation_free(og_generation* g) {
  if (!g) return;
  og_tokens_free(&g->tokens);
  og_string_free(&g->text);
  std::free(g->logprobs);
  std::free(g->top_ids);
  std::free(g->top_logprobs);
  g->logprobs = nullptr;
  g->top_ids = nullptr;
  g->top_logprobs = nullptr;
  g->top_k = 0;
}

og_status og_session_new(og_model* model, const og_session_options* opts, og_session** out) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    auto core = model_core(model);
    need_generating(*core);
    og_session_options o;
    og_session_options_init(&o);
    // ABI 2's struct ended before the speculation fields: a program built then keeps their defaults.
    read_options(opts, &o, "og_session_options");
    auto s = std::make_unique<og_session>();
    s->core = core;
    s->setup.kind = o.kv_kind ? o.kv_kind : "sequence";
    if (s->setup.kind != "sequence" && s->setup.kind != "reference")
      api_fail(OG_ERR_INVALID_ARGUMENT, "kv_kind \"", s->setup.kind,
               "\" is not a one-sequence cache (sequence, reference); the engine uses the batched kinds");
    s->setup.storage_dtype = o.kv_dtype ? o.kv_dtype : "f16";
    KvDType dt;
    if (!kv_dtype_from_name(s->setup.storage_dtype, &dt))
      api_fail(OG_ERR_INVALID_ARGUMENT, "kv_dtype \"", s->setup.storage_dtype, "\" is not one of f32, f16, bf16, q8_0");
    if (o.kv_max_capacity < 0 || o.kv_max_capacity == 1)
      api_fail(OG_ERR_INVALID_ARGUMENT, "kv_max_capacity ", o.kv_max_capacity, " must be 0 (default) or at least 2");
    if (o.kv_initial_capacity < 1)
      api_fail(OG_ERR_INVALID_ARGUMENT, "kv_initial_capacity ", o.kv_initial_capacity, " must be at least 1");
    if (o.prefill_chunk_size < 0)
      api_fail(OG_ERR_INVALID_ARGUMENT, "prefill_chunk_size ", o.prefill_chunk_size, " is negative");
    s->setup.max_capacity = o.kv_max_capacity;
    s->setup.initial_capacity = o.kv_initial_capacity;
    s->setup.prefill_chunk_size = o.prefill_chunk_size;
    if (o.n_kv_windows > 0) need(o.kv_windows, "kv_windows");
    for (size_t i = 0; i < o.n_kv_windows; ++i) {
      if (o.kv_windows[i] < 0) api_fail(OG_ERR_INVALID_ARGUMENT, "kv_windows[", i, "] ", o.kv_windows[i], " is negative");
      s->setup.windows.push_back(o.kv_windows[i]);
    }
    try {
      s->policy = kv_policy_of(s->setup, core->run.model());
    } catch (const Error& e) {
      api_fail(OG_ERR_INVALID_ARGUMENT, e.what());
    }
    s->spec = session_spec_of({o.spec_ngram_size, o.spec_ngram_min, o.spec_draft_max, o.spec_draft_min,
                               o.draft_model, o.spec_draft_p_min},
                              *core, s->setup, s->policy);
    s->s = new_session(s.get());
    og_session* h = s.release();
    register_handle(h, Kind::kSession);
    *out = h;
  });
}

og_status og_session_free(og_session* session) {
  if (!session) return OG_OK;
  return guarded([&] {
    {
      std::lock_guard<std::mutex> lock(registry_mutex());
      if (!is_live_locked(session, Kind::kSession))
        api_fail(OG_ERR_INVALID_HANDLE, "the session handle is freed or not a session");
      if (session->busy.load()) api_fail(OG_ERR_BUSY, "the session is in use by another thread: cannot free it");
      unregister_locked(session);
    }
    if (session->stream && session->s->in_turn()) session->s->abort_turn();
    delete session;
  });
}

og_status og_session_fork(og_session* session, og_session** out) {
  return guarded([&] {
    SessionUse use(session);
    need(out, "out");
    *out = nullptr;
    no_stream(session);
    auto f = std::make_unique<og_session>();
    f->core = session->core;
    f->setup = session->setup;
    f->policy = session->policy;
    if (session->spec) f->spec = session_spec_copy(*session->spec);
    f->s = new_session(f.get());
    copy_history(*session->s, *f->s);  // the images whole, never their placeholder ids as text
    f->images = session->images;
    f->s->stats() = Stats{};
    f->undo_marks = session->undo_marks;
    if (!session->forked_logits.empty()) {
      f->forked_logits = session->forked_logits;
    } else if (session->have_logits) {
      auto l = session->s->logits();
      f->forked_logits.assign(l.begin(), l.end());
    }
    og_session* h2 = f.release();
    register_handle(h2, Kind::kSession);
    *out = h2;
  });
}

og_status og_session_prefill(og_session* session, const int32_t* tokens, size_t n, int want_logits) {
  return guarded([&] {
    SessionUse use(session);
    no_stream(session);
    check_prompt(session, tokens, n, false);
    if (n == 0 && !want_logits) return;
    if (n == 0 && session->s->position() == 0)
      api_fail(OG_ERR_STATE, "the history is empty: there is no row to take logits from");
    const int64_t mark = session->s->position();
    session->cancel.store(false);
    prefill_in_chunks(session, std::span<const int32_t>(tokens, n), want_logits != 0);
    if (n > 0) session->undo_marks.push_back(mark);
    logits_changed(session, want_logits != 0);
  });
}

og_status og_session_generate(og_session* session, const int32_t* prompt, size_t n, const og_generate_options* opts,
                              og_generation* out) {
  return guarded([&] {
    SessionUse use(session);
    need(out, "out");
    *out = og_generation{};
    no_stream(session);
    og_generate_options o;
    og_generate_options_init(&o);
    read_options(opts, &o, "og_generate_options");
    check_prompt(session, prompt, n, true);
    session->cancel.store(false);
    std::vector<std::string> stops;
    std::vector<TokenEvent> events;
    const GenerateOptions g = generate_options_of(session, o, &stops, &session->cancel, &events);
    Sampler sampler(sampler_config_of(o.sampler));
    const TextCallback on_text = text_callback_of(o, &session->cancel, nullptr);
    const int64_t mark = session->s->position();
    const TurnResult r = session->s->generate(std::span<const int32_t>(prompt, n), sampler, g, on_text);
    session->undo_marks.push_back(mark);
    logits_changed(session, !session->s->logits().empty());
    fill_generation(r, o, events, out);
  });
}

og_status og_session_stream_start(og_session* session, const int32_t* prompt, size_t n,
                                  const og_generate_options* opts) {
  return guarded([&] {
    SessionUse use(session);
    og_generate_options o;
    og_generate_options_init(&o);
    read_options(opts, &o, "og_generate_options");
    stream_start_held(session, prompt, n, o, nullptr);
  });
}

og_status og_session_stream_next(og_session* session, int32_t* token, const char** text, size_t* len, int* done) {
  return guarded([&] {
    SessionUse use(session);
    stream_next_held(session, token, text, len, done);
  });
}

og_status og_session_cancel(og_session* session) {
  return guarded([&] { request_cancel(session, false); });
}

og_status og_session_stream_cancel(og_session* session) {
  return guarded([&] { request_cancel(session, true); });
}

og_status og_session_stream_finish(og_session* session, og_generation* out) {
  return guarded([&] {
    SessionUse use(session);
    stream_finish_held(session, out);
  });
}

og_status og_session_logits(og_session* session, const float** logits, size_t* n_vocab) {
  return guarded([&] {
    SessionUse use(session);
    need(logits, "logits");
    need(n_vocab, "n_vocab");
    std::span<const float> src = session->forked_logits;
    if (src.empty()) {
      src = session->s->logits();
      const bool streaming_ok = session->stream && !src.empty() && !session->s->in_prefill();
      if ((!session->have_logits && !streaming_ok) || src.size() != static_cast<size_t>(session->core->n_vocab()))
        api_fail(OG_ERR_STATE, "the session has no logits: prefill with want_logits or generate first");
    }
    // One buffer for the session's lifetime, so that views of it (numpy) stay valid.
    if (session->logits_out.size() != src.size()) session->logits_out.resize(src.size());
    std::copy(src.begin(), src.end(), session->logits_out.begin());
    *logits = session->logits_out.data();
    *n_vocab = session->logits_out.size();
  });
}

og_status og_session_position(og_session* session, int64_t* position) {
  return guarded([&] {
    SessionUse use(session);
    need(position, "position");
    *position = session->s->position();
  });
}

og_status og_session_history(og_session* session, og_tokens* out) {
  return guarded([&] {
    SessionUse use(session);
    need(out, "out");
    *out = make_tokens(session->s->history());
  });
}

og_status og_session_capacity(og_session* session, int64_t* capacity) {
  return guarded([&] {
    SessionUse use(session);
    need(capacity, "capacity");
    *capacity = session->s->capacity();
  });
}

og_status og_session_rewind(og_session* session, int64_t length) {
  return guarded([&] {
    SessionUse use(session);
    no_stream(session);
    if (length < 0 || length > session->s->position())
      api_fail(OG_ERR_OUT_OF_RANGE, "cannot rewind to ", length, " tokens: the history holds ",
               session->s->position());
    for (const SessionImage& im : session->s->images())  // an image is kept or dropped whole
      if (im.span.begin < length && length < im.span.end())
        api_fail(OG_ERR_OUT_OF_RANGE, "cannot rewind to ", length, " tokens: position ", length,
                 " is inside an image (positions [", im.span.begin, ", ", im.span.end(), ")); rewind to ",
                 im.span.begin, " or ", im.span.end());
    session->s->rewind_to(length);
    auto& m = session->undo_marks;
    while (!m.empty() && m.back() >= length) m.pop_back();
    logits_changed(session, false);
  });
}

og_status og_session_undo(og_session* session) {
  return guarded([&] {
    SessionUse use(session);
    no_stream(session);
    if (session->undo_marks.empty()) api_fail(OG_ERR_STATE, "nothing to undo");
    const int64_t mark = session->undo_marks.back();
    session->s->rewind_to(mark);
    session->undo_marks.pop_back();
    logits_changed(session, false);
  });
}

og_status og_session_reset(og_session* session) {
  return guarded([&] {
    SessionUse use(session);
    no_stream(session);
    session->s->reset();
    session->undo_marks.clear();
    logits_changed(session, false);
  });
}

og_status og_session_get_stats(og_session* session, og_session_stats* out) {
  return guarded([&] {
    SessionUse use(session);
    need(out, "out");
    const Stats& st = session->s->stats();
    og_session_stats o{};
    o.prompt_tokens = st.prompt_tokens;
    o.generated_tokens = st.generated_tokens;
    o.decode_steps = st.decode_steps;
    o.recomputed_tokens = st.recomputed_tokens;
    o.ttft_s = st.ttft_s;
    o.prefill_s = st.prefill_s;
    o.decode_s = st.decode_s;
    o.sampling_s = st.sampling_s;
    o.cache_positions = session->s->cached();
    o.cache_capacity = session->s->capacity();
    o.cache_bytes_allocated = session->s->cache().memory().allocated();
    *out = o;
  });
}

og_status og_session_spec_stats(og_session* session, og_spec_stats* out) {
  return guarded([&] {
    SessionUse use(session);
    write_spec_stats(session->spec ? session_spec_counts(*session->spec) : SpecCounts{}, out);
  });
}

}  // extern "C"
