// The KV-event publisher on loopback: endpoint checks, the replay buffer, a
// SUB socket receiving [topic, seq, batch] in order, a replay from a sequence
// number ending with the -1 marker, a busy port refused, drops counted.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "server/kv_events_publisher.h"

namespace og::server {
namespace {

using std::chrono::milliseconds;

TEST(KvEventsPublisher, EndpointRules) {
  EXPECT_TRUE(kv_events_binds("tcp://*:5557"));
  EXPECT_TRUE(kv_events_binds("tcp://[::]:5557"));
  EXPECT_TRUE(kv_events_binds("ipc:///tmp/x"));
  EXPECT_TRUE(kv_events_binds("inproc://x"));
  EXPECT_FALSE(kv_events_binds("tcp://indexer:5557"));
  EXPECT_FALSE(kv_events_binds("tcp://127.0.0.1:5557"));

  EXPECT_EQ(kv_events_endpoint_problem("tcp://*:5557"), "");
  EXPECT_EQ(kv_events_endpoint_problem("tcp://127.0.0.1:*"), "");
  EXPECT_EQ(kv_events_endpoint_problem("tcp://host.example:1"), "");
  EXPECT_EQ(kv_events_endpoint_problem("ipc:///run/kv"), "");
  EXPECT_NE(kv_events_endpoint_problem("foo"), "");
  EXPECT_NE(kv_events_endpoint_problem("tcp://host"), "");
  EXPECT_NE(kv_events_endpoint_problem("tcp://host:"), "");
  EXPECT_NE(kv_events_endpoint_problem("tcp://host:70000"), "");
  EXPECT_NE(kv_events_endpoint_problem("tcp://host:5x"), "");
  EXPECT_NE(kv_events_endpoint_problem("ipc://"), "");
  EXPECT_NE(kv_events_endpoint_problem("http://host:80"), "");
  EXPECT_EQ(kv_events_endpoint_problem("tcp://[::1]:5557"), "");
  EXPECT_EQ(kv_events_endpoint_problem("tcp://[fe80::1%eth0]:*"), "");
  EXPECT_NE(kv_events_endpoint_problem("tcp://[::1:5557"), "");
  EXPECT_NE(kv_events_endpoint_problem("tcp://[]:5557"), "");
  EXPECT_NE(kv_events_endpoint_problem("ipc:///" + std::string(200, 'p')), "");  // past a Unix socket path
  EXPECT_TRUE(kv_endpoint_is_ipv6("tcp://[::1]:5557"));
  EXPECT_TRUE(kv_endpoint_is_ipv6("tcp://[::]:*"));
  EXPECT_FALSE(kv_endpoint_is_ipv6("tcp://127.0.0.1:5557"));
  EXPECT_FALSE(kv_endpoint_is_ipv6("tcp://*:5557"));
  EXPECT_FALSE(kv_endpoint_is_ipv6("ipc:///tmp/a:b"));
}

TEST(KvEventsPublisher, LongOrControlEndpointsAreCutInMessages) {
  // Issue 50: a 10,000-character endpoint was echoed whole.
  const std::string huge = "tcp://" + std::string(10000, 'h') + ":1";
  const std::string p = kv_events_endpoint_problem(huge);
  ASSERT_NE(p, "");
  EXPECT_LT(p.size(), 300u) << p;
  EXPECT_NE(p.find("(10008 characters)"), std::string::npos) << p;
  const std::string junk = "junk://" + std::string(5000, 'j');
  EXPECT_LT(kv_events_endpoint_problem(junk).size(), 300u);
  // A newline cannot split the one-line error.
  const std::string nl = kv_events_endpoint_problem("foo\nbar");
  EXPECT_EQ(nl.find('\n'), std::string::npos) << nl;
  EXPECT_NE(nl.find("foo\\nbar"), std::string::npos) << nl;
  try {
    KvEventsOptions o;
    o.endpoint = "tcp://*:" + std::string(3000, '9');
    KvEventsPublisher bad(o);
    FAIL() << "accepted a bad endpoint";
  } catch (const KvEventsSetupError& e) {
    EXPECT_LT(std::string(e.what()).size(), 300u) << e.what();
  }
}

TEST(KvEventsPublisher, ReplayBufferKeepsTheLastN) {
  KvReplayBuffer b(3);
  for (uint64_t s = 0; s < 5; ++s) b.add(s, "p" + std::to_string(s));
  EXPECT_EQ(b.size(), 3u);
  auto all = b.from(0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]->first, 2u);
  EXPECT_EQ(all[0]->second, "p2");
  EXPECT_EQ(all[2]->first, 4u);
  auto tail = b.from(3);
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0]->first, 3u);
  EXPECT_TRUE(b.from(9).empty());
  KvReplayBuffer none(0);
  none.add(0, "x");
  EXPECT_EQ(none.size(), 0u);
}

