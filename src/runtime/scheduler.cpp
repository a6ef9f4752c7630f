// Scheduler: submission and cancellation from any thread, the step (admission,
// one batched forward, sampling, forking a group's choices, finishing), the
// background thread and shutdown.
#include "runtime/scheduler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/error.h"
#include "base/timer.h"
#include "runtime/prefix_cache.h"
#include "runtime/token_ids.h"
#include "runtime/scheduler_images.h"
#include "runtime/spec/draft_model.h"
#include "runtime/spec/ngram.h"
#include "runtime/spec/throttle.h"

namespace og {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kRefused: return "refused";
    case FinishReason::kFailed: return "failed";
  }
  return "?";
}

namespace {

constexpr int kPrefixFirstSeq = 1 << 20;  // entries' sequence ids; sessions use 1..max_decode_sequences

// What the choices of one request share (stepping thread only).
struct Group {
  int unfinished = 1;  // choices whose on_finish has not come
  bool abnormal = false;
  FinishReason outcome = FinishReason::kStop;  // abnormal: the first such reason of a choice
};

// One choice of a request. A request of n choices is one Request (choice 0,
// the leader) until its prompt is prefilled; then the leader is forked into
// n - 1 more, each its own Request with the same id and cancel flag.
struct Request {
  uint64_t id = 0;
  int choice = 0;
  RequestOptions opts;
  RequestCallbacks cb;
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<Group> group = std::make_shared<Group>();
  // The leader, until the fork: the callbacks of choices 1 .. n-1, and (once
  // admitted) the session slots reserved for them.
  std::vector<RequestCallbacks> forks;
  std::vector<int> reserved;
  std::string refuse;  // set at submit: refused before it ever waits
  Timer since_submit;
  double admitted_at = -1, prefilled_at = -1, first_token_at = -1;
  // Running state (stepping thread only).
  int seq = -1;
  int64_t cached_tokens = 0;
  bool captured = false;
  std::unique_ptr<Sampler> sampler;
  GenerateOptions gen;
  TextCallback on_text;
  std::unique_ptr<Session> session;
  // Speculation: this choice's own proposer (gen.spec points at it), its
  // fallback rule, and the draft the current step verifies (empty: a plain row).
  std::unique_ptr<SpecProposer> proposer;
  SpecThrottle throttle;
  Draft draft;
  // Waiting: the read of its prompt's blocks from the disk tier, started
  // ahead of its admission (none: nothing to read).
  std::shared_ptr<DiskRead> disk_read;
  bool disk_asked = false;
  Timer disk_wait;

  ~Request() {
    if (disk_read) disk_read->cancel();  // a request that left needs none of it
  }
};

constexpr double kIdleDiskDrainS = 60;  // run_until_idle's bound on waiting for disk writes
constexpr double kHeadDiskPollS = 0.005;  // a step with nothing running waits this long for the head's read

FinishReason finish_of(StopReason r) {
  switch (r) {
    case StopReason::kStopToken:
    case StopReason::kStopString: return FinishReason::kStop;
    case StopReason::kMaxTokens:
    case StopReason::kCapacity: return FinishReason::kLength;
    case StopReason::kNone:
    case StopReason::kInterrupted: break;
  }
  return FinishReason::kCancelled;
}

}  // namespace

struct Scheduler::Impl {
  Impl(Engine& e, const Tokenizer& t, std::unique_ptr<KvCache> c, const SchedulerOptions& o)
      : engine(e), tok(t), cache(std::move(c)), opts(o),
        prefix(*cache, prefix_options(o, e)) {
    // The disk worker wakes the stepping thread to pass on a finished read or its events.
    if (PrefixDiskWorker* d = prefix.disk())
      d->set_notify([this] {
        {
          std::lock_guard<std::mutex> lk(mu);
          disk_news = true;
        }
        wake.notify_all();
      });
  }
  ~Impl() {
    if (PrefixDiskWorker* d = prefix.disk()) d->set_notify(nullptr);  // before mu and wake go
  }

  static PrefixCacheOptions prefix_options(const SchedulerOptions& o, const Engine& e) {
    PrefixCacheOptions p;
    p.max_entries = o.prefix_cache_entries;
    p.max_bytes = o.prefix_cache_bytes;
    p.first_seq = kPrefixFirstSeq;
    p.block_size = o.prefix_block_size;
    p.hash_seed = o.prefix_hash_seed;
    p.events = static_cast<bool>(o.kv_events);
    p.disk = o.prefix_disk;
    if (!p.disk.dir.empty()) p.disk.model_fingerprint = e.model_fingerprint();
    return p;
  }

  // Hands the prefix cache's KV events to the sink, if any.
  void flush_kv_events() {
    if (!opts.kv_events) return;
    std::vector<KvEvent> ev = prefix.take_events();
    if (!ev.empty()) opts.kv_events(std::move(ev));
  }

  Engine& engine;
  const Tokenizer& tok;
  std::unique_ptr<KvCache> cache;
  SchedulerOptions opts;
  PrefixCache prefix;

  // Shared with submitting threads (under mu).
  mutable std::mutex mu;
  std::condition_variable wake;      // work arrived or stop requested
  std::condition_variable idle_cv;   // the stepping thread went idle
  std::deque<std::unique_ptr<Request>> incoming;
  std::unordered_map<uint64_t, std::shared_ptr<std::atomic<bool>>> live;  // id -> cancel flag
  uint64_t next_id = 1;
  bool accepting = true;
  bool cancel_all = false;
  bool stop_thread = false;
  bool idle = true;
  bool disk_news = false;  // the disk worker finished a read or has events
  SchedulerSnapshot snap;

