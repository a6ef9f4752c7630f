// The server's connection layer: one event-loop thread (epoll on Linux,
// poll(2) elsewhere or under OFFGRAPH_PORTABLE=1: poller.h; non-blocking
// sockets) accepts connections and reads and parses request heads and bodies
// without tying up a worker, so idle, slow or half-sent connections cost a
// socket and a little memory, never a thread. Deadlines: the head must arrive
// within header_timeout_s of the connection opening (or of the previous
// response, on keep-alive), the body within timeout_s of the head. Beyond
// max_connections open sockets a new one is answered 503 by the loop and
// closed. Cheap requests are answered on the loop; the rest (generation,
// which may stream for minutes) run on a bounded pool of worker threads that
// write through a ResponseWriter and then hand the connection back to the
// loop for its next request (keep-alive; pipelined bytes are kept).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/http_parser.h"
#include "server/http_writer.h"

namespace og::server {

struct ConnOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port
  int header_timeout_s = 10;
  int timeout_s = 600;
  int max_connections = 4096;  // lowered to what the open-file limit allows
  int workers = 16;
  int64_t max_body_bytes = 8 << 20;
  size_t max_head_bytes = 32 << 10;  // request line + headers (431 beyond)
  // Request bytes held for all connections together (503 beyond); never
  // less than one largest request.
  int64_t max_buffered_bytes = int64_t{256} << 20;
};

// What the routes do; every callback must not throw.
struct ConnHandlers {
  // On the loop once the head is read: a response answers the request without
  // its body being read (the connection then closes if a body was declared).
  std::function<std::optional<HttpResponse>(const HttpRequest&)> check_head;
  // On the loop once the body is read: the response, or nullopt when the
  // request must run on a worker. Must never block.
  std::function<std::optional<HttpResponse>(const HttpRequest&)> answer_now;
  // On a worker thread.
  std::function<void(const HttpRequest&, ResponseWriter&)> answer_on_worker;
  // Each response's status, before it is written (any thread).
  std::function<void(int)> count_status;
  // Optional. begin: once a request's head is read (or before an error
  // answers a head that could not be parsed), on the loop. prepare: every
  // response of the request, before it is written (headers added: request
  // id, CORS). done: once the request is answered (status 0: nothing was
  // written), on the thread that answered it.
  std::function<void(HttpRequest&)> begin;
  std::function<void(const HttpRequest&, HttpResponse&)> prepare;
  std::function<void(const HttpRequest&, int status)> done;
};

class ConnectionLoop {
 public:
  ConnectionLoop(ConnOptions opts, ConnHandlers handlers);
  ~ConnectionLoop();  // stops
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  // Raises the open-file soft limit to the hard limit, binds and listens;
  // returns the port. og::Error naming host:port when it cannot.
  int bind();
  // Starts the loop and the workers (bind() first).
  void start();
  // Closes the listening socket and every connection; a worker's socket is
  // shut down so that its writes fail and its request sees the client gone;
  // joins the threads. Idempotent.
  void stop();

  int open_connections() const;
  int max_connections() const;  // as capped by the open-file limit (after bind())
  int64_t buffered_bytes() const;  // request bytes the connections hold now
  const std::string& poller_name() const;  // "epoll" or "poll" once started ("" before)

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace og::server