std::vector<KvEvent> cleared() {
  KvEvent e;
  e.type = KvEvent::Type::kAllBlocksCleared;
  return {e};
}

TEST(KvEventsPublisher, PublishesInOrderAndReplays) {
  KvEventsOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.replay_endpoint = "tcp://127.0.0.1:*";
  o.topic = "kv@pod@model";
  KvEventsPublisher pub(o);
  ASSERT_NE(pub.endpoint().find("tcp://127.0.0.1:"), std::string::npos);

  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "kv@");
  sub.set(zmq::sockopt::rcvtimeo, 50);
  sub.set(zmq::sockopt::linger, 0);
  sub.connect(pub.endpoint());

  // A subscription takes a moment to reach the publisher: publish until one
  // message arrives (the first ones may be lost, as on any PUB socket).
  std::vector<zmq::message_t> msg;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (msg.empty() && std::chrono::steady_clock::now() < deadline) {
    pub.push(cleared());
    (void)zmq::recv_multipart(sub, std::back_inserter(msg));
  }
  ASSERT_EQ(msg.size(), 3u);
  EXPECT_EQ(msg[0].to_string(), "kv@pod@model");
  ASSERT_EQ(msg[1].size(), 8u);
  uint64_t seq = seq_of_frame(msg[1].to_string_view());
  const std::string body = msg[2].to_string();
  EXPECT_EQ(static_cast<unsigned char>(body[0]), 0x93);
  EXPECT_EQ(body.substr(10), std::string("\x91\x91\xb0" "AllBlocksCleared\x00", 20));
  // Three more, consecutive.
  for (int i = 0; i < 3; ++i) pub.push(cleared());
  for (int i = 0; i < 3; ++i) {
    msg.clear();
    ASSERT_TRUE(zmq::recv_multipart(sub, std::back_inserter(msg)));
    EXPECT_EQ(seq_of_frame(msg[1].to_string_view()), seq + 1 + i);
  }
  const uint64_t last = seq + 3;

  // Replay from seq + 1: seq+1 .. last, then [-1, ""].
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 2000);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(pub.replay_endpoint());
  const std::string start = seq_frame(static_cast<int64_t>(seq + 1));
  dealer.send(zmq::message_t(), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(start));
  uint64_t want = seq + 1;
  for (;;) {
    std::vector<zmq::message_t> r;
    ASSERT_TRUE(zmq::recv_multipart(dealer, std::back_inserter(r)));
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].size(), 0u);
    if (r[1].to_string() == seq_frame(-1)) {
      EXPECT_EQ(r[2].size(), 0u);
      break;
    }
    EXPECT_EQ(seq_of_frame(r[1].to_string_view()), want);
    EXPECT_EQ(r[2].to_string().substr(10), std::string("\x91\x91\xb0" "AllBlocksCleared\x00", 20));
    ++want;
  }
  EXPECT_EQ(want, last + 1);

  const auto c = pub.counts();
  EXPECT_EQ(c.batches, last + 1);
  EXPECT_EQ(c.events, last + 1);
  EXPECT_EQ(c.replays, 1u);
  pub.stop();
  pub.push(cleared());  // after stop: dropped, counted
  EXPECT_EQ(pub.counts().dropped_events, 1u);
}

