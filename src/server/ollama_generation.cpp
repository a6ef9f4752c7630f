// POST /api/chat and /api/generate: an Ollama request read into the OpenAI
// routes' GenerationRequest (ollama_request.h), its prompt built, checked and
// submitted by the same generation path (generation.h: encode_prompt,
// reply_options, build_request_options, set_grammar, RequestStream), and the
// reply written in Ollama's shape: one object, or NDJSON lines as the text
// comes (content and thinking pieces; tool calls once each is complete; a
// last line with done_reason, the timings and, for generate, `context`). A
// client that goes away has its request cancelled, as on the OpenAI routes.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "server/generation.h"
#include "server/http_internal.h"
#include "server/ollama_request.h"
#include "server/ollama_response.h"

namespace og::server {
namespace {

constexpr std::chrono::milliseconds kPoll{50};
// How long a cancelled request's worker waits for its report (the access log's counts).
constexpr std::chrono::milliseconds kReportWait{5000};

double seconds_since(const HttpRequest& req) {
  const RequestContext* ctx = request_context(req);
  if (!ctx) return 0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx->start).count();
}

// The prompt's ids: the request's render (or raw text), after `context` (the
// tokens a previous generate returned) without a second BOS; the images
// (encoded here, on the worker thread) move with their positions.
std::vector<int32_t> prompt_ids(const OllamaGeneration& g, const ServedModel& m, std::string* rendered,
                                std::vector<RequestImage>* images) {
  std::vector<int32_t> ids = encode_prompt(g.request, m, rendered, 0, images);
  if (g.context.empty()) return ids;
  int64_t shift = static_cast<int64_t>(g.context.size());
  const int32_t bos = m.tok->special().bos;
  if (bos >= 0 && !ids.empty() && ids.front() == bos) {
    ids.erase(ids.begin());
    --shift;
  }
  ids.insert(ids.begin(), g.context.begin(), g.context.end());
  for (RequestImage& im : *images) im.begin += shift;
  return ids;
}

// The scheduler request. /api/generate without num_predict generates up to
// the server's default (--max-new-tokens, else the session limit), as chat
// does, not the 16 tokens of OpenAI's completions.
RequestOptions request_options(const OllamaGeneration& g, const ServedModel& m, std::vector<int32_t> prompt,
                               const ReplyParserOptions& parse) {
  GenerationRequest r = g.request;
  const int64_t room = m.max_session_tokens - static_cast<int64_t>(prompt.size());
  if (!r.params.max_tokens && r.endpoint == Endpoint::kCompletion && room >= 1)
    r.params.max_tokens = m.default_max_tokens > 0 ? std::min(m.default_max_tokens, room) : room;
  try {
    RequestOptions o = build_request_options(r, m, std::move(prompt));
    o.special_text = reply_needs_special_text(parse);
    set_grammar(r, m, parse, o);
    return o;
  } catch (const ApiError& e) {
    throw ollama_field_names(e);
  }
}

// generate's `context`: the prompt and the reply's tokens (its stop id left out).
std::vector<int32_t> reply_context(const std::vector<int32_t>& prompt, const RequestReport& r, const ServedModel& m) {
  std::vector<int32_t> ctx = prompt;
  for (int32_t id : r.tokens)
    if (std::find(m.stop_ids.begin(), m.stop_ids.end(), id) == m.stop_ids.end()) ctx.push_back(id);
  return ctx;
}

std::string done_reason(const RequestReport& r) { return r.reason == FinishReason::kLength ? "length" : "stop"; }

// One streamed request's state between the writer's polls.
struct OllamaStream {
  const OllamaGeneration* g = nullptr;
  std::optional<ReplyParser> parser;
  size_t calls_sent = 0;
  std::optional<RequestReport> report;

  // The lines of what a piece (or the parser's finish) released.
  void lines(const ReplyDelta& d, std::string& out) {
    OllamaReply r;
    r.model = g->model;
    r.chat = g->chat;
    r.content = d.content;
    if (!g->hide_thinking) r.thinking = d.reasoning;
    if (!r.content.empty() || !r.thinking.empty()) out += ollama_line(ollama_reply(r));
    if (!parser || parser->tool_calls().size() == calls_sent) return;
    OllamaReply calls;
    calls.model = g->model;
    calls.chat = g->chat;
    calls.tool_calls.assign(parser->tool_calls().begin() + static_cast<std::ptrdiff_t>(calls_sent), parser->tool_calls().end());
    calls_sent = parser->tool_calls().size();
    out += ollama_line(ollama_reply(calls));
  }

  ReplyDelta feed(const std::string& text) {
    if (parser) return parser->feed(text);
    ReplyDelta d;
    d.content = text;
    return d;
  }
};

}  // namespace

