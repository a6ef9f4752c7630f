// The HTTP server: route table, the checks made from the request head before
// a body is read (route, method, declared size, key, readiness), the answers
// the event loop gives itself (/health, /ready, /metrics, /v1/models, 503
// while draining) and the worker's tokenize routes. Generation answers are
// written by generation_http.cpp. The server used cpp-httplib until its
// thread-per-connection pool let a few dozen idle sockets starve every route
// (a worker waits on each connection's request line); it now runs on its own
// event loop (http_conn.h: epoll, or poll(2) where there is none), which
// needs nothing beyond the C library. The tests still use httplib's client.
#include "server/http_server.h"

#include <chrono>
#include <cstdio>
#include <cmath>
#include <ctime>
#include <random>
#include <regex>
#include <string_view>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/one_line.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/auth.h"
#include "server/embeddings.h"
#include "server/generation.h"
#include "server/http_internal.h"
#include "server/webui.h"
#include "runtime/token_ids.h"
#include "template/meter.h"

namespace og::server {

using nlohmann::json;

namespace {

struct Route {
  const char* method;
  const char* path;
  bool needs_key;    // API key checked (when the server has keys)
  bool needs_model;  // 503 until the model is loaded
};

// Every route the server answers; anything else is 404 (405 for a known path).
// Paths are matched after canonical_path(); "/v1/models/{id}" takes any id.
constexpr Route kRoutes[] = {
    {"GET", "/", false, false},                 {"GET", "/webui/{file}", false, false},
    {"GET", "/health", false, false},           {"GET", "/ready", false, false},
    {"GET", "/metrics", false, false},          {"GET", "/v1/models", true, true},
    {"GET", "/v1/models/{id}", true, true},
    {"POST", "/v1/chat/completions", true, true}, {"POST", "/v1/completions", true, true},
    {"POST", "/tokenize", true, true},          {"POST", "/detokenize", true, true},
    {"POST", "/apply-template", true, true},    {"POST", "/v1/embeddings", true, true},
    // Ollama's API (ollama_routes.cpp).
    {"GET", "/api/version", true, false},       {"GET", "/api/tags", true, true},
    {"GET", "/api/ps", true, true},             {"POST", "/api/show", true, true},
    {"POST", "/api/chat", true, true},          {"POST", "/api/generate", true, true},
    {"POST", "/api/embed", true, true},         {"POST", "/api/embeddings", true, true},
    {"POST", "/api/pull", true, true},          {"POST", "/api/push", true, true},
    {"POST", "/api/create", true, true},        {"POST", "/api/copy", true, true},
    {"DELETE", "/api/delete", true, true},
};

constexpr std::string_view kModelPrefix = "/v1/models/";

// The /v1 form of a path sent without the prefix; the path itself otherwise.
std::string canonical_path(const std::string& p) {
  if (p == "/models" || p == "/chat/completions" || p == "/completions" || p == "/embeddings" ||
      (p.rfind("/models/", 0) == 0 && p.size() > 8))
    return "/v1" + p;
  return p;
}

// The route pattern of a canonical path.
std::string route_of(const std::string& cp) {
  if (cp.size() > kModelPrefix.size() && cp.compare(0, kModelPrefix.size(), kModelPrefix) == 0) return "/v1/models/{id}";
  if (cp != "/" && is_webui_path(cp)) return "/webui/{file}";
  return cp;
}

const Route* find_route(const std::string& path, const std::string& method, bool* path_known) {
  *path_known = false;
  const std::string route = route_of(canonical_path(path));
  for (const auto& r : kRoutes) {
    if (route != r.path) continue;
    *path_known = true;
    if (method == r.method || (method == "HEAD" && std::string(r.method) == "GET")) return &r;
  }
  return nullptr;
}

std::string allowed_methods(const std::string& path) {
  const std::string route = route_of(canonical_path(path));
  std::string out;
  for (const auto& r : kRoutes)
    if (route == r.path) out += (out.empty() ? "" : ", ") + std::string(r.method);
  return out;
}

bool is_generation(const std::string& cp) {
  return cp == "/v1/chat/completions" || cp == "/v1/completions" || cp == "/api/chat" || cp == "/api/generate";
}

bool is_probe(const std::string& p) { return p == "/health" || p == "/ready" || p == "/metrics"; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX sequences decoded (a model id such as org/name may come encoded).
std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() + 0 && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Printable ASCII only, at most `max` bytes (a path or an id in a log line).
std::string log_text(std::string_view s, size_t max = 200) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > max) out += "...";
  return out;
}

// The log's form of an invalid-JSON error: where the parse failed, never the
// body's bytes (the client's message may quote what the parser last read,
// which can be a prompt).
std::string invalid_json_log(const std::string& message) {
  std::string out = "the request body is not valid JSON";
  static const std::regex kWhere(R"((line \d+, column \d+|(byte|offset|position) \d+))");
  std::smatch m;
  const std::string head = message.substr(0, 400);
  if (std::regex_search(head, m, kWhere)) out += " (at " + m.str(1) + ")";
  return out;
}

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];  // room for any int fields, so no truncation warning
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string request_id_of(const HttpRequest& req) {
  if (const std::string* v = req.header("x-request-id")) {
    bool ok = !v->empty() && v->size() <= 128;
    for (const char c : *v) ok = ok && c >= 0x20 && c < 0x7f;
    if (ok) return *v;
  }
  thread_local std::mt19937_64 rng{std::random_device{}() ^
                                   static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  char buf[24];
  std::snprintf(buf, sizeof buf, "req-%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

HttpResponse json_response(std::string body) {
  HttpResponse r;
  r.body = std::move(body);
  return r;
}

HttpResponse api_error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status();
  r.body = error_body(e);
  return r;
}

HttpResponse unavailable(const std::string& message) {
  HttpResponse r = error_response(503, message);
  r.set_header("Retry-After", kRetryAfterS);
  return r;
}

HttpServer::HttpServer(HttpOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opts = std::move(opts);
  m.keys = ApiKeys(m.opts.api_keys);
  ConnOptions co;
  co.host = m.opts.host;
  co.port = m.opts.port;
  co.header_timeout_s = m.opts.header_timeout_s;
  co.timeout_s = m.opts.timeout_s;
  co.max_connections = m.opts.max_connections;
  co.workers = m.opts.http_threads > 0 ? m.opts.http_threads : 16;
  co.max_body_bytes = m.opts.max_body_bytes;
  co.max_buffered_bytes = m.opts.max_buffered_bytes;
  ConnHandlers h;
  h.check_head = [&m](const HttpRequest& req) { return m.check_head(req); };
  h.answer_now = [&m](const HttpRequest& req) { return m.answer_now(req); };
  h.answer_on_worker = [&m](const HttpRequest& req, ResponseWriter& w) { m.answer_on_worker(req, w); };
  // Counted before the response is written, so a client that reads /metrics next sees its own response.
  h.count_status = [&m](int status) { m.metrics.count_http(status); };
  h.begin = [&m](HttpRequest& req) { m.begin(req); };
  h.prepare = [&m](const HttpRequest& req, HttpResponse& r) { m.prepare(req, r); };
  h.done = [&m](const HttpRequest& req, int status) { m.done(req, status); };
  m.loop = std::make_unique<ConnectionLoop>(std::move(co), std::move(h));
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  impl_->host_check = HostCheck(impl_->opts.host, impl_->opts.host_allow, !impl_->opts.api_keys.empty());
  const int port = impl_->loop->bind();
  impl_->bound = true;
  return port;
}

void HttpServer::start() {
  OG_CHECK(impl_->bound, "HttpServer::start before bind");
  impl_->loop->start();
}

void HttpServer::set_model(const ServedModel& model, SchedulerPort& sched) {
  impl_->sched.store(&sched);
  impl_->model.store(&model);
}

void HttpServer::drain() { impl_->draining.store(true); }

bool HttpServer::wait_idle(double seconds) {
  Impl::InFlight& f = *impl_->in_flight;
  std::unique_lock<std::mutex> lock(f.mu);
  return f.idle.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return f.total() == 0; });
}