  // Stepping thread only.
  std::deque<std::unique_ptr<Request>> waiting;
  std::vector<std::unique_ptr<Request>> running;
  std::vector<int> free_seqs;
  std::vector<float> logits;
  std::thread thread;
  bool wrote_back = false;  // shutdown's write-back of the prefix cache to disk is done

  // Ends a choice: its turn (a finished turn gives the reason itself, else
  // `reason`), its cache sequence, the counters, then on_finish; a leader's
  // choices not forked yet end with it.
  void finish(std::unique_ptr<Request> req, FinishReason reason, const std::string& message);
  std::unique_ptr<Request> take_running(size_t i);
  // Counts a choice's end; the request's when it is the last (under mu).
  void count_finish(const Request& r, const RequestReport& rep);
  void capture_reply(const Request& r, const std::vector<int32_t>& reply);
  void take_incoming();
  void handle_cancellations();
  void admit();
  bool admit_one(Request& r);
  // Starts the read of r's blocks from the disk tier, once.
  void start_disk_read(Request& r);
  // r's read is over, or has had its time (then r takes what was read).
  bool disk_ready(const Request& r) const;
  // The session, sampler and callbacks of a choice whose sequence holds the
  // prompt's first `head` tokens.
  void start_session(Request& r, int64_t head);
  // Forks a leader whose cache holds exactly its prompt into its other
  // choices, each sampling its first token from `row` (the prompt's last
  // logits); they join `running`. Choices that fail go to *failed.
  void fork_choices(Request& lead, const float* row, std::vector<Request*>* failed, std::vector<std::string>* why);
  bool forward_step();
  void publish();
  // Speculation: sets r.draft for this step (at most max_tokens; empty: a
  // plain decode row). False when the proposer failed (r joins *failed).
  bool plan_draft(Request& r, int64_t max_tokens, std::vector<std::pair<Request*, std::string>>* failed);
  // Slot `seq`'s draft-model proposer over an emptied sequence of the draft cache.
  std::unique_ptr<SpecProposer> draft_proposer(int seq);
  // A verify step's outcome: the fallback rule and the counters.
  void count_verify(Request& r, int64_t accepted);
  // Ends the running requests named, as failed with their reasons.
  void fail_all(const std::vector<std::pair<Request*, std::string>>& failed);
};

void Scheduler::Impl::finish(std::unique_ptr<Request> req, FinishReason reason, const std::string& message) {
  Request& r = *req;
  RequestReport rep;
  rep.id = r.id;
  rep.choice = r.choice;
  rep.reason = reason;
  rep.message = message;
  rep.prompt_tokens = static_cast<int64_t>(r.opts.prompt.size());
  rep.cached_tokens = r.cached_tokens;
  if (r.session && r.session->in_turn()) {
    if (!r.session->turn_done()) r.session->stop_turn();  // cancelled: keeps what was generated
    TurnResult t = r.session->end_turn();
    if (reason == FinishReason::kStop) rep.reason = finish_of(t.reason);
    rep.stop_string = t.stop_string;
    rep.stop_token = t.stop_token;
    rep.tokens = std::move(t.tokens);
    rep.generated_tokens = static_cast<int64_t>(rep.tokens.size());
    r.session.reset();
  }
  // A finished reply's KV joins the prefix cache with its prompt's (vLLM keeps
  // a request's full blocks, generated ones included): the next turn of a
  // chat, whose prompt repeats this one and its reply, starts from it. Not
  // with ring layers: there the longer entry cannot stand for the prompt's,
  // and would only push prompts out.
  if (reason == FinishReason::kStop && r.choice == 0 && r.captured && r.seq >= 0 && !prefix.has_ring())
    capture_reply(r, rep.tokens);
  if (r.seq >= 0) {
    cache->remove_sequence(r.seq);  // refused (harmlessly) when a failed fork never created it
    free_seqs.push_back(r.seq);
    r.seq = -1;
  }
  for (int s : r.reserved) free_seqs.push_back(s);
  r.reserved.clear();
  const double now = r.since_submit.seconds();
  rep.total_s = now;
  rep.queue_s = r.admitted_at >= 0 ? r.admitted_at : now;
  if (r.admitted_at >= 0) rep.prefill_s = (r.prefilled_at >= 0 ? r.prefilled_at : now) - r.admitted_at;
  if (r.first_token_at >= 0) {
    rep.ttft_s = r.first_token_at;
    rep.decode_s = now - r.first_token_at;
  }
  count_finish(r, rep);
  if (r.cb.on_finish) r.cb.on_finish(rep);
  // Choices a leader had not forked yet end with it, for the same reason.
  std::vector<RequestCallbacks> forks = std::move(r.forks);
  r.forks.clear();
  for (size_t i = 0; i < forks.size(); ++i) {
    RequestReport c;
    c.id = r.id;
    c.choice = static_cast<int>(i) + 1;
    c.reason = rep.reason;
    c.message = rep.message;
    c.prompt_tokens = rep.prompt_tokens;
    c.cached_tokens = rep.cached_tokens;
    c.queue_s = rep.queue_s;
    c.prefill_s = rep.prefill_s;
    c.total_s = rep.total_s;
    count_finish(r, c);
    if (forks[i].on_finish) forks[i].on_finish(c);
  }
}