void HttpServer::Impl::handle_ollama_generation(bool chat, const HttpRequest& req, ResponseWriter& w) {
  if (draining.load()) throw ApiError(503, "server_error", "shutting_down", "the server is shutting down");
  Preparing counted(*in_flight);
  const ServedModel& m = *model.load();
  SchedulerPort& s = *sched.load();
  const nlohmann::ordered_json body = parse_json_object(req.body);
  const OllamaGeneration g = chat ? parse_ollama_chat(body, m) : parse_ollama_generate(body, m);
  log_ignored(g.ignored);
  if (!m.generates)
    bad_request("the model '" + m.id + "' only embeds (bidirectional attention): use /api/embed", "model",
                "model_not_generative");
  if (g.empty) {  // Ollama's "load the model" request: nothing to generate
    const OllamaTimings none;
    OllamaReply r{g.model, g.chat, "", "", {}, &none, "load", nullptr};
    HttpResponse res = json_response(ollama_line(ollama_reply(r)));
    if (g.stream) res.content_type = "application/x-ndjson";
    return (void)w.send(res);
  }
  std::string rendered;
  std::vector<RequestImage> images;
  std::vector<int32_t> prompt = prompt_ids(g, m, &rendered, &images);
  const ReplyParserOptions parse = reply_options(g.request, m, rendered);
  RequestOptions opts = request_options(g, m, prompt, parse);
  opts.images = std::move(images);
  if (w.client_gone())
    throw ApiError(499, "invalid_request_error", "client_closed",
                   "the client closed the connection before the request was scheduled");
  acquire_slot();
  counted.release();
  auto slot = std::make_shared<Slot>(in_flight, 1);
  auto stream = std::make_shared<RequestStream>(m, &metrics, g.request.endpoint, false, 1);
  std::vector<RequestCallbacks> cbs = RequestStream::callbacks(stream);
  std::shared_ptr<ServerMetrics> keep = metrics_owner;  // the callbacks may outlive the server
  cbs[0].on_token = [inner = std::move(cbs[0].on_token), keep](const TokenEvent& ev) { inner(ev); };
  cbs[0].on_finish = [inner = std::move(cbs[0].on_finish), slot, keep](const RequestReport& rep) {
    inner(rep);
    slot->drop();
  };
  uint64_t id = 0;
  try {
    id = s.submit_group(std::move(opts), std::move(cbs));
  } catch (...) {
    slot->drop();
    slot->drop();
    throw;
  }
  const bool parsing = parse.parse_tools || parse.parse_reasoning;
  OllamaStream st;
  st.g = &g;
  if (parsing) st.parser.emplace(parse);
  std::vector<Piece> pieces;  // whole answers
  bool client_left = false;
  bool alive = true;
  if (g.stream) {
    HttpResponse head;
    head.content_type = "application/x-ndjson";
    head.set_header("Cache-Control", "no-cache");
    head.set_header("X-Accel-Buffering", "no");
    alive = w.start_stream(head);
  }
  // Until the report: pieces written as they come (stream) or kept (whole).
  while (alive && !st.report) {
    std::string out;
    for (StreamUpdate& u : stream->take(kPoll)) {
      for (Piece& p : u.pieces) {
        if (g.stream) st.lines(st.feed(p.text), out);
        else pieces.push_back(std::move(p));
      }
      if (u.finished) st.report = *u.finished;
    }
    if (g.stream && !out.empty()) alive = w.stream(out);
    else if (w.client_gone()) alive = false;
  }
  if (!st.report) {  // the client left: free its place in the batch, then wait for the report
    client_left = true;
    s.cancel(id);
    const auto end = std::chrono::steady_clock::now() + kReportWait;
    while (!st.report && std::chrono::steady_clock::now() < end)
      for (const StreamUpdate& u : stream->take(kPoll))
        if (u.finished) st.report = *u.finished;
  }
  slot->drop();
  note_reports(req, {st.report ? &*st.report : nullptr}, 1, client_left);
  if (client_left) {
    if (!w.started())
      w.send(api_error_response(ApiError(499, "invalid_request_error", "client_closed", "the client closed the connection")));
    return;
  }
  const RequestReport& rep = *st.report;
  const OllamaTimings t = ollama_timings(rep, seconds_since(req));
  const std::vector<int32_t> context = reply_context(prompt, rep, m);
  OllamaReply last{g.model, g.chat, "", "", {}, &t, done_reason(rep), g.chat ? nullptr : &context};
  if (g.stream) {
    std::string out;
    if (!normal_finish(rep)) {
      // Mid-stream errors travel as a line, as Ollama sends them.
      const ApiError e = unfinished_error(rep);
      out = ollama_line(nlohmann::ordered_json{{"error", e.what()}});
    } else {
      if (st.parser) st.lines(st.parser->finish(), out);
      out += ollama_line(ollama_reply(last));
    }
    if (w.stream(out)) w.end_stream();
    return;
  }
  if (!normal_finish(rep)) throw unfinished_error(rep);
  StreamUpdate u;
  u.finished = rep;
  const CompletionResult whole = collect_result(pieces, u, false, parsing ? &parse : nullptr);
  last.content = whole.text;
  if (!g.hide_thinking) last.thinking = whole.reasoning;
  last.tool_calls = whole.tool_calls;
  w.send(json_response(ollama_line(ollama_reply(last))));
}

}  // namespace og::server
