// The HTTP edge against hostile clients (issue 50): the Host check against DNS
// rebinding (HostCheck, --host-allow), the Bearer scheme in any case, and a
// body of many keys answered 400 at once on a real server.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "server/auth.h"
#include "server_fixture.h"

namespace og::server::test {
namespace {

using nlohmann::json;

const std::string kChat = R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 4})";

// Sends `head` (request line and headers, without the blank line) and `body`
// on a fresh loopback connection with "Connection: close"; the status and body.
struct Raw {
  int status = 0;
  std::string body;
};
Raw raw_request(int port, const std::string& head, const std::string& body = "") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = head + "\r\nConnection: close\r\n";
  if (!body.empty()) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  Raw r;
  if (out.rfind("HTTP/1.1 ", 0) == 0) r.status = std::stoi(out.substr(9, 3));
  const size_t at = out.find("\r\n\r\n");
  if (at != std::string::npos) r.body = out.substr(at + 4);
  return r;
}

// The DNS-rebinding repro: a page's cross-origin text/plain POST (no
// preflight) with the attacker's name as Host.
Raw rebinding_post(int port, const std::string& host) {
  return raw_request(port, "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host +
                               "\r\nContent-Type: text/plain\r\nOrigin: http://" + host,
                     kChat);
}

class HttpEdge : public ServerFixture {
 protected:
  void expect_403(const Raw& r) {
    EXPECT_EQ(r.status, 403) << r.body;
    const json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_EQ(j["error"]["type"], "permission_error") << r.body;
    EXPECT_EQ(j["error"]["code"], "host_not_allowed") << r.body;
    const std::string m = j["error"]["message"].get<std::string>();
    EXPECT_NE(m.find("--host-allow"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
};

TEST_F(HttpEdge, ForeignHostIs403WithoutKeys) {
  start();
  const std::string port = std::to_string(port_);
  expect_403(rebinding_post(port_, "evil.example"));
  expect_403(rebinding_post(port_, "evil.example:" + port));
  expect_403(rebinding_post(port_, "localhost.evil.example"));
  expect_403(rebinding_post(port_, "10.1.2.3:" + port));  // another address than the one listened on
  expect_403(raw_request(port_, "GET /health HTTP/1.1\r\nHost: evil.example"));  // every route, first of all
  expect_403(raw_request(port_, "GET /nowhere HTTP/1.1\r\nHost: evil.example"));
  expect_403(raw_request(port_, "GET /health HTTP/1.1\r\nHost: a b"));  // not a host name
  EXPECT_EQ(sched_->submitted().size(), 0u);
  // The address listened on and localhost, with or without the port, in any case.
  for (const std::string& host : std::vector<std::string>{"127.0.0.1", "127.0.0.1:" + port, "localhost",
                                                          "localhost:" + port, "LocalHost.", "localhost:1"}) {
    const Raw r = rebinding_post(port_, host);
    EXPECT_EQ(r.status, 200) << host << ": " << r.body;
  }
  // A request without Host (HTTP/1.0; browsers always send one) is served.
  EXPECT_EQ(raw_request(port_, "GET /health HTTP/1.0").status, 200);
  // httplib's client names 127.0.0.1:port.
  auto c = client();
  EXPECT_EQ(c.Post("/v1/chat/completions", kChat, "application/json")->status, 200);
}

TEST_F(HttpEdge, HostAllowNamesAndStar) {
  HttpOptions o;
  o.host_allow = {"api.example.com", "[::1]"};
  start(o);
  EXPECT_EQ(rebinding_post(port_, "api.example.com").status, 200);
  EXPECT_EQ(rebinding_post(port_, "API.example.com:443").status, 200);
  EXPECT_EQ(rebinding_post(port_, "[0:0::1]:8080").status, 200);
  EXPECT_EQ(rebinding_post(port_, "localhost").status, 200);
  expect_403(rebinding_post(port_, "evil.example"));
  expect_403(rebinding_post(port_, "example.com"));
}

TEST_F(HttpEdge, HostAllowStarTurnsTheCheckOff) {
  HttpOptions o;
  o.host_allow = {"*"};
  start(o);
  EXPECT_EQ(rebinding_post(port_, "evil.example").status, 200);
}

// With API keys a rebinding page cannot know the key: the check is off unless
// --host-allow is given, so key-protected servers behind proxies work as before.
TEST_F(HttpEdge, WithKeysTheCheckIsOnlyOnWithHostAllow) {
  HttpOptions o;
  o.api_keys = {"sekret"};
  start(o);
  const std::string auth = "\r\nAuthorization: Bearer sekret";
  EXPECT_EQ(raw_request(port_, "GET /v1/models HTTP/1.1\r\nHost: proxy.example" + auth).status, 200);
  EXPECT_EQ(raw_request(port_, "GET /v1/models HTTP/1.1\r\nHost: proxy.example").status, 401);
}

TEST_F(HttpEdge, WithKeysAndHostAllowTheCheckIsOn) {
  HttpOptions o;
  o.api_keys = {"sekret"};
  o.host_allow = {"proxy.example"};
  start(o);
  const std::string auth = "\r\nAuthorization: Bearer sekret";
  EXPECT_EQ(raw_request(port_, "GET /v1/models HTTP/1.1\r\nHost: proxy.example" + auth).status, 200);
  expect_403(raw_request(port_, "GET /v1/models HTTP/1.1\r\nHost: evil.example" + auth));
}

// RFC 7235: the scheme is case-insensitive ("bearer K" was a 401).
TEST_F(HttpEdge, BearerSchemeInAnyCase) {
  HttpOptions o;
  o.api_keys = {"sekret"};
  start(o);
  for (const std::string a : {"Bearer sekret", "bearer sekret", "BEARER sekret", "bEaReR  sekret"})
    EXPECT_EQ(raw_request(port_, "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: " + a).status, 200)
        << a;
  for (const std::string a : {"Basic sekret", "bearer", "bearer ", "bearersekret", "bearer sekret2", "Token sekret"})
    EXPECT_EQ(raw_request(port_, "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: " + a).status, 401)
        << a;
}

// Issue 50's repro: 200k keys took 28 s on every route before auth. Now a 400
// naming the limit, at once; and a 401 comes before any body is parsed.
TEST_F(HttpEdge, ManyKeysAreA400AtOnce) {
  start();
  std::string body = "{";
  for (int i = 0; i < 200000; ++i) body += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  body += "}";
  for (const std::string path : {"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize",
                                 "/apply-template"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const Raw r = raw_request(port_, "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json",
                              body);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.status, 400) << path << ": " << r.body.substr(0, 200);
    EXPECT_NE(r.body.find("more than 4096 keys (the limit per object)"), std::string::npos) << r.body.substr(0, 300);
    EXPECT_LT(s, 2.0) << path << ": a regression guard against quadratic parsing";
  }
}

TEST_F(HttpEdge, KeyIsCheckedBeforeTheBodyIsParsed) {
  HttpOptions o;
  o.api_keys = {"sekret"};
  start(o);
  const Raw r = raw_request(port_, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost", "{not json");
  EXPECT_EQ(r.status, 401) << r.body;
}

TEST_F(HttpEdge, SeedPast64BitsIsARangeError) {
  start();
  const Raw r = raw_request(port_, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost",
                            R"({"messages": [{"role": "user", "content": "x"}], "seed": 18446744073709551616})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("outside [-9223372036854775808, 9223372036854775807]"), std::string::npos) << r.body;
}

TEST(HostCheck, NormalizeHost) {
  const std::pair<std::string, std::string> cases[] = {
      {"LocalHost", "localhost"},     {"localhost:8080", "localhost"}, {"localhost.", "localhost"},
      {"127.0.0.1:80", "127.0.0.1"},  {"[::1]:8080", "::1"},           {"[0:0:0::1]", "::1"},
      {"::1", "::1"},                 {"Example.COM:", "example.com"}, {"a b", ""},
      {"evil.example:8o", ""},        {"[::1", ""},                    {"[::1]x", ""},
      {"[127.0.0.1]", ""},            {"", ""},                        {"x/y", ""},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(normalize_host(in), want) << in;
}

TEST(HostCheck, ListeningAddressRules) {
  const std::string evil = "evil.example", any_ip = "203.0.113.7:8080", local = "localhost:8080";
  auto allows = [](const HostCheck& c, const std::string& h) { return c.allows(&h); };
  // Loopback: its literal and localhost.
  const HostCheck loop("127.0.0.1", {}, false);
  EXPECT_TRUE(loop.active());
  EXPECT_TRUE(allows(loop, local));
  EXPECT_FALSE(allows(loop, evil));
  EXPECT_FALSE(allows(loop, any_ip));
  EXPECT_FALSE(allows(loop, "[::1]"));
  EXPECT_TRUE(loop.allows(nullptr));
  // IPv6 loopback.
  const HostCheck loop6("::1", {}, false);
  EXPECT_TRUE(allows(loop6, "[::1]:8080"));
  EXPECT_TRUE(allows(loop6, local));
  EXPECT_FALSE(allows(loop6, "127.0.0.1"));
  // A non-loopback address: its literal only (no localhost).
  const HostCheck lan("192.0.2.10", {}, false);
  EXPECT_TRUE(allows(lan, "192.0.2.10:8080"));
  EXPECT_FALSE(allows(lan, local));
  // Every address: any Host without --host-allow; with it, the names, localhost and any IP literal.
  for (const std::string wild : {"0.0.0.0", "::", ""}) {
    const HostCheck open(wild, {}, false);
    EXPECT_FALSE(open.active()) << wild;
    EXPECT_TRUE(allows(open, evil)) << wild;
    const HostCheck named(wild, {"api.example.com"}, false);
    EXPECT_TRUE(named.active()) << wild;
    EXPECT_TRUE(allows(named, "api.example.com:443")) << wild;
    EXPECT_TRUE(allows(named, any_ip)) << wild;
    EXPECT_TRUE(allows(named, "[2001:db8::1]:8080")) << wild;
    EXPECT_TRUE(allows(named, local)) << wild;
    EXPECT_FALSE(allows(named, evil)) << wild;
    EXPECT_FALSE(allows(named, "0.0.0.0.evil.example")) << wild;
  }
  // Keys: off unless --host-allow; "*": off.
  EXPECT_FALSE(HostCheck("127.0.0.1", {}, true).active());
  EXPECT_TRUE(HostCheck("127.0.0.1", {"a.example"}, true).active());
  EXPECT_FALSE(HostCheck("127.0.0.1", {"a.example", "*"}, false).active());
  // Bound to a name: that name, what it resolves to, and localhost for loopback.
  const HostCheck named_bind("localhost", {}, false);
  EXPECT_TRUE(allows(named_bind, local));
  EXPECT_TRUE(allows(named_bind, "127.0.0.1"));
  EXPECT_FALSE(allows(named_bind, evil));
}

}  // namespace
}  // namespace og::server::test