void Scheduler::Impl::capture_reply(const Request& r, const std::vector<int32_t>& reply) {
  const int64_t n_prompt = static_cast<int64_t>(r.opts.prompt.size());
  // The sequence holds the prompt and every sampled token but the last (never forwarded).
  const int64_t held = cache->length(r.seq);
  if (held <= n_prompt || held > n_prompt + static_cast<int64_t>(reply.size())) return;
  std::vector<int32_t> all(r.opts.prompt);
  all.insert(all.end(), reply.begin(), reply.begin() + (held - n_prompt));
  prefix.capture(r.seq, all, r.opts.cache_salt, sched_images::spans(r.opts));
}

void Scheduler::Impl::count_finish(const Request& r, const RequestReport& rep) {
  Group& g = *r.group;
  const bool normal = rep.reason == FinishReason::kStop || rep.reason == FinishReason::kLength;
  if (!normal && !g.abnormal) {
    g.abnormal = true;
    g.outcome = rep.reason;
  }
  std::lock_guard<std::mutex> lk(mu);
  snap.generated_tokens += rep.generated_tokens;
  if (--g.unfinished > 0) return;
  live.erase(r.id);  // cancel(id) is ignored from now on
  switch (g.outcome) {
    case FinishReason::kStop:
    case FinishReason::kLength: ++snap.finished; break;
    case FinishReason::kCancelled: ++snap.cancelled; break;
    case FinishReason::kRefused: ++snap.refused; break;
    case FinishReason::kFailed: ++snap.failed; break;
  }
}

void Scheduler::Impl::take_incoming() {
  std::deque<std::unique_ptr<Request>> got;
  {
    std::lock_guard<std::mutex> lk(mu);
    got.swap(incoming);
  }
  for (auto& r : got) {
    if (!r->refuse.empty()) {
      const std::string why = r->refuse;
      finish(std::move(r), FinishReason::kRefused, why);
    } else {
      waiting.push_back(std::move(r));
    }
  }
}

void Scheduler::Impl::handle_cancellations() {
  bool all;
  {
    std::lock_guard<std::mutex> lk(mu);
    all = cancel_all;
  }
  for (size_t i = 0; i < waiting.size();) {
    if (all || waiting[i]->cancel->load()) {
      std::unique_ptr<Request> r = std::move(waiting[i]);
      waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
      finish(std::move(r), FinishReason::kCancelled, all ? "the server is shutting down" : "cancelled");
    } else {
      ++i;
    }
  }
  for (size_t i = 0; i < running.size();) {
    if (all || running[i]->cancel->load()) {
      finish(take_running(i), FinishReason::kCancelled, all ? "the server is shutting down" : "cancelled");
    } else {
      ++i;
    }
  }
}

// Gives the request a sequence (from the prefix cache when it has a match)
// and the slots of its other choices, and starts its session's turn. Throws
// og::Error when the cache refuses.
bool Scheduler::Impl::admit_one(Request& r) {
  r.seq = free_seqs.back();
  free_seqs.pop_back();
  for (size_t i = 0; i < r.forks.size(); ++i) {
    r.reserved.push_back(free_seqs.back());
    free_seqs.pop_back();
  }
  r.admitted_at = r.since_submit.seconds();
  const std::vector<int32_t>& prompt = r.opts.prompt;
  const int64_t n = static_cast<int64_t>(prompt.size());
  // Prompt logprobs need every prompt row forwarded: no prefix is taken.
  if (r.opts.use_prefix_cache && !r.opts.prompt_logprobs)
    r.cached_tokens =
        prefix.fork_into(prompt, n - 1, r.seq, r.opts.cache_salt, r.disk_read.get(), sched_images::spans(r.opts));
  r.disk_read.reset();
  if (r.cached_tokens == 0) {
    const KvResult kr = cache->add_sequence(r.seq);
    if (!kr.ok()) throw Error("cannot add a cache sequence: " + kr.message);
  }
  start_session(r, r.cached_tokens);
  // Images past the hit join the history pending; the turn's prompt is what follows the last.
  const int64_t turn_from = sched_images::append_pending(*r.session, r.opts, r.cached_tokens);
  r.session->begin_turn(std::span<const int32_t>(prompt).subspan(turn_from), *r.sampler, r.gen, r.on_text);
  return true;
}

void Scheduler::Impl::start_session(Request& r, int64_t head_tokens) {
  const std::vector<int32_t>& prompt = r.opts.prompt;
  std::vector<int32_t> head(prompt.begin(), prompt.begin() + head_tokens);
  r.session = std::make_unique<Session>(engine, *cache, r.seq, tok, std::move(head),
                                       sched_images::head_images(r.opts, head_tokens));
  r.sampler = std::make_unique<Sampler>(r.opts.sampler);
  r.gen.max_new_tokens = r.opts.max_new_tokens;
  r.gen.stop_ids = r.opts.stop_ids;
  r.gen.stop_strings = r.opts.stop_strings;
  r.gen.logprobs = r.opts.logprobs;
  r.gen.top_logprobs = r.opts.top_logprobs;
  r.gen.special_text = r.opts.special_text;
  r.gen.grammar = r.opts.grammar;
  const SchedulerSpec& sp = opts.spec;
  if (sp.on() && r.opts.speculate) {
    r.proposer = sp.ngram ? std::unique_ptr<SpecProposer>(std::make_unique<NgramProposer>(sp.ngram_max, sp.ngram_min))
                          : draft_proposer(r.seq);
    r.gen.spec.proposer = r.proposer.get();
    r.gen.spec.draft_max = sp.draft_max;
    r.gen.spec.draft_min = sp.draft_min;
  }
  Request* self = &r;
  r.gen.on_token = [self](const TokenEvent& ev) {
    if (self->first_token_at < 0) self->first_token_at = self->since_submit.seconds();
    if (self->cb.on_token) self->cb.on_token(ev);
  };
  if (r.opts.prompt_logprobs)
    r.gen.on_prompt_token = [self](const TokenEvent& ev) {
      if (self->cb.on_prompt_token) self->cb.on_prompt_token(ev);
    };
  r.on_text = [self](std::string_view piece) {
    if (self->cb.on_text) self->cb.on_text(piece);
  };
}

