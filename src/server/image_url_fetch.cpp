// serve --allow-image-urls's fetch (image_url_fetch.h): a blocking-free
// HTTP/1.0 GET over one socket, every wait bounded by the deadline.
#include "server/image_url_fetch.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "base/error.h"
#include "server/socket_ops.h"

namespace og::server {

namespace {

std::mutex g_mu;
ImageUrlFetch g_fetch;

using Clock = std::chrono::steady_clock;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Milliseconds left before `deadline` (at least 0).
int left_ms(Clock::time_point deadline) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms > 0 ? static_cast<int>(ms) : 0;
}

// Waits for `events` on fd until the deadline; og::Error when time runs out.
void wait_for(int fd, short events, Clock::time_point deadline, double timeout_s) {
  while (true) {
    pollfd p{fd, events, 0};
    const int ms = left_ms(deadline);
    const int r = ::poll(&p, 1, ms);
    if (r > 0) return;
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) fail("image URL: no answer within ", timeout_s, " s");
    fail("image URL: poll failed: ", std::strerror(errno));
  }
}

struct Target {
  std::string host, port = "80", path = "/";
};

Target parse_url(std::string_view url) {
  auto starts = [&](std::string_view p) {
    if (url.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(url[i])) != p[i]) return false;
    return true;
  };
  if (starts("https://"))
    fail("image URL: https is not fetched (this server links no TLS library); send a data: URL or an http:// URL");
  if (!starts("http://")) fail("image URL: expected http://host[:port]/path");
  std::string_view rest = url.substr(7);
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  Target t;
  if (slash != std::string_view::npos) t.path = std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) fail("image URL: credentials in the URL are not sent");
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    t.port = std::string(authority.substr(colon + 1));
    authority = authority.substr(0, colon);
  }
  t.host = std::string(authority);
  if (t.host.empty() || t.port.empty()) fail("image URL: no host");
  for (char c : t.path + t.host)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) fail("image URL: a space or control byte in the URL");
  return t;
}

int connect_to(const Target& t, Clock::time_point deadline, double timeout_s) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int e = ::getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &res); e != 0)
    fail("image URL: cannot resolve ", t.host, ": ", gai_strerror(e));
  std::string why = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = open_socket(a->ai_family, a->ai_socktype, a->ai_protocol, portable_calls_forced());
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (::poll(&p, 1, left_ms(deadline)) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
          err == 0) {
        ::freeaddrinfo(res);
        return fd;
      }
      why = err ? std::strerror(err) : "timed out";
    } else {
      why = std::strerror(errno);
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  (void)timeout_s;
  fail("image URL: cannot connect to ", t.host, ":", t.port, ": ", why);
}

}  // namespace

void set_image_url_fetch(const ImageUrlFetch& f) {
  std::lock_guard<std::mutex> lk(g_mu);
  g_fetch = f;
}

ImageUrlFetch image_url_fetch() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_fetch;
}

std::string fetch_image_url(std::string_view url, const ImageUrlFetch& f) {
  const Target t = parse_url(url);
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(f.timeout_s));
  Fd s;
  s.fd = connect_to(t, deadline, f.timeout_s);
  const std::string req = "GET " + t.path + " HTTP/1.0\r\nHost: " + t.host + "\r\nAccept: image/*\r\n" +
                          "User-Agent: offgraph\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < req.size()) {
    wait_for(s.fd, POLLOUT, deadline, f.timeout_s);
    const ssize_t n = send_nowait(s.fd, req.data() + sent, req.size() - sent);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) fail("image URL: cannot send the request: ", std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  std::string in;
  const size_t head_max = 64 << 10;
  char buf[16384];
  while (true) {
    wait_for(s.fd, POLLIN, deadline, f.timeout_s);
    const ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) fail("image URL: read failed: ", std::strerror(errno));
    if (n == 0) break;
    in.append(buf, static_cast<size_t>(n));
    const size_t head_end = in.find("\r\n\r\n");
    if (head_end == std::string::npos && in.size() > head_max) fail("image URL: the response's head is too long");
    if (head_end != std::string::npos && in.size() - head_end - 4 > static_cast<size_t>(f.max_bytes))
      fail("image URL: the image is larger than ", f.max_bytes, " bytes");
  }
  const size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos) fail("image URL: the response ended before its head did");
  // "HTTP/1.x 200 ..."
  const size_t sp = in.find(' ');
  if (in.rfind("HTTP/1.", 0) != 0 || sp == std::string::npos || sp > head_end)
    fail("image URL: not an HTTP response");
  const std::string status = in.substr(sp + 1, 3);
  if (status != "200") fail("image URL: the server answered ", status, " (only 200 is taken; redirects are not followed)");
  std::string body = in.substr(head_end + 4);
  if (body.empty()) fail("image URL: the response has no body");
  return body;
}

}  // namespace og::server
