// The HTTP server: route table, the checks made before a body is read (route,
// method, size, key, readiness), and the handlers. Generation answers are
// written by generation_http.cpp; this file owns the httplib server itself.
#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/auth.h"
#include "server/generation.h"
#include "server/http_internal.h"

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
constexpr Route kRoutes[] = {
    {"GET", "/health", false, false},           {"GET", "/ready", false, false},
    {"GET", "/metrics", false, false},          {"GET", "/v1/models", true, true},
    {"POST", "/v1/chat/completions", true, true}, {"POST", "/v1/completions", true, true},
    {"POST", "/tokenize", true, true},          {"POST", "/detokenize", true, true},
};

const Route* find_route(const std::string& path, const std::string& method, bool* path_known) {
  *path_known = false;
  for (const auto& r : kRoutes) {
    if (path != r.path) continue;
    *path_known = true;
    if (method == r.method || (method == "HEAD" && std::string(r.method) == "GET")) return &r;
  }
  return nullptr;
}

std::string allowed_methods(const std::string& path) {
  std::string out;
  for (const auto& r : kRoutes)
    if (path == r.path) out += (out.empty() ? "" : ", ") + std::string(r.method);
  return out;
}

constexpr int kListenBacklog = 1024;

}  // namespace

bool BackloggedServer::set_backlog(int backlog) {
  const socket_t fd = svr_sock_;
  return fd != INVALID_SOCKET && ::listen(fd, backlog) == 0;
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_content(error_body(e), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(error_body(status, message), "application/json");
}

HttpServer::HttpServer(HttpOptions opts) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
  impl_->keys = ApiKeys(impl_->opts.api_keys);
  impl_->install();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  const int port = impl_->opts.port == 0 ? impl_->svr.bind_to_any_port(impl_->opts.host)
                                         : (impl_->svr.bind_to_port(impl_->opts.host, impl_->opts.port)
                                                ? impl_->opts.port
                                                : -1);
  if (port < 0) fail("cannot listen on ", impl_->opts.host, ":", impl_->opts.port, " (address in use or not local?)");
  OG_CHECK(impl_->svr.set_backlog(kListenBacklog), "cannot set the listen backlog on ", impl_->opts.host, ":", port);
  impl_->bound = true;
  return port;
}

void HttpServer::start() {
  OG_CHECK(impl_->bound, "HttpServer::start before bind");
  impl_->thread = std::thread([this] { impl_->svr.listen_after_bind(); });
}

void HttpServer::set_model(const ServedModel& model, SchedulerPort& sched) {
  impl_->sched.store(&sched);
  impl_->model.store(&model);
}

void HttpServer::drain() { impl_->draining.store(true); }

bool HttpServer::wait_idle(double seconds) {
  std::unique_lock<std::mutex> lock(impl_->idle_mu);
  return impl_->idle_cv.wait_for(lock, std::chrono::duration<double>(seconds),
                                 [&] { return impl_->in_flight.load() == 0; });
}

void HttpServer::stop() {
  if (!impl_->bound) return;
  impl_->svr.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->bound = false;
}

int HttpServer::in_flight() const { return impl_->in_flight.load(); }

ServerMetrics& HttpServer::metrics() { return impl_->metrics; }

void HttpServer::Impl::install() {
  const int threads = opts.http_threads > 0 ? opts.http_threads : 16;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr.set_read_timeout(opts.timeout_s, 0);
  svr.set_write_timeout(opts.timeout_s, 0);
  svr.set_payload_max_length(static_cast<size_t>(opts.max_body_bytes));
  // httplib's default sets SO_REUSEPORT, which lets a second server bind the same
  // port and take half the connections; SO_REUSEADDR alone allows a quick restart.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return check_request(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                   : httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib sets itself (a malformed request line, an unreadable body)
  // get OpenAI's error shape too.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string msg = res.status == 413   ? "the request body is too large"
                            : res.status == 404 ? "no such route"
                                                : "bad HTTP request (status " + std::to_string(res.status) + ")";
    res.set_content(error_body(res.status, msg), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      send_error(res, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      send_error(res, 500, "internal error");
    }
  });
  // Counted before the response is written, so a client that reads /metrics next sees its own response.
  svr.set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) { metrics.count_http(res.status); });

  svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!model.load()) return send_error(res, 503, "the model is loading");
    if (draining.load()) return send_error(res, 503, "the server is shutting down");
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  svr.Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    if (!model.load()) return send_error(res, 503, "the model is loading");
    if (draining.load()) return send_error(res, 503, "the server is shutting down");
    res.set_content("{\"status\":\"ready\"}", "application/json");
  });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const ServedModel* m = model.load();
    SchedulerPort* s = sched.load();
    res.set_content(render_prometheus(s ? s->snapshot() : SchedulerSnapshot{}, metrics, m ? m->id : ""),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  svr.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const ServedModel& m = *model.load();
    res.set_content(models_body(m.id, m.created, m.max_session_tokens), "application/json");
  });
  post("/v1/chat/completions", [this](const httplib::Request& req, const std::string& body, httplib::Response& res) {
    handle_generation(Endpoint::kChat, req, body, res);
  });
  post("/v1/completions", [this](const httplib::Request& req, const std::string& body, httplib::Response& res) {
    handle_generation(Endpoint::kCompletion, req, body, res);
  });
  post("/tokenize", [this](const httplib::Request&, const std::string& body, httplib::Response& res) {
    handle_tokenize(body, res);
  });
  post("/detokenize", [this](const httplib::Request&, const std::string& body, httplib::Response& res) {
    handle_detokenize(body, res);
  });
}