void Scheduler::Impl::fork_choices(Request& lead, const float* row, std::vector<Request*>* failed,
                                   std::vector<std::string>* why) {
  const int64_t n_prompt = static_cast<int64_t>(lead.opts.prompt.size());
  const std::span<const float> logits(row, static_cast<size_t>(engine.n_vocab()));
  std::vector<RequestCallbacks> forks = std::move(lead.forks);
  std::vector<int> seqs = std::move(lead.reserved);
  lead.forks.clear();
  lead.reserved.clear();
  for (size_t i = 0; i < forks.size(); ++i) {
    auto c = std::make_unique<Request>();
    Request& r = *c;
    r.id = lead.id;
    r.choice = static_cast<int>(i) + 1;
    r.opts = lead.opts;
    r.opts.sampler.seed = lead.opts.sampler.seed + static_cast<uint64_t>(r.choice);  // wraps like any uint64_t
    r.cb = std::move(forks[i]);
    r.cancel = lead.cancel;
    r.group = lead.group;
    r.since_submit = lead.since_submit;
    r.admitted_at = lead.admitted_at;
    r.prefilled_at = lead.prefilled_at;
    r.cached_tokens = lead.cached_tokens;
    r.captured = true;
    r.seq = seqs[i];
    running.push_back(std::move(c));
    try {
      const KvResult kr = cache->fork(lead.seq, r.seq, n_prompt);
      if (!kr.ok()) throw Error("cannot fork the prompt's cache for choice " + std::to_string(r.choice) + ": " + kr.message);
      start_session(r, n_prompt);
      r.session->begin_turn_with_logits(logits, *r.sampler, r.gen, r.on_text);
    } catch (const Error& e) {
      failed->push_back(&r);
      why->push_back(e.what());
    }
  }
}

void Scheduler::Impl::start_disk_read(Request& r) {
  if (r.disk_asked) return;
  r.disk_asked = true;
  if (!r.opts.use_prefix_cache || r.opts.prompt_logprobs) return;
  r.disk_read = prefix.read_from_disk(r.opts.prompt, static_cast<int64_t>(r.opts.prompt.size()) - 1, r.opts.cache_salt,
                                      sched_images::spans(r.opts));
  r.disk_wait.reset();
}

bool Scheduler::Impl::disk_ready(const Request& r) const {
  return !r.disk_read || r.disk_read->done() || r.disk_wait.seconds() >= opts.prefix_disk.read_wait_s;
}

void Scheduler::Impl::admit() {
  // The disk reads of the requests the free sessions could take start ahead
  // of their turn, on the disk worker.
  size_t slots = free_seqs.size();
  for (auto& r : waiting) {
    const size_t need = 1 + r->forks.size();
    if (need > slots) break;
    slots -= need;
    start_disk_read(*r);
  }
  // FIFO: the head waits until its choices' session slots are free and its
  // blocks are read from disk (running sessions step on meanwhile); nobody overtakes it.
  while (!waiting.empty() && free_seqs.size() >= 1 + waiting.front()->forks.size() &&
         disk_ready(*waiting.front())) {
    std::unique_ptr<Request> r = std::move(waiting.front());
    waiting.pop_front();
    try {
      admit_one(*r);
      running.push_back(std::move(r));
    } catch (const Error& e) {
      r->session.reset();
      finish(std::move(r), FinishReason::kFailed, e.what());
    }
  }
}

