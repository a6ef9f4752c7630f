// The C API's engine (offgraph.h): the scheduler on a thread of its own over
// one shared batched cache; each request's tokens, text and finish are queued
// as events that og_engine_next hands out, so any thread may submit, read,
// cancel and take a stats snapshot.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <unordered_map>

#include "api/c_api_internal.h"
#include "api/c_api_spec.h"
#include "kv/kv_types.h"
#include "runtime/generation_limits.h"
#include "runtime/scheduler.h"

namespace og::capi {
namespace {

struct Event {
  og_event_kind kind = OG_EVENT_NONE;
  int32_t token = -1;
  std::string text;  // TEXT: the piece; FINISHED: the message
  RequestReport report;
};

struct RequestState {
  std::deque<Event> events;
  Event current;  // the event last handed out (its text stays valid)
};

// The finished request this thread read last (keeps its message alive).
thread_local std::shared_ptr<RequestState> t_finished;

og_finish_reason finish_of(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return OG_FINISH_STOP;
    case FinishReason::kLength: return OG_FINISH_LENGTH;
    case FinishReason::kCancelled: return OG_FINISH_CANCELLED;
    case FinishReason::kRefused: return OG_FINISH_REFUSED;
    case FinishReason::kFailed: return OG_FINISH_FAILED;
  }
  return OG_FINISH_FAILED;
}

}  // namespace

// Shared by the handle and the calls in flight; the scheduler is destroyed
// first (declared last), while the model and the event queues still exist.
struct EngineCore {
  std::shared_ptr<ModelCore> model;
  // og_engine_options.draft_model's weights and the draft's cache (read by the scheduler).
  std::shared_ptr<ModelCore> draft_model;
  std::unique_ptr<KvCache> draft_cache;
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<uint64_t, std::shared_ptr<RequestState>> requests;
  std::unique_ptr<Scheduler> sched;

  ~EngineCore() { sched.reset(); }

  void push(const std::shared_ptr<RequestState>& r, Event ev) {
    {
      std::lock_guard<std::mutex> lock(mu);
      r->events.push_back(std::move(ev));
    }
    cv.notify_all();
  }
};

}  // namespace og::capi

struct og_engine {
  std::shared_ptr<og::capi::EngineCore> core;
};

using namespace og;
using namespace og::capi;

namespace {

std::shared_ptr<EngineCore> engine_core(const og_engine* e) {
  if (!e) api_fail(OG_ERR_INVALID_HANDLE, "the engine handle is NULL");
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (!is_live_locked(e, Kind::kEngine)) api_fail(OG_ERR_INVALID_HANDLE, "the engine handle is freed or not an engine");
  return e->core;
}

}  // namespace

