// Publishes the prefix cache's KV events over ZeroMQ as vLLM 0.11's
// ZmqEventPublisher does, so llm-d's precise prefix-cache scorer subscribes to
// an offgraph replica unchanged: a PUB socket sends each scheduler step's
// events as one multipart message [topic, 8-byte big-endian sequence number,
// msgpack batch]; the last N batches are kept, and a ROUTER socket answers a
// replay request [start sequence] with every kept batch from there, each as
// [sequence, batch], then [-1, empty] (docs/kv-events.md).
//
// The sink only queues (it runs on the scheduler's stepping thread); one
// publisher thread encodes, sends and serves replays. A full queue drops the
// step's events and counts them. The publisher must outlive every scheduler
// holding its sink.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "runtime/kv_events.h"
#include "server/kv_event_wire.h"

namespace og::server {

struct KvEventsOptions {
  std::string endpoint;         // PUB: tcp://HOST:PORT, ipc://PATH or inproc://NAME (kv_events_binds says bind or connect)
  std::string replay_endpoint;  // ROUTER, always bound; empty: no replay socket
  std::string topic;            // the first frame of every message ("" as vLLM's default)
  KvHashFormat hash_format = KvHashFormat::kInt;
  KvEventEncoding encoding = KvEventEncoding::kArray;
  bool force_bind = false;      // bind `endpoint` even where vLLM's rule connects (tcp://127.0.0.1:5557: one interface)
  size_t buffer_steps = 10000;  // batches kept for replay (vLLM's buffer_steps)
  size_t max_queued = 100000;   // steps waiting for the publisher thread before new ones are dropped
  int hwm = 100000;             // the PUB socket's send high-water mark (vLLM's)
  int data_parallel_rank = 0;
};

// vLLM's rule for its PUB endpoint: bound when it holds "*" or "::" or is an
// ipc:// or inproc:// address, else connected (a central subscriber binds:
// llm-d's indexer in its centralized mode).
bool kv_events_binds(const std::string& endpoint);

// The longest endpoint accepted (a bound on what is parsed and echoed).
inline constexpr size_t kMaxKvEndpointChars = 1024;

// Checks an endpoint's form: tcp://HOST:PORT (PORT a number or *; HOST a name,
// an IPv4 address, *, or an IPv6 address in brackets), ipc://PATH (PATH fits a
// Unix socket address) or inproc://NAME. Returns "" when good, else what is wrong.
std::string kv_events_endpoint_problem(const std::string& endpoint);

// An endpoint as messages quote it: control characters escaped and at most
// 80 characters, a longer one cut with its length said.
std::string kv_endpoint_shown(const std::string& endpoint);

// Whether an ipc:// endpoint to bind is taken: "" when it is free (a stale
// socket file no process listens on is removed), else why not: another live
// process listens on it, or the path is something other than a socket (which
// ZeroMQ's bind would delete). Other endpoints: "". The check runs just
// before the bind, so two servers started at the same instant can still race.
std::string kv_ipc_endpoint_taken(const std::string& endpoint);

// Whether a tcp:// endpoint names an IPv6 address ([::1] or a bare one),
// which ZeroMQ reaches only with ZMQ_IPV6 set on the socket.
bool kv_endpoint_is_ipv6(const std::string& endpoint);

// A socket that could not be opened; `replay` says which.
class KvEventsSetupError : public Error {
 public:
  KvEventsSetupError(bool replay, const std::string& what) : Error(what), replay(replay) {}
  bool replay;
};

// The last `capacity` published batches, oldest first.
class KvReplayBuffer {
 public:
  explicit KvReplayBuffer(size_t capacity) : capacity_(capacity) {}
  void add(uint64_t seq, std::string payload);
  // The kept batches with sequence >= start, in order.
  std::vector<const std::pair<uint64_t, std::string>*> from(uint64_t start) const;
  size_t size() const { return batches_.size(); }

 private:
  size_t capacity_;
  std::deque<std::pair<uint64_t, std::string>> batches_;
};

class KvEventsPublisher {
 public:
  // Opens the sockets (KvEventsSetupError on a bad or busy endpoint) and starts the thread.
  explicit KvEventsPublisher(KvEventsOptions options);
  ~KvEventsPublisher();
  KvEventsPublisher(const KvEventsPublisher&) = delete;
  KvEventsPublisher& operator=(const KvEventsPublisher&) = delete;

  // Queues one step's events (never blocks on I/O); what SchedulerOptions::kv_events takes.
  KvEventSink sink();
  void push(std::vector<KvEvent>&& events);

  // Publishes what is queued, then closes the sockets (a bounded linger); idempotent.
  void stop();

  // The addresses as opened (a bound "*" port resolved).
  const std::string& endpoint() const { return endpoint_; }
  const std::string& replay_endpoint() const { return replay_endpoint_; }

  struct Counts {
    uint64_t batches = 0;         // published (sequence numbers used)
    uint64_t events = 0;          // events in them
    uint64_t dropped_events = 0;  // events of steps dropped on a full queue
    uint64_t replays = 0;         // replay requests answered
  };
  Counts counts() const;

 private:
  struct Step {
    double ts;
    std::vector<KvEvent> events;
  };
  struct Sockets;  // the ZeroMQ context and sockets (zmq.hpp stays out of this header)

  void run();
  void publish(Step& step);
  void serve_replays();

  KvEventsOptions opt_;
  std::unique_ptr<Sockets> z_;
  std::string endpoint_, replay_endpoint_;
  KvReplayBuffer buffer_;
  uint64_t next_seq_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Step> queue_;
  bool stopping_ = false;
  std::thread thread_;

  std::atomic<uint64_t> batches_{0}, events_{0}, dropped_{0}, replays_{0};
};

}  // namespace og::server