TEST(KvEventsPublisher, BusyPortAndBadEndpointAreSetupErrors) {
  KvEventsOptions a;
  a.endpoint = "tcp://127.0.0.1:*";
  KvEventsPublisher first(a);
  const std::string port = first.endpoint().substr(first.endpoint().rfind(':') + 1);

  KvEventsOptions b;
  b.endpoint = "tcp://*:" + port;
  try {
    KvEventsPublisher second(b);
    FAIL() << "bound a busy port";
  } catch (const KvEventsSetupError& e) {
    EXPECT_FALSE(e.replay);
    EXPECT_NE(std::string(e.what()).find("cannot bind tcp://*:" + port), std::string::npos) << e.what();
  }
  KvEventsOptions c;
  c.endpoint = "tcp://127.0.0.1:*";
  c.replay_endpoint = "tcp://127.0.0.1:" + port;  // the replay socket always binds
  try {
    KvEventsPublisher third(c);
    FAIL() << "bound a busy replay port";
  } catch (const KvEventsSetupError& e) {
    EXPECT_TRUE(e.replay);
  }
  KvEventsOptions d;
  d.endpoint = "foo";
  EXPECT_THROW(KvEventsPublisher bad(d), KvEventsSetupError);
}

// Pushes until the subscriber gets one message (a subscription takes a
// moment to arrive) or 3 s pass; returns the message, empty if none came.
std::vector<zmq::message_t> first_message(KvEventsPublisher& pub, zmq::socket_t& sub) {
  std::vector<zmq::message_t> msg;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (msg.empty() && std::chrono::steady_clock::now() < deadline) {
    pub.push(cleared());
    (void)zmq::recv_multipart(sub, std::back_inserter(msg));
  }
  return msg;
}

zmq::socket_t subscriber(zmq::context_t& ctx, const std::string& endpoint, bool ipv6 = false) {
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.set(zmq::sockopt::rcvtimeo, 50);
  sub.set(zmq::sockopt::linger, 0);
  if (ipv6) sub.set(zmq::sockopt::ipv6, true);
  sub.connect(endpoint);
  return sub;
}

std::string temp_path(const char* tag) {
  return "/tmp/og-kv-" + std::to_string(::getpid()) + "-" + tag;
}

TEST(KvEventsPublisher, IpcRefusesAnEndpointALiveServerHolds) {
  // Issue 50: a second server on the same ipc:// path silently took it over
  // (ZeroMQ's bind unlinks the path first).
  const std::string path = temp_path("live");
  ::unlink(path.c_str());
  KvEventsOptions o;
  o.endpoint = "ipc://" + path;
  KvEventsPublisher first(o);
  try {
    KvEventsPublisher second(o);
    FAIL() << "a second publisher took over " << path;
  } catch (const KvEventsSetupError& e) {
    EXPECT_FALSE(e.replay);
    EXPECT_NE(std::string(e.what()).find("another live process"), std::string::npos) << e.what();
  }
  // The first still publishes on it.
  zmq::context_t ctx;
  zmq::socket_t sub = subscriber(ctx, o.endpoint);
  EXPECT_EQ(first_message(first, sub).size(), 3u);
  // The replay socket is checked the same way.
  KvEventsOptions r;
  r.endpoint = "tcp://127.0.0.1:*";
  r.replay_endpoint = o.endpoint;
  try {
    KvEventsPublisher third(r);
    FAIL() << "a replay socket took over " << path;
  } catch (const KvEventsSetupError& e) {
    EXPECT_TRUE(e.replay);
  }
}

TEST(KvEventsPublisher, IpcReclaimsAStaleSocketAndKeepsOtherFiles) {
  // A socket file no process listens on (a server killed with SIGKILL): reused.
  const std::string path = temp_path("stale");
  ::unlink(path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), path.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  ::close(fd);  // the file stays, nobody listens
  KvEventsOptions o;
  o.endpoint = "ipc://" + path;
  {
    KvEventsPublisher pub(o);
    zmq::context_t ctx;
    zmq::socket_t sub = subscriber(ctx, o.endpoint);
    EXPECT_EQ(first_message(pub, sub).size(), 3u);
  }
  // A regular file at the path is never deleted.
  const std::string file = temp_path("file");
  std::ofstream(file) << "keep me";
  KvEventsOptions f;
  f.endpoint = "ipc://" + file;
  try {
    KvEventsPublisher pub(f);
    FAIL() << "bound over a regular file";
  } catch (const KvEventsSetupError& e) {
    EXPECT_NE(std::string(e.what()).find("not a socket"), std::string::npos) << e.what();
  }
  struct stat st;
  EXPECT_EQ(::stat(file.c_str(), &st), 0);
  ::unlink(file.c_str());
}