bool HttpServer::Impl::check_request(const httplib::Request& req, httplib::Response& res) {
  bool path_known = false;
  const Route* r = find_route(req.path, req.method, &path_known);
  if (!r) {
    if (!path_known) {
      send_error(res, 404, "no route " + req.method + " " + req.path);
    } else {
      res.set_header("Allow", allowed_methods(req.path));
      send_error(res, 405, "method " + req.method + " is not allowed on " + req.path);
    }
    return false;
  }
  if (req.has_header("Content-Length")) {
    const std::string len = req.get_header_value("Content-Length");
    const bool numeric = !len.empty() && len.find_first_not_of("0123456789") == std::string::npos;
    if (!numeric) return send_error(res, 400, "bad Content-Length header: '" + len + "'"), false;
    if (len.size() > 18 || std::stoll(len) > opts.max_body_bytes) {
      res.set_header("Connection", "close");
      send_error(res, 413, "the request body is " + len + " bytes; this server takes at most " +
                               std::to_string(opts.max_body_bytes) + " (--max-body-bytes)");
      return false;
    }
  }
  if (req.is_multipart_form_data()) return send_error(res, 415, "the request body must be JSON, not multipart"), false;
  if (r->needs_key && !keys.allows(req.get_header_value("Authorization"))) {
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, ApiError(401, "authentication_error", "invalid_api_key",
                             req.has_header("Authorization") ? "the API key is not valid"
                                                             : "an API key is required (Authorization: Bearer KEY)"));
    return false;
  }
  if (r->needs_model && !model.load()) return send_error(res, 503, "the model is loading"), false;
  return true;
}

void HttpServer::Impl::post(const char* path, BodyHandler h) {
  svr.Post(path, [this, h](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    std::string body;
    bool over = false;
    const bool ok = reader([&](const char* data, size_t n) {
      if (static_cast<int64_t>(body.size() + n) > opts.max_body_bytes) {
        over = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (!ok || over) {
      res.set_header("Connection", "close");
      if (over || res.status == 413)
        return send_error(res, 413, "the request body is larger than this server takes (" +
                                        std::to_string(opts.max_body_bytes) + " bytes, --max-body-bytes)");
      return send_error(res, 400, "the request body could not be read");
    }
    try {
      h(req, body, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const og::Error& e) {
      send_error(res, 500, e.what());
    } catch (const std::bad_alloc&) {
      send_error(res, 500, "out of memory");
    }
  });
}

void HttpServer::Impl::handle_tokenize(const std::string& body, httplib::Response& res) {
  const ServedModel& m = *model.load();
  const TokenizeRequest r = parse_tokenize_request(parse_json_object(body));
  check_model(r.model, m);
  std::vector<int32_t> ids;
  try {
    ids = r.use_messages ? encode_chat(*m.tok, m.tmpl->render_segments(r.messages, r.add_generation_prompt), true)
                         : m.tok->encode(r.prompt, r.add_special, /*parse_special=*/false);
  } catch (const og::Error& e) {
    bad_request(std::string("cannot tokenize: ") + e.what(), r.use_messages ? "messages" : "prompt");
  }
  json j = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", m.max_session_tokens}};
  res.set_content(dump_json(j), "application/json");
}

void HttpServer::Impl::handle_detokenize(const std::string& body, httplib::Response& res) {
  const ServedModel& m = *model.load();
  const DetokenizeRequest r = parse_detokenize_request(parse_json_object(body));
  check_model(r.model, m);
  std::vector<int32_t> ids;
  const int64_t n_vocab = m.tok->n_vocab();
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    if (r.tokens[i] >= n_vocab)
      bad_request("'tokens[" + std::to_string(i) + "]' is " + std::to_string(r.tokens[i]) +
                      ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")",
                  "tokens");
    ids.push_back(static_cast<int32_t>(r.tokens[i]));
  }
  res.set_content(dump_json({{"prompt", m.tok->decode(ids)}}), "application/json");
}

}  // namespace og::server
