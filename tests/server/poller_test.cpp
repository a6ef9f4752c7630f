// The server's portable layer, both ways on this machine: the poller's epoll
// and poll(2) backends (readiness, interest changes, removal, descriptor
// reuse, wake from another thread), the socket and pipe calls with their
// Linux fast paths and with the POSIX fallbacks, the SIGPIPE fallback, and
// the connection loop choosing poll under OFFGRAPH_PORTABLE=1 and serving on
// it. (The whole Conn/Http/ShutdownWatch suites also run under
// OFFGRAPH_PORTABLE=1: the server_portable_poll test in tests/CMakeLists.txt.)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "server/http_conn.h"
#include "server/poller.h"
#include "server/socket_ops.h"

namespace og::server {
namespace {

bool nonblocking(int fd) { return (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0; }
bool cloexec(int fd) { return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

// false: the fast paths (epoll, eventfd, accept4, pipe2); true: the fallbacks.
class Portable : public ::testing::TestWithParam<bool> {};

std::string mode_name(const ::testing::TestParamInfo<bool>& i) { return i.param ? "posix" : "linux"; }

INSTANTIATE_TEST_SUITE_P(Both, Portable, ::testing::Bool(), mode_name);

// Events of one wait, by tag.
std::optional<uint32_t> bits_of(const std::vector<PollEvent>& ev, void* tag) {
  for (const PollEvent& e : ev)
    if (e.tag == tag) return e.bits;
  return std::nullopt;
}

TEST_P(Portable, PollerReportsReadinessAsAsked) {
  auto p = Poller::create(GetParam());
#ifdef __linux__
  EXPECT_STREQ(p->name(), GetParam() ? "poll" : "epoll");
#endif
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int tag_a = 0, tag_b = 0;
  std::vector<PollEvent> ev;
  ASSERT_TRUE(p->add(sv[0], kPollRead, &tag_a));
  EXPECT_FALSE(p->add(sv[0], kPollRead, &tag_a));  // already registered
  EXPECT_FALSE(p->wait(0, &ev));
  EXPECT_TRUE(ev.empty());

  ASSERT_EQ(write(sv[1], "x", 1), 1);
  p->wait(1000, &ev);
  ASSERT_TRUE(bits_of(ev, &tag_a).has_value());
  EXPECT_TRUE(*bits_of(ev, &tag_a) & kPollRead);

  // Write interest only, under a new tag: the pending byte is not reported.
  p->modify(sv[0], kPollWrite, &tag_b);
  p->wait(1000, &ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].tag, &tag_b);
  EXPECT_EQ(ev[0].bits & (kPollRead | kPollWrite), uint32_t{kPollWrite});

  p->modify(sv[0], 0, &tag_b);  // registered, nothing asked
  p->wait(0, &ev);
  EXPECT_TRUE(ev.empty());

  // The peer's end: readable (end of stream), or a hangup.
  p->modify(sv[0], kPollRead, &tag_a);
  close(sv[1]);
  p->wait(1000, &ev);
  ASSERT_TRUE(bits_of(ev, &tag_a).has_value());
  EXPECT_TRUE(*bits_of(ev, &tag_a) & (kPollRead | kPollHangup));

  p->remove(sv[0]);
  p->wait(0, &ev);
  EXPECT_TRUE(ev.empty());
  close(sv[0]);
}

TEST_P(Portable, PollerRemovalKeepsTheOthersAndAReusedNumberGetsItsNewTag) {
  auto p = Poller::create(GetParam());
  int a[2], b[2], c[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, c), 0);
  int ta = 0, tb = 0, tc = 0, tnew = 0;
  ASSERT_TRUE(p->add(a[0], kPollRead, &ta));
  ASSERT_TRUE(p->add(b[0], kPollRead, &tb));
  ASSERT_TRUE(p->add(c[0], kPollRead, &tc));
  // The middle one goes (poll's array moves its last entry into the hole).
  p->remove(b[0]);
  const int old_number = b[0];
  close(b[0]);
  close(b[1]);
  ASSERT_EQ(write(a[1], "x", 1), 1);
  ASSERT_EQ(write(c[1], "x", 1), 1);
  std::vector<PollEvent> ev;
  p->wait(1000, &ev);
  if (ev.size() < 2) p->wait(1000, &ev);  // both are level-triggered: the next wait has both
  EXPECT_TRUE(bits_of(ev, &ta).has_value());
  EXPECT_TRUE(bits_of(ev, &tc).has_value());
  EXPECT_FALSE(bits_of(ev, &tb).has_value());

  // A new descriptor with the removed one's number is watched under its own tag.
  int d[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, d), 0);
  ASSERT_EQ(d[0], old_number);  // the lowest free numbers are reused
  ASSERT_TRUE(p->add(d[0], kPollRead, &tnew));
  ASSERT_EQ(write(d[1], "x", 1), 1);
  p->wait(1000, &ev);
  EXPECT_TRUE(bits_of(ev, &tnew).has_value());
  EXPECT_FALSE(bits_of(ev, &tb).has_value());
  for (int fd : {a[0], a[1], c[0], c[1], d[0], d[1]}) close(fd);
}

TEST_P(Portable, PollerWakeFromAnotherThreadIsSeenOnceEvenIfRepeated) {
  auto p = Poller::create(GetParam());
  std::vector<PollEvent> ev;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    p->wake();
  });
  EXPECT_TRUE(p->wait(20000, &ev));  // true: returned on the wake (a timeout says false)
  t.join();
  EXPECT_TRUE(ev.empty());
  EXPECT_FALSE(p->wait(0, &ev));  // consumed
  // More wakes than a pipe holds: none blocks, and one wait consumes them all.
  for (int i = 0; i < 20000; ++i) p->wake();
  EXPECT_TRUE(p->wait(0, &ev));
  EXPECT_FALSE(p->wait(0, &ev));
}

