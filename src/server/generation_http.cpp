// /v1/chat/completions and /v1/completions, on a worker thread: parse, check
// against the model, take an in-flight slot, submit, then answer whole
// (waiting for on_finish) or as Server-Sent Events written chunk by chunk as
// the request's stream yields text; a request of n choices answers them all
// (whole: choices [0, n); streamed: each chunk one choice, by its index).
// When the client is gone (a write fails,
// or the connection's socket shows it closed while the writer waits) the
// request is cancelled, so the scheduler frees its cache at the next step; a
// whole answer's wait checks the socket the same way.
#include <chrono>
#include <ctime>
#include <memory>
#include <optional>

#include "server/api_response.h"
#include "server/generation.h"
#include "server/http_internal.h"

namespace og::server {

namespace {

// How long the stream writer waits for new text before checking the client.
constexpr std::chrono::milliseconds kPoll{50};
// How long a whole answer's wait sleeps between checks of its client.
constexpr std::chrono::milliseconds kWholePoll{100};

}  // namespace

// The error a request that did not finish normally is answered with.
ApiError unfinished_error(const RequestReport& r) {
  switch (r.reason) {
    case FinishReason::kCancelled:
      return ApiError(503, "server_error", "cancelled", "the request was cancelled (the server is shutting down)");
    case FinishReason::kRefused:
      return ApiError(503, "server_error", "refused", "the request was refused: " + r.message);
    default:
      // The matcher's bounds reached mid-reply (src/grammar/automaton.cpp:
      // limits.max_stacks, limits.max_states): the request's grammar is too
      // ambiguous or too large, the client's fault, not the engine's.
      if (r.message.rfind("grammar: ", 0) == 0 && r.message.find("limits.max_") != std::string::npos)
        return ApiError(400, "invalid_request_error", "grammar_limit",
                        "the request's grammar passed a bound of the matcher mid-reply: " + r.message.substr(9));
      return ApiError(500, "server_error", "engine_failure", "the engine failed: " + r.message);
  }
}

bool normal_finish(const RequestReport& r) {
  return r.reason == FinishReason::kStop || r.reason == FinishReason::kLength;
}

namespace {

// One choice's stream state: chat replies with tool calls or reasoning go
// through its own parser.
struct ChoiceStream {
  std::optional<ReplyParser> parser;
  std::vector<TokenLogprobs> held_lp;  // logprobs of text the parser holds back
  bool called_tools = false;
  int64_t text_offset = 0;
  std::optional<RequestReport> report;  // once finished
  bool echo_pending = false;            // echo: the prompt's chunk is still to be sent
};

// What one generation request submits: per prompt (a completion request may
// hold a list), the scheduler request and, for echo, the prompt's text and ids.
struct Submission {
  std::vector<RequestOptions> opts;
  std::vector<std::vector<int32_t>> prompts;  // echo
  std::vector<std::string> echo_texts;        // echo
  ReplyParserOptions parse;
  bool echo = false;
  int per_prompt = 1;  // choices per prompt (n)
};

Submission prepare_submission(const GenerationRequest& r, const ServedModel& m) {
  Submission sub;
  sub.echo = r.echo;
  sub.per_prompt = static_cast<int>(r.params.n);
  const size_t n_prompts = r.endpoint == Endpoint::kChat ? 1 : r.prompts.size();
  for (size_t p = 0; p < n_prompts; ++p) {
    std::string rendered;
    std::vector<RequestImage> images;  // a chat request's, encoded here on the worker thread
    std::vector<int32_t> prompt = encode_prompt(r, m, &rendered, p, &images);
    if (p == 0) sub.parse = reply_options(r, m, rendered);
    if (r.echo) {
      sub.prompts.push_back(prompt);
      sub.echo_texts.push_back(r.prompts[p].is_ids ? m.tok->decode(prompt) : r.prompts[p].text);
    }
    RequestOptions o = build_request_options(r, m, std::move(prompt));
    o.images = std::move(images);
    o.special_text = reply_needs_special_text(sub.parse);
    set_grammar(r, m, sub.parse, o);
    o.prompt_logprobs = r.echo && r.params.logprobs;
    sub.opts.push_back(std::move(o));
  }
  return sub;
}

// An echoed prompt's logprobs: its first token (no logprob) and the rest as
// the lead choice received them.
std::vector<TokenLogprobs> echo_logprobs(const ServedModel& m, const Submission& sub, const RequestStream& stream,
                                         int choice) {
  const int p = choice / sub.per_prompt;
  std::vector<TokenLogprobs> lp;
  TokenLogprobs first;
  first.token = m.tok->token_bytes(sub.prompts[p].front());
  first.known = false;
  lp.push_back(std::move(first));
  std::vector<TokenLogprobs> rest = stream.prompt_logprobs(p * sub.per_prompt);
  lp.insert(lp.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  return lp;
}

void cancel_all(SchedulerPort& s, const std::vector<uint64_t>& ids) {
  for (uint64_t id : ids) s.cancel(id);
}

// Everything the SSE writer keeps between calls of the content provider.
struct StreamState {
  std::shared_ptr<RequestStream> stream;
  std::shared_ptr<Slot> slot;
  SchedulerPort* sched = nullptr;
  ResponseMeta meta;
  std::vector<uint64_t> ids;  // one per prompt
  const Submission* sub = nullptr;
  const ServedModel* model = nullptr;
  bool include_usage = false;
  bool logprobs = false;
  bool opened = false;
  bool complete = false;
  std::vector<ChoiceStream> choices;
  int unfinished = 0;

  // The events of what choice c's parser released (the held logprobs go with the first).
  void parsed_events(int c, const ReplyDelta& d, std::string& out) {
    if (d.empty()) return;
    ChoiceStream& ch = choices[c];
    std::vector<TokenLogprobs> lp = std::move(ch.held_lp);
    ch.held_lp.clear();
    const std::vector<TokenLogprobs>* lpp = logprobs ? &lp : nullptr;
    if (!d.reasoning.empty()) {
      out += sse_event(chunk_reasoning(meta, d.reasoning, lpp, include_usage, c));
      lpp = nullptr;
    }
    if (!d.content.empty()) {
      out += sse_event(chunk_text(meta, d.content, lpp, include_usage, 0, c));
      lpp = nullptr;
    }
    for (const ToolCallDelta& call : d.tool_calls) {
      out += sse_event(chunk_tool_call(meta, call, lpp, include_usage, c));
      lpp = nullptr;
      ch.called_tools = true;
    }
  }

  // The events of one choice's update; false when it finished abnormally
  // (the error event is then written and the stream ends).
  bool choice_events(const StreamUpdate& u, std::string& out) {
    const int c = u.choice;
    ChoiceStream& ch = choices[c];
    if (ch.echo_pending) {
      // The prompt's logprobs all came before its choices' first pieces.
      ch.echo_pending = false;
      const std::string& text = sub->echo_texts[c / sub->per_prompt];
      std::vector<TokenLogprobs> lp;
      if (logprobs) lp = echo_logprobs(*model, *sub, *stream, c);
      out += sse_event(chunk_text(meta, text, logprobs ? &lp : nullptr, include_usage, ch.text_offset, c));
      ch.text_offset += static_cast<int64_t>(text.size());
    }
    for (const Piece& p : u.pieces) {
      if (ch.parser) {
        if (logprobs) ch.held_lp.insert(ch.held_lp.end(), p.logprobs.begin(), p.logprobs.end());
        parsed_events(c, ch.parser->feed(p.text), out);
        continue;
      }
      out += sse_event(chunk_text(meta, p.text, logprobs ? &p.logprobs : nullptr, include_usage, ch.text_offset, c));
      ch.text_offset += static_cast<int64_t>(p.text.size());
    }
    if (!u.finished) return true;
    const RequestReport& r = *u.finished;
    ch.report = r;  // the access log's counts, however it ended
    if (!normal_finish(r)) {
      out += sse_event(error_body(unfinished_error(r)));
      return false;
    }
    --unfinished;
    if (ch.parser) parsed_events(c, ch.parser->finish(), out);
    std::string reason = openai_finish_reason(r.reason);
    if (ch.called_tools && r.reason == FinishReason::kStop) reason = "tool_calls";
    out += sse_event(chunk_finish(meta, reason, include_usage, c));
    return true;
  }

  // After a cancel: the reports of the choices that had not finished, as the
  // scheduler sends them (at its next step), so that the access log has their
  // token counts; gives up after `limit` (a scheduler that is gone).
  void collect_reports(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    auto missing = [&] {
      for (const ChoiceStream& ch : choices)
        if (!ch.report) return true;
      return false;
    };
    while (missing() && std::chrono::steady_clock::now() < end)
      for (const StreamUpdate& u : stream->take(kPoll))
        if (u.finished) choices[u.choice].report = *u.finished;
  }

  // The SSE text of what arrived since the last call (may be empty).
  std::string next_events() {
    std::string out;
    if (!opened && meta.endpoint == Endpoint::kChat)
      for (int c = 0; c < static_cast<int>(choices.size()); ++c) out += sse_event(chunk_role(meta, include_usage, c));
    opened = true;
    for (const StreamUpdate& u : stream->take(kPoll)) {
      if (complete) {  // after an abnormal finish: only the other choices' reports
        if (u.finished) choices[u.choice].report = *u.finished;
        continue;
      }
      if (choice_events(u, out)) continue;
      complete = true;
      cancel_all(*sched, ids);  // the other choices end with it
    }
    if (complete) return out;
    if (unfinished > 0) return out;
    complete = true;
    if (include_usage) {
      std::vector<RequestReport> reports;
      for (const ChoiceStream& ch : choices) reports.push_back(*ch.report);
      out += sse_event(chunk_usage(meta, usage_of(reports, sub->per_prompt)));
    }
    out += sse_done();
    return out;
  }
};

}  // namespace

void note_reports(const HttpRequest& req, const std::vector<const RequestReport*>& reports, int per_prompt,
                  bool client_left) {
  RequestContext* ctx = request_context(req);
  if (!ctx) return;
  ctx->generation = true;
  ctx->client_closed = client_left;
  ctx->prompt_tokens = ctx->cached_tokens = 0;
  std::string finish;
  for (size_t i = 0; i < reports.size(); ++i) {
    const RequestReport* r = reports[i];
    if (!r) continue;
    if (i % static_cast<size_t>(per_prompt) == 0) {
      ctx->prompt_tokens += r->prompt_tokens;
      ctx->cached_tokens += r->cached_tokens;
    }
    ctx->generated_tokens += r->generated_tokens;
    if (r->generated_tokens > 0 && (ctx->ttft_ms < 0 || r->ttft_s * 1e3 < ctx->ttft_ms)) ctx->ttft_ms = r->ttft_s * 1e3;
    const std::string name = finish_reason_name(r->reason);
    if (finish.find(name) == std::string::npos) finish += (finish.empty() ? "" : ",") + name;
  }
  ctx->finish = finish;
}

void HttpServer::Impl::acquire_slot() {
  int n = in_flight->n.load();
  while (true) {
    if (opts.max_in_flight > 0 && n >= opts.max_in_flight)
      throw ApiError(429, "rate_limit_error", "queue_full",
                     "the server has " + std::to_string(n) +
                         " requests in flight, its limit (--parallel + --max-queue); retry later");
    if (in_flight->n.compare_exchange_weak(n, n + 1)) return;
  }
}

void HttpServer::Impl::InFlight::release() {
  std::lock_guard<std::mutex> lock(mu);
  n.fetch_sub(1);
  idle.notify_all();
}

void HttpServer::Impl::InFlight::release_preparing() {
  std::lock_guard<std::mutex> lock(mu);
  preparing.fetch_sub(1);
  idle.notify_all();
}

namespace {

// A whole answer's choices as they arrive.
struct WholeChoice {
  std::vector<Piece> pieces;
  StreamUpdate last;  // its finish (and trailing logprobs)
};

// Waits for every choice's pieces and report; cancels the request when the
// client closes its connection (or the server stops) meanwhile, or when a
// choice ends abnormally (the answer is then an error).
void wait_whole(RequestStream& stream, SchedulerPort& sched, const std::vector<uint64_t>& ids, const ResponseWriter& w,
                std::vector<WholeChoice>* choices, bool* client_left) {
  int unfinished = stream.choices();
  bool cancelled = false;
  while (unfinished > 0) {
    for (StreamUpdate& u : stream.take(kWholePoll)) {
      WholeChoice& ch = (*choices)[u.choice];
      for (auto& p : u.pieces) ch.pieces.push_back(std::move(p));
      if (!u.finished) continue;
      --unfinished;
      if (!normal_finish(*u.finished) && !cancelled) {
        cancelled = true;
        cancel_all(sched, ids);
      }
      ch.last = std::move(u);
    }
    if (unfinished == 0 || *client_left) continue;
    if (w.client_gone()) {
      *client_left = true;
      cancelled = true;
      cancel_all(sched, ids);
    }
  }
}

// How long a cancelled stream's worker waits for the reports of its choices.
constexpr std::chrono::milliseconds kReportWait{5000};

// Writes the events as they come until the request finishes or the client
// goes; a request not finished here is cancelled (and its reports collected).
// Returns whether the client left.
bool write_stream(StreamState& st, ResponseWriter& w) {
  HttpResponse head;
  head.content_type = "text/event-stream";
  head.set_header("Cache-Control", "no-cache");
  head.set_header("X-Accel-Buffering", "no");
  bool alive = w.start_stream(head);
  while (alive && !st.complete) {
    const std::string out = st.next_events();
    alive = out.empty() ? !w.client_gone() : w.stream(out);
  }
  if (alive) w.end_stream();
  if (!st.complete) {
    cancel_all(*st.sched, st.ids);  // the client is gone: free its place in the batch
    st.collect_reports(kReportWait);
  }
  return !alive;
}

}  // namespace

namespace {

// Submits each prompt's request with its slice of the choices' callbacks;
// when a submission throws, the ones made are cancelled and the slot's
// references of those never made are dropped.
std::vector<uint64_t> submit_all(SchedulerPort& s, Submission& sub, std::vector<RequestCallbacks> cbs,
                                 const std::shared_ptr<Slot>& slot) {
  std::vector<uint64_t> ids;
  const size_t n = static_cast<size_t>(sub.per_prompt);
  for (size_t p = 0; p < sub.opts.size(); ++p) {
    std::vector<RequestCallbacks> slice(std::make_move_iterator(cbs.begin() + p * n),
                                        std::make_move_iterator(cbs.begin() + (p + 1) * n));
    try {
      ids.push_back(s.submit_group(std::move(sub.opts[p]), std::move(slice)));
    } catch (...) {
      cancel_all(s, ids);
      for (size_t i = 0; i < 1 + (sub.opts.size() - p) * n; ++i) slot->drop();
      throw;
    }
  }
  return ids;
}

// The whole answer's choice c: its text and logprobs after its echoed prompt.
CompletionResult echoed(const ServedModel& m, const Submission& sub, const RequestStream& stream, int c,
                        CompletionResult r) {
  r.text = sub.echo_texts[c / sub.per_prompt] + r.text;
  if (r.with_logprobs) {
    std::vector<TokenLogprobs> lp = echo_logprobs(m, sub, stream, c);
    lp.insert(lp.end(), std::make_move_iterator(r.logprobs.begin()), std::make_move_iterator(r.logprobs.end()));
    r.logprobs = std::move(lp);
  }
  return r;
}

}  // namespace

void HttpServer::Impl::handle_generation(Endpoint ep, const HttpRequest& req, ResponseWriter& w) {
  if (draining.load()) throw ApiError(503, "server_error", "shutting_down", "the server is shutting down");
  Preparing counted(*in_flight);  // in flight while it is parsed and rendered, then by its slot
  const ServedModel& m = *model.load();
  SchedulerPort& s = *sched.load();
  const nlohmann::ordered_json j = parse_json_object(req.body);
  const GenerationRequest r = ep == Endpoint::kChat ? parse_chat_request(j) : parse_completion_request(j);
  check_model(r.model, m);
  log_ignored(r.ignored);
  std::shared_ptr<Submission> sub;
  try {
    sub = std::make_shared<Submission>(prepare_submission(r, m));
  } catch (const std::exception&) {
    // A render the drain stopped (jinja::CancelCheck in answer_on_worker): the
    // 503 is written here, while the request still counts in flight, so that
    // the shutdown waits for it before it closes the connections.
    if (draining.load() && !w.client_gone())
      return (void)w.send(unavailable("the server is shutting down"));
    throw;
  }
  const ReplyParserOptions& parse = sub->parse;
  const bool parsing = parse.parse_tools || parse.parse_reasoning;

  // A client that left while its body was parsed and its prompt rendered
  // gets no place in the batch.
  if (w.client_gone())
    throw ApiError(499, "invalid_request_error", "client_closed",
                   "the client closed the connection before the request was scheduled");
  const int n = sub->per_prompt * static_cast<int>(sub->opts.size());  // every prompt's choices
  acquire_slot();
  counted.release();  // counted by its slot from here
  auto slot = std::make_shared<Slot>(in_flight, n);
  auto stream = std::make_shared<RequestStream>(m, &metrics, ep, r.params.logprobs, n);
  stream->set_per_prompt(sub->per_prompt);
  std::vector<RequestCallbacks> cbs = RequestStream::callbacks(stream);
  // The callbacks keep what they touch alive: the metrics and the in-flight
  // count are shared with the server, which may be gone when the last comes.
  std::shared_ptr<ServerMetrics> keep = metrics_owner;
  for (RequestCallbacks& cb : cbs) {
    if (cb.on_text) cb.on_text = [inner = std::move(cb.on_text), keep](std::string_view t) { inner(t); };
    if (cb.on_token) cb.on_token = [inner = std::move(cb.on_token), keep](const TokenEvent& ev) { inner(ev); };
    if (cb.on_prompt_token)
      cb.on_prompt_token = [inner = std::move(cb.on_prompt_token), keep](const TokenEvent& ev) { inner(ev); };
    cb.on_finish = [inner = std::move(cb.on_finish), slot, keep](const RequestReport& rep) {
      inner(rep);
      slot->drop();
    };
  }
  ResponseMeta meta{ep, new_response_id(ep), static_cast<int64_t>(std::time(nullptr)), m.id};
  const std::vector<uint64_t> ids = submit_all(s, *sub, std::move(cbs), slot);

  if (!r.params.stream) {
    std::vector<WholeChoice> choices(static_cast<size_t>(n));
    bool client_left = false;
    wait_whole(*stream, s, ids, w, &choices, &client_left);
    slot->drop();
    {
      std::vector<const RequestReport*> done;
      for (const WholeChoice& ch : choices) done.push_back(ch.last.finished ? &*ch.last.finished : nullptr);
      note_reports(req, done, sub->per_prompt, client_left);
    }
    const RequestReport* bad = nullptr;
    for (const WholeChoice& ch : choices)
      if (!bad && !normal_finish(*ch.last.finished)) bad = &*ch.last.finished;
    if (client_left && bad)
      return (void)w.send(api_error_response(
          ApiError(499, "invalid_request_error", "client_closed", "the client closed the connection")));
    if (bad) return (void)w.send(api_error_response(unfinished_error(*bad)));
    std::vector<CompletionResult> results;
    std::vector<RequestReport> reports;
    for (size_t c = 0; c < choices.size(); ++c) {
      const WholeChoice& ch = choices[c];
      results.push_back(collect_result(ch.pieces, ch.last, r.params.logprobs, &parse));
      if (sub->echo) results.back() = echoed(m, *sub, *stream, static_cast<int>(c), std::move(results.back()));
      reports.push_back(*ch.last.finished);
    }
    w.send(json_response(completion_body(meta, results, usage_of(reports, sub->per_prompt))));
    return;
  }

  StreamState st;
  st.stream = stream;
  st.slot = slot;
  st.sched = &s;
  st.meta = meta;
  st.ids = ids;
  st.sub = sub.get();
  st.model = &m;
  st.include_usage = r.params.include_usage;
  st.logprobs = r.params.logprobs;
  st.choices = std::vector<ChoiceStream>(static_cast<size_t>(n));
  st.unfinished = n;
  for (ChoiceStream& ch : st.choices) {
    if (parsing) ch.parser.emplace(parse);
    ch.echo_pending = sub->echo;
  }
  try {
    const bool client_left = write_stream(st, w);
    std::vector<const RequestReport*> done;
    for (const ChoiceStream& ch : st.choices) done.push_back(ch.report ? &*ch.report : nullptr);
    note_reports(req, done, sub->per_prompt, client_left);
  } catch (...) {
    cancel_all(s, ids);
    slot->drop();
    throw;
  }
  slot->drop();
}

}  // namespace og::server
