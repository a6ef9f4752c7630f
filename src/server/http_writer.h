// Responses: the HttpResponse a route builds, its serialized form, and the
// ResponseWriter a worker thread answers through: whole responses or a
// chunked stream (Server-Sent Events), written to the connection's
// non-blocking socket with blocking semantics under one stall deadline
// (--timeout-s: a write that the client does not take any byte of for that
// long fails, and the connection is dropped).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace og::server {

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Allow, Retry-After, ...)
  std::string body;
  bool close = false;  // "Connection: close": the connection ends after this response

  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
};

// An OpenAI-shaped JSON error response.
HttpResponse error_response(int status, const std::string& message);

// The status line and headers (with Content-Length = body size unless
// `chunked`), then the body unless `head_only` (a HEAD request) or `chunked`.
// `keep_alive` false adds "Connection: close"; true for an HTTP/1.0 client
// (`http10`) adds "Connection: keep-alive", which 1.0 needs to keep it.
std::string serialize_response(const HttpResponse& r, bool keep_alive, bool head_only, bool chunked = false,
                               bool http10 = false);

// Answers one request on a worker thread. Not thread-safe; one per request.
class ResponseWriter {
 public:
  // fd: the connection's socket (non-blocking; the writer polls). keep_alive:
  // whether the request lets the connection go on. http11: chunked streams
  // allowed (else a stream is sent raw and the connection closed after it).
  // on_status counts each response's status before it is written. stopping:
  // set when the server stops (writes then fail at once).
  ResponseWriter(int fd, bool keep_alive, bool http11, bool head_only, int timeout_s,
                 std::function<void(int)> on_status, const std::atomic<bool>* stopping);

  // A whole response; false when it could not be written.
  bool send(const HttpResponse& r);
  // A chunked response whose body follows in stream() calls, ended by end_stream().
  bool start_stream(const HttpResponse& head);
  bool stream(std::string_view data);
  bool end_stream();

  // The client closed its connection (or the server is stopping); never blocks.
  bool client_gone() const;
  // Whether the connection may serve another request: the request allowed it,
  // the response was complete and every write succeeded.
  bool reusable() const { return keep_alive_ && complete_ && !failed_; }
  bool started() const { return started_; }
  // The status of the response written (0 before one).
  int status() const { return status_; }
  // Called on every response (whole or a stream's head) before it is written.
  void set_prepare(std::function<void(HttpResponse&)> f) { prepare_ = std::move(f); }

 private:
  bool write_all(std::string_view data);

  int fd_;
  bool keep_alive_, http11_, head_only_;
  std::chrono::seconds timeout_;
  std::function<void(int)> on_status_;
  std::function<void(HttpResponse&)> prepare_;
  int status_ = 0;
  const std::atomic<bool>* stopping_;
  bool started_ = false, complete_ = false, failed_ = false, chunked_ = false;
};

}  // namespace og::server