TEST(KvEventsPublisher, BindsOneInterfaceWhenAsked) {
  // Issue 50: a TCP endpoint was bound only as tcp://*:P (every interface);
  // tcp://127.0.0.1:P was connected. A free port first:
  // (A plain socket, not a ZeroMQ one: ZeroMQ closes its listener later, on
  // its I/O thread, so the port could still be taken when the publisher binds.)
  zmq::context_t ctx;
  std::string port;
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port = std::to_string(ntohs(a.sin_port));
    ::close(fd);
  }
  KvEventsOptions o;
  o.endpoint = "tcp://127.0.0.1:" + port;
  o.force_bind = true;
  KvEventsPublisher pub(o);
  EXPECT_EQ(pub.endpoint(), o.endpoint);
  zmq::socket_t sub = subscriber(ctx, o.endpoint);
  EXPECT_EQ(first_message(pub, sub).size(), 3u);
}

bool have_ipv6_loopback() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

TEST(KvEventsPublisher, Ipv6Endpoints) {
  // Issue 50: tcp://[::1]:P failed with "No such device" (no ZMQ_IPV6).
  if (!have_ipv6_loopback()) GTEST_SKIP() << "this machine has no IPv6 loopback";
  KvEventsOptions o;
  o.endpoint = "tcp://[::1]:*";
  o.replay_endpoint = "tcp://[::1]:*";
  KvEventsPublisher pub(o);
  EXPECT_EQ(pub.endpoint().rfind("tcp://[::1]:", 0), 0u) << pub.endpoint();
  EXPECT_EQ(pub.replay_endpoint().rfind("tcp://[::1]:", 0), 0u) << pub.replay_endpoint();
  zmq::context_t ctx;
  zmq::socket_t sub = subscriber(ctx, pub.endpoint(), true);
  EXPECT_EQ(first_message(pub, sub).size(), 3u);
}

TEST(KvEventsPublisher, MapEncodingOnTheWire) {
  KvEventsOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.encoding = KvEventEncoding::kMap;
  KvEventsPublisher pub(o);
  zmq::context_t ctx;
  zmq::socket_t sub = subscriber(ctx, pub.endpoint());
  auto msg = first_message(pub, sub);
  ASSERT_EQ(msg.size(), 3u);
  // [ts, [{"type": "AllBlocksCleared"}], 0]
  EXPECT_EQ(msg[2].to_string().substr(10), std::string("\x91\x81\xa4type\xb0" "AllBlocksCleared\x00", 25));
}

TEST(KvEventsPublisher, ConnectsToABoundSubscriberAndStopsPromptly) {
  // llm-d's centralized mode: the subscriber binds, the replica connects.
  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.set(zmq::sockopt::rcvtimeo, 50);
  sub.set(zmq::sockopt::linger, 0);
  sub.bind("tcp://127.0.0.1:*");
  KvEventsOptions o;
  o.endpoint = sub.get(zmq::sockopt::last_endpoint);
  auto pub = std::make_unique<KvEventsPublisher>(o);
  std::vector<zmq::message_t> msg;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (msg.empty() && std::chrono::steady_clock::now() < deadline) {
    pub->push(cleared());
    (void)zmq::recv_multipart(sub, std::back_inserter(msg));
  }
  ASSERT_EQ(msg.size(), 3u);
  EXPECT_EQ(msg[0].size(), 0u);  // the default topic is empty, as vLLM's
  // Closing with a subscriber gone returns within the bounded linger.
  sub.close();
  for (int i = 0; i < 100; ++i) pub->push(cleared());
  const auto t0 = std::chrono::steady_clock::now();
  pub.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace og::server
