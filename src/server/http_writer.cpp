// Response serialization and the worker-side blocking writer.
#include "server/http_writer.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>

#include "server/api_response.h"
#include "server/connection_probe.h"
#include "server/http_parser.h"
#include "server/socket_ops.h"

namespace og::server {

HttpResponse error_response(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = error_body(status, message);
  return r;
}

std::string serialize_response(const HttpResponse& r, bool keep_alive, bool head_only, bool chunked, bool http10) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) + "\r\n";
  if (!r.content_type.empty()) out += "Content-Type: " + r.content_type + "\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  if (chunked) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (r.status != 204 && r.status != 304) {  // those two carry no body, nor its length
    out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  }
  if (!keep_alive) out += "Connection: close\r\n";
  if (keep_alive && http10) out += "Connection: keep-alive\r\n";
  out += "\r\n";
  if (!head_only && !chunked) out += r.body;
  return out;
}

ResponseWriter::ResponseWriter(int fd, bool keep_alive, bool http11, bool head_only, int timeout_s,
                               std::function<void(int)> on_status, const std::atomic<bool>* stopping)
    : fd_(fd),
      keep_alive_(keep_alive),
      http11_(http11),
      head_only_(head_only),
      timeout_(timeout_s),
      on_status_(std::move(on_status)),
      stopping_(stopping) {}

bool ResponseWriter::write_all(std::string_view data) {
  if (failed_) return false;
  // The one --timeout-s deadline: renewed whenever the client takes bytes, so
  // a stream may last for minutes but a client that stops reading is dropped
  // after timeout_s (not after a read timeout and then a write timeout).
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (!data.empty()) {
    if (stopping_ && stopping_->load()) return failed_ = true, false;
    const ssize_t n = send_nowait(fd_, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      deadline = std::chrono::steady_clock::now() + timeout_;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return failed_ = true, false;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::milliseconds(0)) return failed_ = true, false;
    // Short polls so that a stopping server is noticed.
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count();
    pollfd p{fd_, POLLOUT, 0};
    const int rc = poll(&p, 1, static_cast<int>(ms < 200 ? ms + 1 : 200));
    if (rc > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return failed_ = true, false;
  }
  return true;
}

bool ResponseWriter::send(const HttpResponse& orig) {
  HttpResponse prepared;
  if (prepare_) {
    prepared = orig;
    prepare_(prepared);
  }
  const HttpResponse& r = prepare_ ? prepared : orig;
  started_ = true;
  status_ = r.status;
  const bool keep = keep_alive_ && !r.close;
  if (!keep) keep_alive_ = false;
  if (on_status_) on_status_(r.status);
  complete_ = write_all(serialize_response(r, keep, head_only_, /*chunked=*/false, !http11_));
  return complete_;
}

bool ResponseWriter::start_stream(const HttpResponse& orig) {
  HttpResponse prepared;
  if (prepare_) {
    prepared = orig;
    prepare_(prepared);
  }
  const HttpResponse& head = prepare_ ? prepared : orig;
  started_ = true;
  status_ = head.status;
  chunked_ = http11_;
  if (!chunked_ || head.close) keep_alive_ = false;  // HTTP/1.0: the end of the stream is the close
  if (on_status_) on_status_(head.status);
  return write_all(serialize_response(head, keep_alive_, head_only_, chunked_));
}

bool ResponseWriter::stream(std::string_view data) {
  if (data.empty() || head_only_) return !failed_;
  if (!chunked_) return write_all(data);
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string chunk(size, static_cast<size_t>(n));
  chunk.append(data);
  chunk += "\r\n";
  return write_all(chunk);
}

bool ResponseWriter::end_stream() {
  complete_ = (!chunked_ || head_only_) ? !failed_ : write_all("0\r\n\r\n");
  return complete_;
}

bool ResponseWriter::client_gone() const {
  return failed_ || (stopping_ && stopping_->load()) || peer_closed(fd_);
}

}  // namespace og::server