void HttpServer::stop() {
  if (!impl_->bound) return;
  impl_->loop->stop();
  impl_->bound = false;
}

int HttpServer::in_flight() const { return impl_->in_flight->total(); }

int HttpServer::open_connections() const { return impl_->loop->open_connections(); }

int HttpServer::max_connections() const { return impl_->loop->max_connections(); }

int64_t HttpServer::buffered_request_bytes() const { return impl_->loop->buffered_bytes(); }

ServerMetrics& HttpServer::metrics() { return impl_->metrics; }

std::optional<HttpResponse> HttpServer::Impl::check_head(const HttpRequest& req) {
  // First of all: a page reaching the server by DNS rebinding gets nothing, not even a 404.
  if (const std::string* host = req.header("host"); !host_check.allows(host)) {
    std::string served = host_check.describe();
    if (served.size() > 160) served = served.substr(0, utf8_prefix(served, 160)) + ", ...";
    return api_error_response(ApiError(403, "permission_error", "host_not_allowed",
                                       "the Host header " + client_text(*host) + " names no address of this server (" +
                                           served + "); to serve another name, start it with --host-allow NAME"));
  }
  bool path_known = false;
  const Route* r = find_route(req.path, req.method, &path_known);
  // A CORS preflight from an allowed origin, before any key is asked for;
  // from another origin (or with CORS off) OPTIONS is 405 like any method a route lacks.
  const RequestContext* ctx = request_context(req);
  if (req.method == "OPTIONS" && path_known && ctx && !ctx->allow_origin.empty()) {
    HttpResponse res;
    res.status = 204;
    res.content_type.clear();
    res.set_header("Access-Control-Allow-Methods", allowed_methods(req.path) + ", OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id");
    res.set_header("Access-Control-Max-Age", "600");
    return res;
  }
  if (!r) {
    if (!path_known) return error_response(404, "no route " + client_text(req.method) + " " + client_text(req.path));
    HttpResponse res = error_response(405, "method " + client_text(req.method) + " is not allowed on " + req.path);
    res.set_header("Allow", allowed_methods(req.path));
    return res;
  }
  if (req.content_length > opts.max_body_bytes) {
    const std::string len = req.content_length == HttpRequest::kHugeLength ? req.header_value("content-length")
                                                                            : std::to_string(req.content_length);
    HttpResponse res = error_response(413, "the request body is " + len + " bytes; this server takes at most " +
                                               std::to_string(opts.max_body_bytes) + " (--max-body-bytes)");
    res.close = true;
    return res;
  }
  if (req.header_value("content-type").rfind("multipart/form-data", 0) == 0)
    return error_response(415, "the request body must be JSON, not multipart");
  if (r->needs_key && !keys.allows(req.header_value("authorization"))) {
    HttpResponse res = api_error_response(ApiError(401, "authentication_error", "invalid_api_key",
                                                   req.header("authorization")
                                                       ? "the API key is not valid"
                                                       : "an API key is required (Authorization: Bearer KEY)"));
    res.set_header("WWW-Authenticate", "Bearer");
    return res;
  }
  if (r->needs_model && !model.load()) return unavailable("the model is loading");
  return std::nullopt;
}