// One forward over every running session's rows: decode rows first, then
// prefill chunks of sessions in admission order while the token budget lasts
// and, when max_prefills_per_step > 0, of at most that many sessions.
bool Scheduler::Impl::forward_step() {
  if (running.empty()) return false;
  struct Part {
    Request* r;
    size_t first_row;
    int64_t n;
    bool prefill;  // prompt rows (known before the forward moves the cache on)
  };
  Batch batch;
  std::vector<Part> parts;
  int64_t budget = opts.step_tokens;
  int64_t decode_rows = 0, prefill_rows = 0;
  // Decoding sessions still to place: each keeps a row of the budget, so a
  // draft only takes what is left over.
  int64_t decoders = 0;
  for (auto& r : running) decoders += r->session->in_prefill() || r->session->turn_done() ? 0 : 1;
  std::vector<std::pair<Request*, std::string>> spec_failed;
  for (auto& r : running) {
    if (r->session->in_prefill() || budget < 1) continue;
    const size_t first = batch.rows.size();
    if (decoders > 0) --decoders;
    if (!plan_draft(*r, budget - 1 - decoders, &spec_failed)) continue;
    const int64_t n = r->draft.tokens.empty() ? r->session->add_rows(batch, 1)
                                              : r->session->add_verify_rows(batch, r->draft);
    if (n > 0) parts.push_back({r.get(), first, n, false});
    budget -= n;
    decode_rows += n;
  }
  fail_all(spec_failed);
  int prefills = 0;
  for (auto& r : running) {
    if (!r->session->in_prefill() || budget < 1) continue;
    if (opts.max_prefills_per_step > 0 && prefills >= opts.max_prefills_per_step) break;
    // An image is forwarded whole: one that starts the chunk waits for a step
    // with room, unless it is the step's first prefill (then it may pass the
    // budget by its length, never waiting for ever behind decode rows).
    if (prefills > 0 && sched_images::image_rows_at(r->opts, r->session->cached()) > budget) continue;
    const size_t first = batch.rows.size();
    const int64_t n = r->session->add_rows(batch, budget);
    if (n > 0) {
      parts.push_back({r.get(), first, n, true});
      ++prefills;
    }
    budget -= n;
    prefill_rows += n;
  }
  if (batch.rows.empty()) return false;
  Timer step_timer;
  std::string error;
  try {
    const KvResult kr = engine.forward(batch, *cache, logits);
    if (!kr.ok()) error = "the cache refused a step of " + std::to_string(batch.rows.size()) + " rows: " + kr.message;
  } catch (const Error& e) {
    error = e.what();
  }
  if (!error.empty()) {
    // The step changed nothing; every session in it fails with the reason.
    for (size_t i = 0; i < running.size();) {
      auto it = std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.r == running[i].get(); });
      if (it == parts.end()) {
        ++i;
        continue;
      }
      std::unique_ptr<Request> r = take_running(i);
      if (r->session) r->session->abort_turn();
      r->session.reset();
      finish(std::move(r), FinishReason::kFailed, error);
    }
    return true;
  }
  const int64_t n_vocab = engine.n_vocab();
  int64_t logit_row = 0;
  std::vector<Request*> failed;
  std::vector<std::string> failed_why;
  int64_t decode_tokens = 0;  // sampled by the decode parts (a verify step's several)
  // parts point at the Requests themselves: the forks joining `running` move none.
  for (const Part& p : parts) {
    // The part's rows that wanted logits: its last, or all of a prompt's
    // (prompt logprobs); they are the trailing ones, in order.
    int64_t wanted = 0;
    for (int64_t k = 0; k < p.n; ++k) wanted += batch.rows[p.first_row + k].want_logits ? 1 : 0;
    const float* rows = wanted ? logits.data() + logit_row * n_vocab : nullptr;
    const float* row = wanted ? rows + (wanted - 1) * n_vocab : nullptr;  // the last row's
    logit_row += wanted;
    Request& r = *p.r;
    try {
      if (p.prefill && wanted && r.session->prefill_pending() == 0) {
        r.prefilled_at = r.since_submit.seconds();
        // Capture at the prompt boundary: the cache holds exactly the prompt now.
        if (r.opts.use_prefix_cache && !r.captured) {
          prefix.capture(r.seq, r.opts.prompt, r.opts.cache_salt, sched_images::spans(r.opts));
          r.captured = true;
        }
        // The prompt's logprobs go out before any choice's first token.
        if (wanted > 1) {
          r.session->accept_rows(rows, wanted, /*sample=*/false);
          rows = row;
          wanted = 1;
        }
        // ... and the other choices fork it, sampling from the same logits.
        if (!r.forks.empty()) fork_choices(r, row, &failed, &failed_why);
      }
      const int64_t before = r.session->stats().generated_tokens;
      if (!p.prefill && !r.draft.tokens.empty())
        count_verify(r, r.session->accept_verify(rows, r.draft));
      else
        r.session->accept_rows(rows, wanted);
      if (!p.prefill) decode_tokens += r.session->stats().generated_tokens - before;
    } catch (const Error& e) {
      failed.push_back(&r);
      failed_why.push_back(e.what());
    }
  }
  for (size_t i = 0; i < running.size();) {
    Request* raw = running[i].get();
    auto f = std::find(failed.begin(), failed.end(), raw);
    if (f != failed.end()) {
      const std::string why = failed_why[f - failed.begin()];
      std::unique_ptr<Request> r = take_running(i);
      if (r->session) r->session->abort_turn();
      r->session.reset();
      finish(std::move(r), FinishReason::kFailed, why);
    } else if (raw->session->turn_done()) {
      finish(take_running(i), FinishReason::kStop, "");
    } else {
      ++i;
    }
  }
  const double step_s = step_timer.seconds();
  std::lock_guard<std::mutex> lk(mu);
  ++snap.steps;
  snap.rows += static_cast<int64_t>(batch.rows.size());
  snap.decode_rows += decode_rows;
  if (prefill_rows == 0) {
    ++snap.steps_decode_only;
    snap.step_s_decode_only += step_s;
    snap.rows_decode_only += decode_rows;
    snap.tokens_decode_only += decode_tokens;
  } else if (decode_rows == 0) {
    ++snap.steps_prefill_only;
    snap.step_s_prefill_only += step_s;
  } else {
    ++snap.steps_mixed;
    snap.step_s_mixed += step_s;
  }
  snap.prompt_tokens += prefill_rows;
  return true;
}

