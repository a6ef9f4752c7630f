// HttpServer's private state, shared by http_server.cpp (routes, checks,
// tokenize) and generation_http.cpp (completions, whole and streamed). Only
// these two files include httplib.h.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/auth.h"
#include "server/http_server.h"

namespace og::server {

void send_error(httplib::Response& res, const ApiError& e);
void send_error(httplib::Response& res, int status, const std::string& message);

// httplib's server with a listen backlog fit for many clients at once: the
// library listens with a backlog of 5, and a burst of connections beyond it
// overflows the accept queue (clients then see resets and stalls).
class BackloggedServer : public httplib::Server {
 public:
  // Re-listens on the bound socket with `backlog` (Linux updates it in place).
  bool set_backlog(int backlog);
};

struct HttpServer::Impl {
  using BodyHandler = std::function<void(const httplib::Request&, const std::string& body, httplib::Response&)>;

  HttpOptions opts;
  ApiKeys keys;
  BackloggedServer svr;
  std::thread thread;
  bool bound = false;
  ServerMetrics metrics;
  std::atomic<const ServedModel*> model{nullptr};
  std::atomic<SchedulerPort*> sched{nullptr};
  std::atomic<bool> draining{false};

  // Generation requests submitted whose answer is not finished, or whose
  // on_finish has not come yet: the server's count is never below the
  // scheduler's, so the scheduler's own queue bound is never the one hit.
  std::atomic<int> in_flight{0};
  std::mutex idle_mu;
  std::condition_variable idle_cv;

  void install();
  // The pre-routing checks; false when `res` already holds the answer.
  bool check_request(const httplib::Request& req, httplib::Response& res);
  // A POST route whose body is read with the size bound, errors answered.
  void post(const char* path, BodyHandler h);

  void handle_generation(Endpoint ep, const httplib::Request& req, const std::string& body, httplib::Response& res);
  void handle_tokenize(const std::string& body, httplib::Response& res);
  void handle_detokenize(const std::string& body, httplib::Response& res);

  // Takes a slot (429 when max_in_flight are taken) / gives it back.
  void acquire_slot();
  void release_slot();
};

}  // namespace og::server