// The answers that cost the loop microseconds: never a lock held across a
// model step (the scheduler's snapshot is a copy under its own mutex).
std::optional<HttpResponse> HttpServer::Impl::answer_now(const HttpRequest& req) {
  const std::string p = canonical_path(req.path);
  if (is_webui_path(p)) return webui_response(req, opts.webui);
  if (p == "/health" || p == "/ready") {
    if (!model.load()) return unavailable("the model is loading");
    if (draining.load()) return unavailable("the server is shutting down");
    return json_response(p == "/health" ? "{\"status\":\"ok\"}" : "{\"status\":\"ready\"}");
  }
  if (p == "/metrics") {
    const ServedModel* m = model.load();
    SchedulerPort* s = sched.load();
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = render_prometheus(s ? s->snapshot() : SchedulerSnapshot{}, metrics, m ? m->id : "");
    return r;
  }
  if (p == "/v1/models") {
    const ServedModel& m = *model.load();
    return json_response(models_body(m.id, m.created, m.max_session_tokens));
  }
  if (route_of(p) == "/v1/models/{id}") {
    const ServedModel& m = *model.load();
    const std::string id = percent_decode(std::string_view(p).substr(kModelPrefix.size()));
    if (id != m.id)
      return api_error_response(ApiError(404, "invalid_request_error", "model_not_found",
                                         "The model " + client_text(id) +
                                             " does not exist or you do not have access to it; this server serves '" +
                                             m.id + "'",
                                         "model"));
    return json_response(model_body(m.id, m.created, m.max_session_tokens));
  }
  if (auto r = ollama_answer_now(req)) return r;
  if (is_generation(p) && draining.load()) return unavailable("the server is shutting down");
  return std::nullopt;
}