bool Scheduler::Impl::plan_draft(Request& r, int64_t max_tokens,
                                 std::vector<std::pair<Request*, std::string>>* failed) {
  r.draft = Draft{};
  if (!r.proposer || max_tokens < 1 || r.session->turn_done() || !r.throttle.allow()) return true;
  try {
    r.draft = r.session->propose_draft(max_tokens);
    sched_images::cut_draft(r.draft, r.opts);
  } catch (const Error& e) {
    failed->emplace_back(&r, e.what());
    return false;
  }
  return true;
}

std::unique_ptr<SpecProposer> Scheduler::Impl::draft_proposer(int seq) {
  const SchedulerSpec& sp = opts.spec;
  KvCache& c = *sp.draft_cache;
  const KvResult kr = c.length(seq) < 0 ? c.add_sequence(seq) : c.clear(seq);
  if (!kr.ok()) throw Error("cannot prepare the draft model's cache sequence " + std::to_string(seq) + ": " + kr.message);
  return std::make_unique<DraftModelProposer>(*sp.draft_engine, c, seq, *sp.draft_tok, sp.draft_p_min);
}

void Scheduler::Impl::count_verify(Request& r, int64_t accepted) {
  const int64_t k = static_cast<int64_t>(r.draft.tokens.size());
  const int64_t pauses = r.throttle.pauses();
  r.throttle.record(k, accepted);
  std::lock_guard<std::mutex> lk(mu);
  ++snap.spec_drafts;
  snap.spec_draft_tokens += k;
  snap.spec_accepted_tokens += accepted;
  snap.spec_pauses += r.throttle.pauses() - pauses;
  if (static_cast<int64_t>(snap.spec_accepted_per_pos.size()) < k) snap.spec_accepted_per_pos.resize(k, 0);
  for (int64_t i = 0; i < accepted; ++i) ++snap.spec_accepted_per_pos[i];
}

void Scheduler::Impl::fail_all(const std::vector<std::pair<Request*, std::string>>& failed) {
  for (const auto& f : failed) {
    // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in a lambda.
    const Request* raw = f.first;
    const std::string& why = f.second;
    auto it = std::find_if(running.begin(), running.end(), [&](const auto& r) { return r.get() == raw; });
    if (it == running.end()) continue;
    std::unique_ptr<Request> r = take_running(static_cast<size_t>(it - running.begin()));
    if (r->session) r->session->abort_turn();
    r->session.reset();
    finish(std::move(r), FinishReason::kFailed, why);
  }
}

std::unique_ptr<Request> Scheduler::Impl::take_running(size_t i) {
  std::unique_ptr<Request> r = std::move(running[i]);
  running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
  return r;
}

// Counts and gauges for snapshot(), after each step.
void Scheduler::Impl::publish() {
  int64_t held = 0;
  std::vector<int> seqs;
  for (const auto& r : running) {
    held += std::max<int64_t>(0, cache->length(r->seq));
    seqs.push_back(r->seq);
  }
  // A block pool (batched-cell): the blocks running requests hold, as vLLM
  // reports (a prefix-cache entry's blocks are free to evict, so not counted);
  // other kinds: positions held against every sequence's capacity.
  const KvBlockUsage blocks = cache->block_usage(seqs);
  const int64_t bytes = cache->memory().allocated();
  const PrefixCacheStats& ps = prefix.stats();
  const std::optional<PrefixDiskStats> ds =
      prefix.disk() ? std::optional(prefix.disk()->stats()) : std::nullopt;
  std::lock_guard<std::mutex> lk(mu);
  size_t choices_waiting = 0;
  for (const auto& r : waiting) choices_waiting += 1 + r->forks.size();
  for (const auto& r : incoming)
    if (r->refuse.empty()) choices_waiting += 1 + r->forks.size();
  snap.waiting = static_cast<int>(choices_waiting);
  snap.running = static_cast<int>(running.size());
  snap.peak_running = std::max(snap.peak_running, snap.running);
  const double total = static_cast<double>(opts.max_decode_sequences) * cache->policy().max_capacity;
  if (blocks.total > 0)
    snap.kv_cache_usage = std::min(1.0, static_cast<double>(blocks.used) / static_cast<double>(blocks.total));
  else
    snap.kv_cache_usage = total > 0 ? std::min(1.0, held / total) : 0.0;
  snap.cache_bytes_allocated = bytes;
  snap.peak_cache_bytes = std::max(snap.peak_cache_bytes, bytes);
  snap.prefix_lookups = ps.lookups;
  snap.prefix_hits = ps.hits;
  snap.prefix_hit_tokens = ps.hit_tokens;
  snap.prefix_query_tokens = ps.query_tokens;
  snap.prefix_disk_hits = ps.disk_hits;
  snap.prefix_disk_hit_tokens = ps.disk_hit_tokens;
  if (ds) {
    snap.prefix_disk_writes = ds->writes;
    snap.prefix_disk_bytes = ds->bytes;
  }
  snap.prefix_evictions = ps.evictions;
  snap.prefix_entries = ps.entries;
  snap.prefix_bytes = ps.bytes;
}

