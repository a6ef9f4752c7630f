// HttpServer's private state, shared by http_server.cpp (routes, checks,
// cheap answers, tokenize) and generation_http.cpp (completions, whole and
// streamed). The connections themselves live in http_conn.h.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/auth.h"
#include "server/http_conn.h"
#include "server/http_server.h"

namespace og::server {

// The Retry-After a 503 carries (seconds): while loading or shutting down a
// client should come back later, or go to another replica.
inline constexpr const char* kRetryAfterS = "5";

HttpResponse json_response(std::string body);
HttpResponse api_error_response(const ApiError& e);
// 503 with Retry-After.
HttpResponse unavailable(const std::string& message);

// What the server keeps about one request (HttpRequest::context): its id,
// its CORS answer and the access log's fields.
struct RequestContext {
  std::string id;  // X-Request-Id
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::string allow_origin;  // Access-Control-Allow-Origin's value; "" = no CORS headers
  std::string error;         // the message of an error answer
  bool generation = false;   // the token fields below are set
  int64_t prompt_tokens = 0, cached_tokens = 0, generated_tokens = 0;
  double ttft_ms = -1;  // < 0: no token came
  std::string finish;   // finish reason(s)
  bool client_closed = false;  // the client left before the answer ended
};

// The request's context (set by the server's begin hook), or nullptr.
inline RequestContext* request_context(const HttpRequest& req) {
  return static_cast<RequestContext*>(req.context.get());
}

// A client's X-Request-Id when usable (1-128 printable ASCII), else a fresh one.
std::string request_id_of(const HttpRequest& req);

struct HttpServer::Impl {
  HttpOptions opts;
  ApiKeys keys;
  HostCheck host_check;  // set by bind()
  std::unique_ptr<ConnectionLoop> loop;
  bool bound = false;
  // Shared with the callbacks of requests in the scheduler, which may outlive the server.
  std::shared_ptr<ServerMetrics> metrics_owner = std::make_shared<ServerMetrics>();
  ServerMetrics& metrics = *metrics_owner;
  std::atomic<const ServedModel*> model{nullptr};
  std::atomic<SchedulerPort*> sched{nullptr};
  std::atomic<bool> draining{false};

  // Generation requests submitted whose answer is not finished, or whose
  // on_finish has not come yet: the server's count is never below the
  // scheduler's, so the scheduler's own queue bound is never the one hit.
  // Shared with each request's slot, because a scheduler's last on_finish
  // may come after the server is gone (a test's teardown, an error path).
  // `preparing` counts the requests a worker is answering that hold no slot
  // (yet): a generation request while its body is parsed and its prompt
  // rendered, and the other worker routes (tokenize, apply-template,
  // embeddings), so that "in flight" and wait_idle() include them.
  struct InFlight {
    std::atomic<int> n{0};
    std::atomic<int> preparing{0};
    std::mutex mu;
    std::condition_variable idle;
    void release();            // a slot
    void release_preparing();  // a preparing request
    int total() const { return n.load() + preparing.load(); }
  };
  // Counts one request in InFlight::preparing until release() or its end.
  class Preparing {
   public:
    explicit Preparing(InFlight& f) : f_(f) { f_.preparing.fetch_add(1); }
    ~Preparing() { release(); }
    Preparing(const Preparing&) = delete;
    Preparing& operator=(const Preparing&) = delete;
    void release() {
      if (held_) f_.release_preparing();
      held_ = false;
    }

   private:
    InFlight& f_;
    bool held_ = true;
  };
  std::shared_ptr<InFlight> in_flight = std::make_shared<InFlight>();

  // ConnHandlers (http_conn.h): route checks on the head, the answers the
  // event loop gives itself, and the worker's answers.
  std::optional<HttpResponse> check_head(const HttpRequest& req);
  std::optional<HttpResponse> answer_now(const HttpRequest& req);
  void answer_on_worker(const HttpRequest& req, ResponseWriter& w);

  void handle_generation(Endpoint ep, const HttpRequest& req, ResponseWriter& w);
  HttpResponse handle_tokenize(const std::string& body);
  HttpResponse handle_detokenize(const std::string& body);
  HttpResponse handle_apply_template(const std::string& body);

  // ConnHandlers' begin / prepare / done: the request id, CORS headers and the access log.
  void begin(HttpRequest& req);
  void prepare(const HttpRequest& req, HttpResponse& r);
  void done(const HttpRequest& req, int status);
  // One log line: `text` in text format, `j` in JSON format (a "time" is added).
  void emit(const std::string& text, nlohmann::json j);

  // Logs each ignored request field's name the first time it is seen.
  void log_ignored(const std::vector<std::string>& fields);
  std::mutex ignored_mu;
  std::set<std::string> ignored_seen;

  // Takes a slot (429 when max_in_flight are taken); InFlight::release gives it back.
  void acquire_slot();

  // Ollama's API (ollama_routes.cpp, ollama_generation.cpp): the answers the
  // event loop gives (version, tags, ps), and the worker's routes.
  std::optional<HttpResponse> ollama_answer_now(const HttpRequest& req);
  void handle_ollama(const HttpRequest& req, ResponseWriter& w);
  void handle_ollama_generation(bool chat, const HttpRequest& req, ResponseWriter& w);
};

// A generation request's in-flight slot, released 1 + n times (the answer is
// done; each choice's on_finish came), then given back.
struct Slot {
  Slot(std::shared_ptr<HttpServer::Impl::InFlight> c, int choices) : count(std::move(c)), refs(1 + choices) {}
  void drop() {
    if (refs.fetch_sub(1) == 1) count->release();
  }
  std::shared_ptr<HttpServer::Impl::InFlight> count;
  std::atomic<int> refs;
};

// What every answer shape of a generation request shares (generation_http.cpp):
// the error a request that did not finish normally is answered with, whether
// it finished normally, and the access log's token fields from its choices'
// reports (null: unfinished; per_prompt: choices per prompt, which share it;
// client_left: the client closed the connection before the answer ended).
ApiError unfinished_error(const RequestReport& r);
bool normal_finish(const RequestReport& r);
void note_reports(const HttpRequest& req, const std::vector<const RequestReport*>& reports, int per_prompt,
                  bool client_left);

// Ollama's routes are the paths under /api/ (ollama_routes.cpp).
bool is_ollama_path(const std::string& path);
// An error answer on an /api/ path rewritten into Ollama's {"error": "text"}
// (the server's prepare hook, after the access log has its message).
void ollama_error_shape(const HttpRequest& req, HttpResponse& r);

}  // namespace og::server