void HttpServer::Impl::answer_on_worker(const HttpRequest& req, ResponseWriter& w) {
  // Once part of a response is written an error can no longer be sent: the
  // connection is closed instead (the writer is then not reusable).
  auto answer = [&](const HttpResponse& r) {
    if (!w.started()) w.send(r);
  };
  const std::string p = canonical_path(req.path);
  // In flight from here (parsing and rendering can take long); a generation
  // request from its check that the server is not draining.
  std::optional<Preparing> counted;
  if (!is_generation(p)) counted.emplace(*in_flight);
  // A render (a prompt's, /apply-template's) stops once nobody wants its result:
  // the client left, the server stops, or a generation could no longer be
  // scheduled because the server drains (the meter asks every 10 ms).
  auto unwanted = [&] { return w.client_gone() || (is_generation(p) && draining.load()); };
  const jinja::CancelCheck cancel(unwanted);
  // An error caused by the cancel is answered as such, not as the route's 400.
  auto answer_error = [&](const HttpResponse& r) {
    if (!unwanted()) return answer(r);
    if (draining.load() && !w.client_gone()) return answer(unavailable("the server is shutting down"));
    answer(api_error_response(ApiError(499, "invalid_request_error", "client_closed", "the client closed the connection")));
  };
  try {
    if (is_ollama_path(p)) return handle_ollama(req, w);
    if (p == "/v1/embeddings") return answer(json_response(handle_embeddings(*model.load(), req.body)));
    if (is_generation(p) && !model.load()->generates)
      bad_request("the model '" + model.load()->id + "' only embeds (bidirectional attention): use /v1/embeddings",
                  "model", "model_not_generative");
    if (p == "/v1/chat/completions") return handle_generation(Endpoint::kChat, req, w);
    if (p == "/v1/completions") return handle_generation(Endpoint::kCompletion, req, w);
    if (req.path == "/tokenize") return answer(handle_tokenize(req.body));
    if (req.path == "/detokenize") return answer(handle_detokenize(req.body));
    if (req.path == "/apply-template") return answer(handle_apply_template(req.body));
    answer(error_response(404, "no route " + client_text(req.path)));
  } catch (const ApiError& e) {
    answer_error(api_error_response(e));
  } catch (const og::Error& e) {
    answer_error(error_response(500, e.what()));
  } catch (const std::bad_alloc&) {
    answer(error_response(500, "out of memory"));
  } catch (const std::exception& e) {
    answer(error_response(500, std::string("internal error: ") + e.what()));
  } catch (...) {
    answer(error_response(500, "internal error"));
  }
}

void HttpServer::Impl::begin(HttpRequest& req) {
  auto ctx = std::make_shared<RequestContext>();
  ctx->id = request_id_of(req);
  if (!opts.cors_origins.empty()) {
    if (const std::string* origin = req.header("origin")) {
      for (const std::string& o : opts.cors_origins) {
        if (o == "*") ctx->allow_origin = "*";
        else if (o == *origin && ctx->allow_origin.empty()) ctx->allow_origin = *origin;
      }
    }
  }
  req.context = std::move(ctx);
}

void HttpServer::Impl::prepare(const HttpRequest& req, HttpResponse& r) {
  RequestContext* ctx = request_context(req);
  if (!ctx) return;
  r.set_header("X-Request-Id", ctx->id);
  if (!ctx->allow_origin.empty()) {
    r.set_header("Access-Control-Allow-Origin", ctx->allow_origin);
    r.set_header("Access-Control-Expose-Headers", "X-Request-Id");
    r.set_header("Vary", "Origin");
  }
  if (r.status >= 400 && ctx->error.empty()) {
    const json j = json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message") &&
        j["error"]["message"].is_string()) {
      ctx->error = j["error"]["message"].get<std::string>();
      if (j["error"].value("code", json()) == "invalid_json") ctx->error = invalid_json_log(ctx->error);
    }
  }
  ollama_error_shape(req, r);
}

void HttpServer::Impl::done(const HttpRequest& req, int status) {
  if (!opts.access_log) return;
  const RequestContext* ctx = request_context(req);
  if (!ctx) return;
  if (is_probe(req.path) && !opts.log_probes) return;
  const double total_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - ctx->start).count();
  // A head that could not be read has no method or path: "-".
  const std::string method = req.method.empty() ? "-" : log_text(req.method, 16);
  const std::string path = req.path.empty() ? "-" : log_text(req.path);
  std::string text = method + " " + path + " " + std::to_string(status) + " " + fixed1(total_ms) + "ms";
  json j = {{"method", method}, {"path", path}, {"status", status}, {"total_ms", std::round(total_ms * 10) / 10}};
  if (ctx->generation) {
    text += " prompt=" + std::to_string(ctx->prompt_tokens) + " cached=" + std::to_string(ctx->cached_tokens) +
            " generated=" + std::to_string(ctx->generated_tokens);
    j["prompt_tokens"] = ctx->prompt_tokens;
    j["cached_tokens"] = ctx->cached_tokens;
    j["generated_tokens"] = ctx->generated_tokens;
    if (ctx->ttft_ms >= 0) {
      text += " ttft=" + fixed1(ctx->ttft_ms) + "ms";
      j["ttft_ms"] = std::round(ctx->ttft_ms * 10) / 10;
    }
    if (!ctx->finish.empty()) {
      text += " finish=" + ctx->finish;
      j["finish_reason"] = ctx->finish;
    }
    if (ctx->client_closed) {
      text += " client=closed";
      j["client_closed"] = true;
    }
  }
  text += " id=" + log_text(ctx->id);
  j["request_id"] = ctx->id;
  if (status >= 400 && !ctx->error.empty()) {
    text += " error: " + log_text(ctx->error, 300);
    j["error"] = ctx->error;
  }
  emit(text, std::move(j));
}