Scheduler::Scheduler(Engine& engine, const Tokenizer& tok, std::unique_ptr<KvCache> cache,
                     const SchedulerOptions& opts) {
  OG_CHECK(cache != nullptr, "scheduler: no cache");
  OG_CHECK(opts.max_decode_sequences >= 1, "scheduler: max_decode_sequences must be at least 1, got ",
           opts.max_decode_sequences);
  OG_CHECK(opts.step_tokens >= opts.max_decode_sequences, "scheduler: step_tokens (", opts.step_tokens,
           ") must be at least max_decode_sequences (", opts.max_decode_sequences,
           ") so that a step can carry every decode row and still prefill");
  OG_CHECK(opts.max_session_tokens >= 2, "scheduler: max_session_tokens must be at least 2, got ",
           opts.max_session_tokens);
  OG_CHECK(opts.max_session_tokens <= cache->policy().max_capacity, "scheduler: max_session_tokens ",
           opts.max_session_tokens, " exceeds the cache's capacity per sequence ", cache->policy().max_capacity);
  OG_CHECK(opts.prefix_cache_entries >= 0 && opts.max_queue >= 0 && opts.prefix_cache_bytes >= 0 &&
               opts.max_prefills_per_step >= 0,
           "scheduler: negative bounds");
  const SchedulerSpec& sp = opts.spec;
  OG_CHECK(!sp.ngram || (sp.ngram_min >= 1 && sp.ngram_min <= sp.ngram_max && sp.ngram_max <= 16),
           "scheduler: prompt lookup's n-gram sizes must satisfy 1 <= min <= max <= 16 (got ", sp.ngram_min, " and ",
           sp.ngram_max, ")");
  OG_CHECK(!(sp.ngram && sp.draft_engine), "scheduler: prompt lookup and a draft model are two proposers: give one");
  OG_CHECK(!sp.draft_engine || (sp.draft_cache && sp.draft_tok && sp.draft_p_min >= 0 && sp.draft_p_min <= 1),
           "scheduler: a draft model needs its cache, its tokenizer and p_min in [0, 1]");
  OG_CHECK(!sp.draft_engine || (sp.draft_cache->policy().max_sequences >= opts.max_decode_sequences &&
                                sp.draft_cache->policy().max_capacity >= opts.max_session_tokens),
           "scheduler: the draft model's cache must hold max_decode_sequences sequences of max_session_tokens");
  OG_CHECK(!sp.on() || (sp.draft_max >= 1 && sp.draft_max <= 256 && sp.draft_min >= 0 &&
                         sp.draft_min <= sp.draft_max),
           "scheduler: the draft length must satisfy 0 <= draft_min <= draft_max, 1 <= draft_max <= 256 (got ",
           sp.draft_min, " and ", sp.draft_max, ")");
  OG_CHECK(opts.prefix_block_size >= 1 && opts.prefix_block_size <= 4096, "scheduler: prefix block size ",
           opts.prefix_block_size, " is outside [1, 4096]");
  OG_CHECK(cache->policy().max_sequences >= opts.max_decode_sequences + opts.prefix_cache_entries,
           "scheduler: the cache is sized for ", cache->policy().max_sequences, " sequences but ",
           opts.max_decode_sequences, " sessions and ", opts.prefix_cache_entries, " prefix entries need ",
           opts.max_decode_sequences + opts.prefix_cache_entries);
  // Sequence 0 may exist from the cache's construction; sessions use their own ids.
  if (cache->length(0) >= 0) cache->remove_sequence(0);
  if (sp.draft_cache && sp.draft_cache->length(0) >= 0) sp.draft_cache->remove_sequence(0);
  impl_ = std::make_unique<Impl>(engine, tok, std::move(cache), opts);
  for (int i = opts.max_decode_sequences; i >= 1; --i) impl_->free_seqs.push_back(i);
  const KvPolicy& p = impl_->cache->policy();
  std::lock_guard<std::mutex> lk(impl_->mu);
  impl_->snap.block_size = std::max(1, p.block_size);
  // The pool's own size where the kind has one (it keeps a spare block per
  // sequence), so that cache_config_info's num_gpu_blocks is the count
  // kv_cache_usage divides by; else the blocks the sequences' capacity spans.
  const KvBlockUsage pool = impl_->cache->block_usage({});
  impl_->snap.num_blocks =
      pool.total > 0 ? pool.total
                     : p.max_sequences * ((p.max_capacity + impl_->snap.block_size - 1) / impl_->snap.block_size);
  impl_->snap.cache_dtype = kv_dtype_name(p.dtype);
  impl_->snap.prefix_caching = opts.prefix_cache_entries > 0;
}

Scheduler::~Scheduler() { shutdown(0); }

uint64_t Scheduler::submit(RequestOptions req, RequestCallbacks cb) {
  std::vector<RequestCallbacks> one;
  one.push_back(std::move(cb));
  return submit_group(std::move(req), std::move(one));
}