extern "C" {

void og_engine_options_init(og_engine_options* opts) {
  namespace d = engine_defaults;  // runtime/generation_limits.h: the scheduler's and Python's too
  if (opts)
    *opts = og_engine_options{sizeof(og_engine_options), d::kMaxSequences, d::kMaxSessionTokens, d::kStepTokens, 0, 0,
                              "batched-sequence", "f16"};
  if (opts) {
    opts->spec_ngram_size = 0;  // no speculation
    opts->spec_ngram_min = 1;
    opts->spec_draft_max = 4;
    opts->spec_draft_min = 0;
    opts->draft_model = nullptr;
    opts->spec_draft_p_min = 0.75;
  }
}

namespace {

// og_engine_options' speculation fields, checked (OG_ERR_INVALID_ARGUMENT naming the field).
SchedulerSpec spec_of(const og_engine_options& o) {
  const SpecFields f{o.spec_ngram_size, o.spec_ngram_min, o.spec_draft_max, o.spec_draft_min, o.draft_model,
                     o.spec_draft_p_min};
  check_spec_fields(f);
  SchedulerSpec s;
  if (!f.on()) return s;
  s.ngram = f.ngram_size > 0;  // else the draft's engine and cache are set once the target is checked
  s.ngram_max = f.ngram_size;
  s.ngram_min = f.ngram_min;
  s.draft_max = f.draft_max;
  s.draft_min = f.draft_min;
  s.draft_p_min = f.draft_p_min;
  return s;
}

// The draft model of og_engine_options, checked against the target's vocabulary
// (as --model-draft is), with a cache of the target's kind and dtype holding a
// sequence per running request, in the draft's own windows.
void attach_draft(EngineCore& core, og_model* draft, const CacheSetup& target, const SchedulerOptions& so,
                  SchedulerSpec* spec) {
  std::shared_ptr<ModelCore> dc = draft_core_of(draft, *core.model);
  CacheSetup cs = target;
  cs.windows.clear();
  cs.max_sequences = so.max_decode_sequences;
  KvPolicy policy;
  try {
    policy = kv_policy_of(cs, dc->run.model());
  } catch (const Error& e) {
    api_fail(OG_ERR_INVALID_ARGUMENT, "draft_model: ", e.what());
  }
  core.draft_cache = cache_of(cs, dc->run.model(), policy,
                              "og_engine_options.max_sequences or max_session_tokens (the draft's cache)");
  core.draft_model = dc;
  spec->ngram = false;
  spec->draft_engine = dc->engine.get();
  spec->draft_cache = core.draft_cache.get();
  spec->draft_tok = &dc->tok();
}

}  // namespace

og_status og_engine_new(og_model* model, const og_engine_options* opts, og_engine** out) {
  return guarded([&] {
    need(out, "out");
    *out = nullptr;
    auto mc = model_core(model);
    need_generating(*mc);
    og_engine_options o;
    og_engine_options_init(&o);
    // ABI 2's struct ended before the speculation fields: a program built then keeps their defaults.
    read_options(opts, &o, "og_engine_options");
    if (o.max_sequences < 1 || o.max_sequences > 4096)
      api_fail(OG_ERR_INVALID_ARGUMENT, "max_sequences ", o.max_sequences, " is outside [1, 4096]");
    if (o.max_session_tokens < 2)
      api_fail(OG_ERR_INVALID_ARGUMENT, "max_session_tokens ", o.max_session_tokens,
               " must be at least 2 (a prompt token and a reply token)");
    if (o.step_tokens < o.max_sequences)
      api_fail(OG_ERR_INVALID_ARGUMENT, "step_tokens ", o.step_tokens, " is below max_sequences ", o.max_sequences,
               ": a step must carry every running request's decode row");
    if (o.max_queue < 0) api_fail(OG_ERR_INVALID_ARGUMENT, "max_queue ", o.max_queue, " is negative");
    if (o.prefix_cache_entries < 0 || o.prefix_cache_entries > 4096)
      api_fail(OG_ERR_INVALID_ARGUMENT, "prefix_cache_entries ", o.prefix_cache_entries, " is outside [0, 4096]");
    SchedulerSpec spec = spec_of(o);
    CacheSetup setup;
    setup.kind = o.kv_kind ? o.kv_kind : "batched-sequence";
    if (setup.kind != "batched-sequence" && setup.kind != "batched-cell")
      api_fail(OG_ERR_INVALID_ARGUMENT, "kv_kind \"", setup.kind, "\" is not one of batched-sequence, batched-cell");
    setup.storage_dtype = o.kv_dtype ? o.kv_dtype : "f16";
    KvDType dt;
    if (!kv_dtype_from_name(setup.storage_dtype, &dt))
      api_fail(OG_ERR_INVALID_ARGUMENT, "kv_dtype \"", setup.storage_dtype, "\" is not one of f32, f16, bf16, q8_0");
    setup.max_capacity = o.max_session_tokens;
    setup.max_sequences = o.max_sequences + o.prefix_cache_entries;
    KvPolicy policy;
    try {
      policy = kv_policy_of(setup, mc->run.model());
    } catch (const Error& e) {
      api_fail(OG_ERR_INVALID_ARGUMENT, e.what());
    }
    SchedulerOptions so;
    so.max_session_tokens = o.max_session_tokens;
    so.max_decode_sequences = o.max_sequences;
    so.step_tokens = o.step_tokens;
    so.max_queue = o.max_queue;
    so.prefix_cache_entries = o.prefix_cache_entries;
    auto core = std::make_shared<EngineCore>();
    core->model = mc;
    if (o.draft_model) attach_draft(*core, o.draft_model, setup, so, &spec);
    so.spec = spec;
    core->sched = std::make_unique<Scheduler>(*mc->engine, mc->tok(), cache_of(setup, mc->run.model(), policy,
                                                             "og_engine_options.max_sequences, max_session_tokens or prefix_cache_entries"),
                                             so);
    core->sched->start();
    auto* e = new og_engine{std::move(core)};
    register_handle(e, Kind::kEngine);
    *out = e;
  });
}

og_status og_engine_free(og_engine* engine) {
  if (!engine) return OG_OK;
  return guarded([&] {
    {
      std::lock_guard<std::mutex> lock(registry_mutex());
      if (!is_live_locked(engine, Kind::kEngine))
        api_fail(OG_ERR_INVALID_HANDLE, "the engine handle is freed or not an engine");
      unregister_locked(engine);
    }
    // Every request finishes (as cancelled), which wakes the readers waiting on it.
    engine->core->sched->shutdown(0.0);
    delete engine;
  });
}

og_status og_engine_submit(og_engine* engine, const int32_t* prompt, size_t n, const og_generate_options* opts,
                           uint64_t* id) {
  return guarded([&] {
    auto core = engine_core(engine);
    need(id, "id");
    *id = 0;
    og_generate_options o;
    og_generate_options_init(&o);
    read_options(opts, &o, "og_generate_options");
    check_generate_options(o);
    if (o.logprobs != 0 || o.top_logprobs > 0)
      api_fail(OG_ERR_INVALID_ARGUMENT, "logprobs are returned by sessions (og_session_generate, og_session_stream_*), "
                                        "not by the engine");
    if (n == 0) api_fail(OG_ERR_INVALID_ARGUMENT, "the prompt is empty");
    check_ids(prompt, n, core->model->n_vocab(), "prompt");
    RequestOptions r;
    r.prompt.assign(prompt, prompt + n);
    r.max_new_tokens = o.max_new_tokens;
    r.sampler = sampler_config_of(o.sampler);
    if (o.stop_at_model_stop_ids) r.stop_ids = core->model->run.loaded.stop_ids;
    for (size_t i = 0; i < o.n_stop_strings; ++i) r.stop_strings.push_back(o.stop_strings[i]);
    auto state = std::make_shared<RequestState>();
    EngineCore* c = core.get();
    RequestCallbacks cb;
    cb.on_token = [c, state](const TokenEvent& ev) {
      Event e;
      e.kind = OG_EVENT_TOKEN;
      e.token = ev.id;
      c->push(state, std::move(e));
    };
    cb.on_text = [c, state](std::string_view piece) {
      Event e;
      e.kind = OG_EVENT_TEXT;
      e.text = std::string(piece);
      c->push(state, std::move(e));
    };
    cb.on_finish = [c, state](const RequestReport& rep) {
      Event e;
      e.kind = OG_EVENT_FINISHED;
      e.text = rep.message;
      e.report = rep;
      c->push(state, std::move(e));
    };
    // Events that arrive before the id is recorded wait in `state` (a refusal
    // may finish the request inside submit); no reader knows the id before.
    const uint64_t rid = core->sched->submit(std::move(r), std::move(cb));
    std::lock_guard<std::mutex> lock(c->mu);
    c->requests[rid] = state;
    *id = rid;
  });
}

og_status og_engine_next(og_engine* engine, uint64_t id, int32_t timeout_ms, og_event* out) {
  return guarded([&] {
    auto core = engine_core(engine);
    need(out, "out");
    *out = og_event{};
    std::unique_lock<std::mutex> lock(core->mu);
    auto it = core->requests.find(id);
    if (it == core->requests.end())
      api_fail(OG_ERR_INVALID_ARGUMENT, "unknown request id ", id, " (never submitted, or its finish was read)");
    std::shared_ptr<RequestState> st = it->second;
    auto ready = [&] { return !st->events.empty(); };
    if (timeout_ms < 0) core->cv.wait(lock, ready);
    else core->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
    if (st->events.empty()) return;  // OG_EVENT_NONE
    st->current = std::move(st->events.front());
    st->events.pop_front();
    const Event& e = st->current;
    out->kind = e.kind;
    out->token = e.token;
    out->text = e.text.c_str();
    out->len = e.text.size();
    if (e.kind == OG_EVENT_FINISHED) {
      out->finish_reason = finish_of(e.report.reason);
      out->prompt_tokens = e.report.prompt_tokens;
      out->cached_tokens = e.report.cached_tokens;
      out->generated_tokens = e.report.generated_tokens;
      // Forgotten; its message stays valid until this thread's next call.
      t_finished = st;
      core->requests.erase(id);
    }
  });
}

og_status og_engine_cancel(og_engine* engine, uint64_t id) {
  return guarded([&] {
    auto core = engine_core(engine);
    core->sched->cancel(id);
  });
}

const char* og_finish_reason_name(og_finish_reason reason) {
  switch (reason) {
    case OG_FINISH_STOP: return "stop";
    case OG_FINISH_LENGTH: return "length";
    case OG_FINISH_CANCELLED: return "cancelled";
    case OG_FINISH_REFUSED: return "refused";
    case OG_FINISH_FAILED: return "failed";
  }
  return "unknown";
}

og_status og_engine_get_stats(og_engine* engine, og_engine_stats* out) {
  return guarded([&] {
    auto core = engine_core(engine);
    need(out, "out");
    const SchedulerSnapshot s = core->sched->snapshot();
    og_engine_stats o{};
    o.waiting = s.waiting;
    o.running = s.running;
    o.peak_running = s.peak_running;
    o.kv_cache_usage = s.kv_cache_usage;
    o.steps = s.steps;
    o.rows = s.rows;
    o.decode_rows = s.decode_rows;
    o.prompt_tokens = s.prompt_tokens;
    o.generated_tokens = s.generated_tokens;
    o.prefix_lookups = s.prefix_lookups;
    o.prefix_hits = s.prefix_hits;
    o.prefix_hit_tokens = s.prefix_hit_tokens;
    o.cache_bytes_allocated = s.cache_bytes_allocated;
    o.peak_cache_bytes = s.peak_cache_bytes;
    o.finished = s.finished;
    o.cancelled = s.cancelled;
    o.refused = s.refused;
    o.failed = s.failed;
    *out = o;
  });
}

og_status og_engine_spec_stats(og_engine* engine, og_spec_stats* out) {
  return guarded([&] {
    auto core = engine_core(engine);
    need(out, "out");
    const SchedulerSnapshot s = core->sched->snapshot();
    SpecCounts c;
    c.drafts = s.spec_drafts;
    c.draft_tokens = s.spec_draft_tokens;
    c.accepted_tokens = s.spec_accepted_tokens;
    c.pauses = s.spec_pauses;
    c.accepted_per_pos = s.spec_accepted_per_pos;
    write_spec_stats(c, out);
  });
}

}  // extern "C"
