// HttpServer: the OpenAI-compatible HTTP front of the scheduler, on the
// server's own event-driven HTTP/1.1 layer (http_conn.h). It listens before
// the model is loaded (/health answers 503 "loading" until set_model()),
// checks routes, API keys and declared body sizes from the request head,
// parses requests strictly into native structs, submits them through a
// SchedulerPort and answers whole or as Server-Sent Events. /health, /ready
// and /metrics are answered by the event loop itself, so no number of idle or
// slow connections delays them; generation runs on the worker pool. A client
// that goes away mid-stream has its request cancelled. Route table:
//
//   GET  /                     the chat page, or "Ollama is running" (webui.h)  (open)
//   GET  /webui/{file}         the chat page's script and style                   (open)
//   GET  /health               200 {"status":"ok"} | 503 loading/shutting down   (open)
//   GET  /ready                200 when serving | 503                              (open)
//   GET  /metrics              Prometheus text                                     (open)
//   GET  /v1/models            the served model                                    (key)
//   GET  /v1/models/{id}       that model's object; another id 404 model_not_found (key)
//   POST /v1/chat/completions  chat; stream / whole                                (key)
//   POST /v1/completions       text or token-id prompt                             (key)
//   POST /tokenize             text or messages -> ids                             (key)
//   POST /detokenize           ids -> text                                         (key)
//   POST /apply-template       chat request -> the rendered prompt text            (key)
//   POST /v1/embeddings        text or token ids -> vectors (embeddings.h)        (key)
//
// Every /v1/... route also answers without the prefix (/chat/completions,
// /completions, /embeddings, /models, /models/{id}). A model that only embeds
// (bidirectional attention) answers the generation routes 400. With CORS on (cors_origins), an
// allowed Origin's responses carry Access-Control-Allow-Origin and an OPTIONS
// preflight on a known route answers 204 without a key; otherwise OPTIONS is
// 405. Every response carries X-Request-Id (the client's, when it sent a
// usable one). Each request is logged once answered (the access log).
//
// Errors are OpenAI's {"error": {...}}: 400 bad request, 401 key, 403 a Host
// that names no address of the server (HostCheck, auth.h), 404 route, 405
// method, 408 head or body too slow, 413 body, 429 too many requests in
// flight, 500 engine failure, 503 loading, shutting down (with Retry-After)
// or too many connections.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/backend.h"
#include "server/metrics.h"

namespace og::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port (bind() says which)
  std::vector<std::string> api_keys;  // empty = no key needed
  int64_t max_body_bytes = 8 << 20;
  // The request line and headers must arrive within this many seconds of the
  // connection opening (or of the previous response): 408, then closed.
  int header_timeout_s = 10;
  // One deadline for the rest: the body must arrive within timeout_s of the
  // head (else 408), and a response write the client takes no byte of for
  // timeout_s drops the connection. A stream that keeps flowing has no limit.
  int timeout_s = 600;
  // Open connections beyond which a new one is answered 503 and closed (also
  // capped by the open-file limit, which bind() raises to its hard limit).
  int max_connections = 4096;
  // Request bytes all connections together may hold while they are read
  // (slow senders' partial bodies): a read past it is answered 503.
  int64_t max_buffered_bytes = int64_t{256} << 20;
  // Generation requests in flight (running + waiting) beyond which new ones get
  // 429; 0 = unbounded.
  int max_in_flight = 0;
  // Worker threads: requests answered at once past the event loop
  // (generation, tokenize); each stream holds one while it runs.
  int http_threads = 16;
  // Where the server's own log lines go (one line each, no newline); null:
  // stderr, with a "[serve] " prefix in text format.
  std::function<void(const std::string&)> log;
  // Log lines as JSON objects (one per line) instead of text.
  bool log_json = false;
  // One access-log line per request once answered.
  bool access_log = true;
  // Whether /health, /ready and /metrics are in the access log (off: a load
  // balancer's probes do not flood it).
  bool log_probes = false;
  // Origins whose browser requests may read responses (CORS); "*" = any;
  // empty = CORS off: no CORS headers, OPTIONS is 405.
  std::vector<std::string> cors_origins;
  // Host header names served besides the listening address's (HostCheck in
  // auth.h: a mismatch is 403; "*" = any).
  std::vector<std::string> host_allow;
  // The chat page at / (webui.h); false (--no-webui): / answers only "Ollama is running".
  bool webui = true;
};

class HttpServer {
 public:
  explicit HttpServer(HttpOptions opts);
  ~HttpServer();  // stops the server if it runs
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; returns the port. og::Error when it cannot bind.
  int bind();
  // Serves on a background thread (bind() first).
  void start();
  // From now on requests reach the model. `model` and `sched` must outlive the
  // server (or the next stop()).
  void set_model(const ServedModel& model, SchedulerPort& sched);
  // Shutdown, step 1: new generation requests get 503, /health and /ready 503.
  void drain();
  // Shutdown, step 2: waits until no request is in flight (in_flight() is 0);
  // false on timeout.
  bool wait_idle(double seconds);
  // Shutdown, step 3: closes the listening socket and joins the threads.
  void stop();

  // Requests in flight: generation requests submitted and not yet answered,
  // and every request a worker is still parsing or rendering (a template
  // that renders slowly counts, as does one whose client has left).
  int in_flight() const;
  int open_connections() const;
  int max_connections() const;  // the cap in force (after bind())
  int64_t buffered_request_bytes() const;
  ServerMetrics& metrics();

  struct Impl;  // http_internal.h

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace og::server