TEST_P(Portable, SocketsAndAcceptedConnectionsAreNonBlockingAndCloseOnExec) {
  const bool portable = GetParam();
  const int lfd = open_socket(AF_INET, SOCK_STREAM, 0, portable);
  ASSERT_GE(lfd, 0);
  EXPECT_TRUE(nonblocking(lfd));
  EXPECT_TRUE(cloexec(lfd));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(lfd, 4), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len), 0);

  errno = 0;
  EXPECT_EQ(accept_connection(lfd, portable), -1);  // nobody waiting
  EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);

  const int client = socket(AF_INET, SOCK_STREAM, 0);  // blocking, inheritable: the flags must come from the call
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  int fd = -1;
  for (int i = 0; i < 200 && fd < 0; ++i) {
    fd = accept_connection(lfd, portable);
    if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(nonblocking(fd));
  EXPECT_TRUE(cloexec(fd));
  EXPECT_EQ(send_nowait(fd, "hi", 2), 2);
  char buf[2];
  EXPECT_EQ(recv(client, buf, 2, MSG_WAITALL), 2);
  for (int x : {fd, client, lfd}) close(x);
}

TEST_P(Portable, PipesAreCloseOnExecAndBlocking) {
  int p[2] = {-1, -1};
  ASSERT_TRUE(open_pipe(p, GetParam()));
  for (int fd : p) {
    EXPECT_TRUE(cloexec(fd));
    EXPECT_FALSE(nonblocking(fd));
  }
  ASSERT_EQ(write(p[1], "z", 1), 1);
  char c = 0;
  EXPECT_EQ(read(p[0], &c, 1), 1);
  EXPECT_EQ(c, 'z');
  close(p[0]);
  close(p[1]);
}

// The fallback for systems with neither MSG_NOSIGNAL nor SO_NOSIGPIPE:
// SIGPIPE ignored, so a send to a closed peer is EPIPE, not the end of the
// process. (It changes this process's SIGPIPE disposition: ctest runs each
// test in its own process.)
TEST(SocketOps, WithoutMsgNoSignalASendToAClosedPeerIsEpipe) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ASSERT_EQ(sigaction(SIGPIPE, &dfl, nullptr), 0);
  guard_sigpipe(/*portable=*/true);
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  close(sv[1]);
  errno = 0;
  EXPECT_EQ(send_nowait(sv[0], "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
  close(sv[0]);
}

TEST(SocketOps, PortableIsOnlyTheExactValueOne) {
  const char* old = std::getenv("OFFGRAPH_PORTABLE");
  const std::string saved = old ? old : "";
  setenv("OFFGRAPH_PORTABLE", "1", 1);
  EXPECT_TRUE(portable_calls_forced());
  setenv("OFFGRAPH_PORTABLE", "0", 1);
  EXPECT_FALSE(portable_calls_forced());
  unsetenv("OFFGRAPH_PORTABLE");
  EXPECT_FALSE(portable_calls_forced());
  if (old) setenv("OFFGRAPH_PORTABLE", saved.c_str(), 1);
}

// One GET /x on a new loopback connection: the whole answer (until close).
std::string get_once(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET /x HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size())) {
      char buf[1024];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return out;
}

// The environment picks the loop's backend when the loop is made; a request
// answered on the loop and one on a worker (handed back through wake()).
TEST(ConnPoller, TheEnvironmentChoosesTheBackendAndBothServe) {
  const char* old = std::getenv("OFFGRAPH_PORTABLE");
  const std::string saved = old ? old : "";
  for (const bool portable : {true, false}) {
    if (portable) {
      setenv("OFFGRAPH_PORTABLE", "1", 1);
    } else {
      unsetenv("OFFGRAPH_PORTABLE");
    }
    ConnOptions o;
    o.port = 0;
    o.workers = 2;
    ConnHandlers h;
    std::atomic<bool> on_worker{false};
    h.check_head = [](const HttpRequest&) { return std::optional<HttpResponse>(); };
    h.answer_now = [&](const HttpRequest&) {
      if (on_worker) return std::optional<HttpResponse>();
      HttpResponse r;
      r.body = "loop";
      return std::optional<HttpResponse>(r);
    };
    h.answer_on_worker = [](const HttpRequest&, ResponseWriter& w) {
      HttpResponse r;
      r.body = "worker";
      w.send(r);
    };
    ConnectionLoop loop(o, h);
    const int port = loop.bind();
    loop.start();
    if (portable) {
      EXPECT_EQ(loop.poller_name(), "poll");
    } else {
#ifdef __linux__
      EXPECT_EQ(loop.poller_name(), "epoll");
#endif
    }
    const std::string a = get_once(port);
    EXPECT_EQ(a.rfind("HTTP/1.1 200", 0), 0u) << a;
    EXPECT_NE(a.find("\r\n\r\nloop"), std::string::npos) << a;
    on_worker = true;  // no request is in flight: the loop thread reads it after the next accept
    const std::string b = get_once(port);
    EXPECT_NE(b.find("\r\n\r\nworker"), std::string::npos) << b;
    loop.stop();
  }
  if (old) {
    setenv("OFFGRAPH_PORTABLE", saved.c_str(), 1);
  } else {
    unsetenv("OFFGRAPH_PORTABLE");
  }
}

}  // namespace
}  // namespace og::server
