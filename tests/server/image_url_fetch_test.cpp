// serve --allow-image-urls's fetch (server/image_url_fetch.h) without a
// model: URLs it refuses before connecting (https, another scheme,
// credentials, no host), a closed port, a listener that never answers (the
// deadline ends the wait), a body past the bound, a status other than 200,
// and a 200's body returned whole. (Through serve: tests/js/openai_vision_test.mjs.)
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "base/error.h"
#include "server/image_url_fetch.h"

namespace og::server {
namespace {

std::string error_of(const std::string& url, ImageUrlFetch f = {}) {
  f.allowed = true;
  try {
    fetch_image_url(url, f);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A loopback listener on a free port; answer() serves one connection with `reply` (nothing: never answers).
struct Listener {
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd, 4), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() {
    if (server.joinable()) server.join();
    ::close(fd);
  }
  void answer(const std::string& reply) {
    server = std::thread([this, reply] {
      const int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      (void)::recv(c, buf, sizeof buf, 0);  // the request
      if (!reply.empty()) (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      else (void)::recv(c, buf, sizeof buf, 0);  // waits for the client to give up and close
      ::close(c);
    });
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
  int fd = -1, port = 0;
  std::thread server;
};

TEST(ImageUrlFetch, UrlsRefusedBeforeConnecting) {
  EXPECT_NE(error_of("https://127.0.0.1/a.png").find("https is not fetched"), std::string::npos);
  EXPECT_NE(error_of("HTTPS://127.0.0.1/a.png").find("https is not fetched"), std::string::npos);
  EXPECT_NE(error_of("ftp://127.0.0.1/a.png").find("expected http://"), std::string::npos);
  EXPECT_NE(error_of("http://user:pw@127.0.0.1/a.png").find("credentials"), std::string::npos);
  EXPECT_NE(error_of("http:///a.png").find("no host"), std::string::npos);
  EXPECT_NE(error_of("http://127.0.0.1/a b.png").find("control byte"), std::string::npos);
}

TEST(ImageUrlFetch, AClosedPortAndASilentServerAreErrors) {
  int port = 0;
  {
    Listener l;  // a port that was free a moment ago: closed now
    port = l.port;
  }
  EXPECT_NE(error_of("http://127.0.0.1:" + std::to_string(port) + "/a.png").find("cannot connect"), std::string::npos);
  Listener silent;
  silent.answer("");
  ImageUrlFetch f;
  f.timeout_s = 0.3;
  EXPECT_NE(error_of(silent.url("/a.png"), f).find("no answer within"), std::string::npos);
}

TEST(ImageUrlFetch, StatusBoundAndBody) {
  {
    Listener l;
    l.answer("HTTP/1.0 302 Found\r\nLocation: /b.png\r\n\r\n");
    EXPECT_NE(error_of(l.url("/a.png")).find("answered 302"), std::string::npos);
  }
  {
    Listener l;
    l.answer("HTTP/1.0 200 OK\r\n\r\n" + std::string(100, 'x'));
    ImageUrlFetch f;
    f.max_bytes = 50;
    EXPECT_NE(error_of(l.url("/a.png"), f).find("larger than 50 bytes"), std::string::npos);
  }
  {
    Listener l;
    l.answer("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n\x89PNG body");
    ImageUrlFetch f;
    f.allowed = true;
    EXPECT_EQ(fetch_image_url(l.url("/a.png"), f), "\x89PNG body");
  }
}

}  // namespace
}  // namespace og::server
