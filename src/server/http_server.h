// HttpServer: the OpenAI-compatible HTTP front of the scheduler, on
// cpp-httplib. It listens before the model is loaded (/health answers 503
// "loading" until set_model()), checks API keys and body sizes before reading
// bodies, parses requests strictly into native structs, submits them through
// a SchedulerPort and answers whole or as Server-Sent Events. A client that
// goes away mid-stream has its request cancelled. Route table:
//
//   GET  /health               200 {"status":"ok"} | 503 loading/shutting down   (open)
//   GET  /ready                200 when serving | 503                              (open)
//   GET  /metrics              Prometheus text                                     (open)
//   GET  /v1/models            the served model                                    (key)
//   POST /v1/chat/completions  chat; stream / whole                                (key)
//   POST /v1/completions       text or token-id prompt                             (key)
//   POST /tokenize             text or messages -> ids                             (key)
//   POST /detokenize           ids -> text                                         (key)
//
// Errors are OpenAI's {"error": {...}}: 400 bad request, 401 key, 404 route,
// 405 method, 413 body, 429 too many requests in flight, 500 engine failure,
// 503 loading or shutting down.
#pragma once

#include <cstdint>
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
  int timeout_s = 600;  // socket read/write timeout: how long a client may stall
  // Generation requests in flight (running + waiting) beyond which new ones get
  // 429; 0 = unbounded.
  int max_in_flight = 0;
  int http_threads = 16;  // connections served at once (each stream holds one)
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
  // Shutdown, step 2: waits until no generation request is being answered;
  // false on timeout.
  bool wait_idle(double seconds);
  // Shutdown, step 3: closes the listening socket and joins the threads.
  void stop();

  int in_flight() const;  // generation requests submitted and not yet answered
  ServerMetrics& metrics();

  struct Impl;  // http_internal.h (kept out of this header with httplib)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace og::server