void HttpServer::Impl::emit(const std::string& text, json j) {
  std::string line;
  if (opts.log_json) {
    json out = {{"time", utc_now()}};
    out.update(j);
    line = out.dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    line = utc_now() + " " + one_line(text);
  }
  if (opts.log) opts.log(line);
  else std::fprintf(stderr, opts.log_json ? "%s\n" : "[serve] %s\n", line.c_str());
}

void HttpServer::Impl::log_ignored(const std::vector<std::string>& fields) {
  if (fields.empty()) return;
  std::vector<std::string> fresh;
  {
    std::lock_guard<std::mutex> lock(ignored_mu);
    for (const std::string& f : fields) {
      if (ignored_seen.size() >= 1024) break;  // a client inventing names cannot grow this without bound
      if (ignored_seen.insert(f).second) fresh.push_back(f);
    }
  }
  for (const std::string& f : fresh) {
    const std::string line = "ignoring request field " + client_text(f) + " (not a setting this server knows; logged once)";
    emit(line, {{"level", "warning"}, {"message", line}});
  }
}

HttpResponse HttpServer::Impl::handle_tokenize(const std::string& body) {
  const ServedModel& m = *model.load();
  const TokenizeRequest r = parse_tokenize_request(parse_json_object(body));
  check_model(r.model, m);
  log_ignored(r.ignored);
  std::vector<int32_t> ids;
  if (r.use_messages && !chat_images(r.chat).empty()) {
    // The prompt a chat request with these images runs (vLLM's /tokenize counts
    // the expanded placeholders): each image's run of soft-token rows, through
    // the tower as /v1/chat/completions encodes them, and its 400s.
    GenerationRequest g;
    g.endpoint = Endpoint::kChat;
    g.chat = r.chat;
    g.forms = r.forms;
    std::vector<RequestImage> images;
    ids = encode_prompt(g, m, nullptr, 0, &images);
    return json_response(dump_json({{"tokens", ids}, {"count", ids.size()}, {"max_model_len", m.max_session_tokens}}));
  }
  try {
    ids = r.use_messages ? encode_chat(*m.tok, chat_segments(m, r.chat, r.forms), true)
                         : m.tok->encode(r.prompt, r.add_special, /*parse_special=*/false);
  } catch (const og::Error& e) {
    bad_request(std::string("cannot tokenize: ") + e.what(), r.use_messages ? "messages" : "prompt");
  }
  json j = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", m.max_session_tokens}};
  return json_response(dump_json(j));
}

HttpResponse HttpServer::Impl::handle_apply_template(const std::string& body) {
  const ServedModel& m = *model.load();
  const ApplyTemplateRequest r = parse_apply_template_request(parse_json_object(body));
  check_model(r.model, m);
  log_ignored(r.ignored);
  std::string prompt;
  try {
    const bool tools = !r.chat.tools.empty();
    if ((tools && m.tool_use ? m.tool_use : m.tmpl)->renders_requests()) {
      // As `offgraph template` prints it (BOS text kept).
      prompt = request_text(m, r.forms.template_request, tools);
    } else {
      prompt = chat_text(chat_segments(m, r.chat, r.forms));
    }
  } catch (const og::Error& e) {
    bad_request(std::string("the template cannot render this request: ") + e.what(), "messages");
  }
  return json_response(dump_json({{"prompt", prompt}}));
}

HttpResponse HttpServer::Impl::handle_detokenize(const std::string& body) {
  const ServedModel& m = *model.load();
  const DetokenizeRequest r = parse_detokenize_request(parse_json_object(body));
  check_model(r.model, m);
  if (const auto bad = first_bad_token_id(r.tokens, m.tok->n_vocab()))
    bad_request("'tokens[" + std::to_string(bad->index) + "]': " + bad->message, "tokens");
  const std::vector<int32_t> ids(r.tokens.begin(), r.tokens.end());
  return json_response(dump_json({{"prompt", m.tok->decode(ids)}}));
}

}  // namespace og::server