uint64_t Scheduler::submit_group(RequestOptions req, std::vector<RequestCallbacks> choices) {
  auto r = std::make_unique<Request>();
  const int64_t n = static_cast<int64_t>(req.prompt.size());
  const int32_t n_vocab = impl_->engine.n_vocab();
  const int n_choices = static_cast<int>(std::min<size_t>(choices.size(), 1 << 30));
  if (choices.empty()) r->refuse = "the request has no choices";
  if (r->refuse.empty() && n_choices > impl_->opts.max_decode_sequences)
    r->refuse = "n = " + std::to_string(n_choices) + " choices exceeds the " +
                std::to_string(impl_->opts.max_decode_sequences) +
                " sequences decoded at once (max_decode_sequences): a request's choices decode side by side";
  if (r->refuse.empty() && n == 0) r->refuse = "the prompt is empty";
  // An invariant behind the edges (each checks its ids first, runtime/token_ids.h);
  // in the same words, so a caller that skipped its edge gets no second message.
  if (r->refuse.empty())
    if (const auto bad = first_bad_token_id(req.prompt, n_vocab)) r->refuse = bad->message;
  if (r->refuse.empty() && req.max_new_tokens < 0) r->refuse = "max_new_tokens is negative";
  if (r->refuse.empty())
    r->refuse = sched_images::check(req, impl_->cache->policy().max_write, impl_->opts.image_width);
  if (r->refuse.empty() && n + req.max_new_tokens > impl_->opts.max_session_tokens)
    r->refuse = "the prompt (" + std::to_string(n) + " tokens) plus max_new_tokens (" +
                std::to_string(req.max_new_tokens) + ") exceeds the session limit of " +
                std::to_string(impl_->opts.max_session_tokens) + " tokens";
  r->opts = std::move(req);
  if (!choices.empty()) {
    r->cb = std::move(choices[0]);
    r->forks.assign(std::make_move_iterator(choices.begin() + 1), std::make_move_iterator(choices.end()));
  }
  r->group->unfinished = std::max(1, n_choices);
  uint64_t id;
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    id = impl_->next_id++;
    r->id = id;
    if (r->refuse.empty() && !impl_->accepting) r->refuse = "the scheduler is shutting down";
    // running is the last step's count; a request it still counts has not
    // released its session yet, so the bound never admits more than it says.
    const int in_system = impl_->snap.waiting + impl_->snap.running;
    if (r->refuse.empty() && impl_->opts.max_queue > 0 &&
        in_system + n_choices > impl_->opts.max_decode_sequences + impl_->opts.max_queue)
      r->refuse = "the queue is full (" + std::to_string(impl_->opts.max_queue) + " requests waiting for " +
                  std::to_string(impl_->opts.max_decode_sequences) + " sessions)";
    impl_->live[id] = r->cancel;
    if (r->refuse.empty()) impl_->snap.waiting += n_choices;
    impl_->incoming.push_back(std::move(r));
    impl_->idle = false;
  }
  impl_->wake.notify_all();
  return id;
}

void Scheduler::cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    auto it = impl_->live.find(id);
    if (it == impl_->live.end()) return;
    it->second->store(true);
  }
  impl_->wake.notify_all();
}

bool Scheduler::step() {
  Impl& m = *impl_;
  m.take_incoming();
  m.handle_cancellations();
  m.admit();
  if (m.running.empty() && !m.waiting.empty() && !m.disk_ready(*m.waiting.front())) {
    // Nothing to step but the head's disk read: wait for it a little (no busy loop).
    m.waiting.front()->disk_read->wait_for(kHeadDiskPollS);
    m.admit();
  }
  const bool stepped = m.forward_step();
  m.flush_kv_events();
  m.publish();
  return stepped || !m.running.empty() || !m.waiting.empty();
}

void Scheduler::run_until_idle() {
  while (step()) {
  }
  // Idle includes the disk tier: its queued writes land, their events go out.
  impl_->prefix.drain_disk(kIdleDiskDrainS);
  impl_->flush_kv_events();
  impl_->publish();
}

void Scheduler::start() {
  Impl& m = *impl_;
  if (m.thread.joinable()) return;
  m.thread = std::thread([&m, this] {
    while (true) {
      const bool busy = step();
      std::unique_lock<std::mutex> lk(m.mu);
      if (m.stop_thread) break;
      if (!busy && m.incoming.empty() && !m.disk_news) {
        m.idle = true;
        m.idle_cv.notify_all();
        m.wake.wait(lk, [&] { return m.stop_thread || !m.incoming.empty() || m.disk_news; });
        if (m.stop_thread) break;
      }
      m.disk_news = false;  // the next step passes the disk worker's events on
    }
  });
}

void Scheduler::shutdown(double grace_s) {
  Impl& m = *impl_;
  {
    std::unique_lock<std::mutex> lk(m.mu);
    m.accepting = false;
    // Running requests may finish within the grace period.
    if (m.thread.joinable())
      m.idle_cv.wait_for(lk, std::chrono::duration<double>(std::max(0.0, grace_s)), [&] { return m.idle; });
    m.stop_thread = true;
  }
  m.wake.notify_all();
  if (m.thread.joinable()) {
    m.thread.join();
  } else {
    Timer t;
    while (t.seconds() < grace_s && step()) {
    }
  }
  {
    std::lock_guard<std::mutex> lk(m.mu);
    m.cancel_all = true;
  }
  // Whatever is left (or was submitted meanwhile) finishes as cancelled or refused.
  m.take_incoming();
  m.handle_cancellations();
  // A graceful shutdown keeps what memory holds: the blocks not yet on disk
  // are written, within the bound (docs/cache.md, "The disk tier").
  if (!m.wrote_back) {
    m.wrote_back = true;
    const double bound = m.opts.prefix_disk.shutdown_write_s;
    if (!m.prefix.write_back(bound) && m.opts.prefix_disk.log)
      m.opts.prefix_disk.log(cat("prefix cache: the write-back to disk at shutdown stopped at its bound of ", bound,
                                 " s; the blocks not written by then are lost"));
  }
  m.publish();
  // The prefix cache goes with the process: subscribers forget its blocks.
  if (m.opts.kv_events) {
    m.prefix.clear();
    m.flush_kv_events();
  }
}

SchedulerSnapshot Scheduler::snapshot() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->snap;
}

const KvCache& Scheduler::cache() const { return *impl_->cache; }

std::string Scheduler::describe() const { return impl_->cache->describe(); }

}  // namespace og
