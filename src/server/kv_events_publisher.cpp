// The ZeroMQ KV-event publisher: a queue fed by the scheduler, one thread
// that numbers, encodes and sends batches and answers replay requests.
#include "server/kv_events_publisher.h"

#include "base/one_line.h"
#include "server/socket_ops.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace og::server {

namespace {

// How long the publisher thread waits for a step before it looks at the
// replay socket again (the latency of a replay answer when nothing happens).
constexpr auto kIdleWait = std::chrono::milliseconds(10);
// How long closing waits for queued messages to leave (bounded: exit never hangs).
constexpr int kLingerMs = 250;

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// The longest path a Unix socket address holds (sun_path less its NUL).
constexpr size_t kMaxIpcPath = sizeof(sockaddr_un::sun_path) - 1;
constexpr size_t kShownChars = 80;

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

bool kv_events_binds(const std::string& endpoint) {
  return endpoint.find('*') != std::string::npos || endpoint.find("::") != std::string::npos ||
         starts_with(endpoint, "ipc://") || starts_with(endpoint, "inproc://");
}

std::string kv_endpoint_shown(const std::string& endpoint) {
  std::string out = one_line(std::string_view(endpoint).substr(0, kShownChars));
  if (endpoint.size() > kShownChars) out += cat("... (", endpoint.size(), " characters)");
  return out;
}

std::string kv_events_endpoint_problem(const std::string& endpoint) {
  const char* kForm = "expected tcp://HOST:PORT, ipc://PATH or inproc://NAME";
  const std::string shown = kv_endpoint_shown(endpoint);
  if (endpoint.size() > kMaxKvEndpointChars)
    return cat("'", shown, "' is longer than ", kMaxKvEndpointChars, " characters");
  if (starts_with(endpoint, "ipc://") || starts_with(endpoint, "inproc://")) {
    const size_t name = endpoint.find("://") + 3;
    if (endpoint.size() == name) return cat("'", shown, "' names nothing (", kForm, ")");
    if (starts_with(endpoint, "ipc://") && endpoint.size() - name > kMaxIpcPath)
      return cat("'", shown, "': an ipc path holds at most ", kMaxIpcPath, " bytes");
    return "";
  }
  if (!starts_with(endpoint, "tcp://")) return cat("'", shown, "' is not a ZeroMQ endpoint (", kForm, ")");
  const std::string rest = endpoint.substr(6);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return cat("'", shown, "' has no HOST:PORT (", kForm, ")");
  const std::string host = rest.substr(0, colon);
  if ((host.front() == '[') != (host.back() == ']') || (host.front() == '[' && host.size() < 3))
    return cat("'", shown, "': an IPv6 host is written in brackets, tcp://[::1]:PORT");
  const std::string port = rest.substr(colon + 1);
  if (port == "*") return "";
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  if (!digits || std::stoi(port) > 65535)
    return cat("'", shown, "': the port '", kv_endpoint_shown(port), "' is not 0..65535 or *");
  return "";
}

bool kv_endpoint_is_ipv6(const std::string& endpoint) {
  if (!starts_with(endpoint, "tcp://")) return false;
  const std::string rest = endpoint.substr(6);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string host = rest.substr(0, colon);
  return host.find(':') != std::string::npos || (!host.empty() && host.front() == '[');
}

std::string kv_ipc_endpoint_taken(const std::string& endpoint) {
  if (!starts_with(endpoint, "ipc://")) return "";
  const std::string path = endpoint.substr(6);
  // An abstract name (@...) is no file: the kernel itself refuses a taken one.
  if (path.empty() || path[0] == '@' || path.size() > kMaxIpcPath) return "";
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "";
    return cat("cannot look at ", kv_endpoint_shown(path), ": ", std::strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode)) return "the path exists and is not a socket (binding would delete it)";
  // A socket file: live when something accepts a connection on it.
  const int fd = open_socket(AF_UNIX, SOCK_STREAM, 0, portable_calls_forced());
  if (fd < 0) return cat("cannot check it: ", std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::close(fd);
  // EAGAIN: a listener whose backlog is full, so live too.
  if (rc == 0 || err == EAGAIN)
    return "another live process listens on it (another server?); stop it or choose another path";
  if (err == ECONNREFUSED) {
    ::unlink(path.c_str());  // stale: left by a process that is gone
    return "";
  }
  return cat("cannot check it: ", std::strerror(err));
}

void KvReplayBuffer::add(uint64_t seq, std::string payload) {
  if (capacity_ == 0) return;
  if (batches_.size() == capacity_) batches_.pop_front();
  batches_.emplace_back(seq, std::move(payload));
}

std::vector<const std::pair<uint64_t, std::string>*> KvReplayBuffer::from(uint64_t start) const {
  std::vector<const std::pair<uint64_t, std::string>*> out;
  for (const auto& b : batches_)
    if (b.first >= start) out.push_back(&b);
  return out;
}

struct KvEventsPublisher::Sockets {
  zmq::context_t ctx{1};
  zmq::socket_t pub{ctx, zmq::socket_type::pub};
  std::unique_ptr<zmq::socket_t> replay;
};

KvEventsPublisher::KvEventsPublisher(KvEventsOptions options)
    : opt_(std::move(options)), z_(std::make_unique<Sockets>()), buffer_(opt_.buffer_steps) {
  if (std::string p = kv_events_endpoint_problem(opt_.endpoint); !p.empty()) throw KvEventsSetupError(false, p);
  if (!opt_.replay_endpoint.empty()) {
    if (std::string p = kv_events_endpoint_problem(opt_.replay_endpoint); !p.empty())
      throw KvEventsSetupError(true, p);
  }
  const bool bind = opt_.force_bind || kv_events_binds(opt_.endpoint);
  if (bind) {
    if (std::string p = kv_ipc_endpoint_taken(opt_.endpoint); !p.empty())
      throw KvEventsSetupError(false, cat("cannot bind ", kv_endpoint_shown(opt_.endpoint), ": ", p));
  }
  try {
    z_->pub.set(zmq::sockopt::sndhwm, opt_.hwm);
    z_->pub.set(zmq::sockopt::linger, kLingerMs);
    if (kv_endpoint_is_ipv6(opt_.endpoint)) z_->pub.set(zmq::sockopt::ipv6, true);
    if (bind) {
      z_->pub.bind(opt_.endpoint);
      endpoint_ = z_->pub.get(zmq::sockopt::last_endpoint);
    } else {
      z_->pub.connect(opt_.endpoint);
      endpoint_ = opt_.endpoint;
    }
  } catch (const zmq::error_t& e) {
    throw KvEventsSetupError(
        false, cat("cannot ", bind ? "bind " : "connect to ", kv_endpoint_shown(opt_.endpoint), ": ", e.what()));
  }
  if (!opt_.replay_endpoint.empty()) {
    if (std::string p = kv_ipc_endpoint_taken(opt_.replay_endpoint); !p.empty())
      throw KvEventsSetupError(true, cat("cannot bind ", kv_endpoint_shown(opt_.replay_endpoint), ": ", p));
    try {
      z_->replay = std::make_unique<zmq::socket_t>(z_->ctx, zmq::socket_type::router);
      z_->replay->set(zmq::sockopt::linger, 0);
      if (kv_endpoint_is_ipv6(opt_.replay_endpoint)) z_->replay->set(zmq::sockopt::ipv6, true);
      // A full replay is at most buffer_steps + 1 messages: let all of them queue.
      z_->replay->set(zmq::sockopt::sndhwm, static_cast<int>(std::min<size_t>(opt_.buffer_steps + 16, 1 << 30)));
      z_->replay->bind(opt_.replay_endpoint);
      replay_endpoint_ = z_->replay->get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
      throw KvEventsSetupError(true, cat("cannot bind ", kv_endpoint_shown(opt_.replay_endpoint), ": ", e.what()));
    }
  }
  thread_ = std::thread([this] { run(); });
}

KvEventsPublisher::~KvEventsPublisher() { stop(); }

KvEventSink KvEventsPublisher::sink() {
  return [this](std::vector<KvEvent>&& events) { push(std::move(events)); };
}

void KvEventsPublisher::push(std::vector<KvEvent>&& events) {
  if (events.empty()) return;
  const size_t n = events.size();
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!stopping_ && queue_.size() < opt_.max_queued) {
      queue_.push_back(Step{now_s(), std::move(events)});
      cv_.notify_one();
      return;
    }
  }
  dropped_ += n;
}

void KvEventsPublisher::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (z_) {
    z_->replay.reset();
    z_->pub.close();  // waits at most kLingerMs for queued messages, as does the context
    z_.reset();
  }
}

KvEventsPublisher::Counts KvEventsPublisher::counts() const {
  return Counts{batches_.load(), events_.load(), dropped_.load(), replays_.load()};
}

void KvEventsPublisher::run() {
  for (;;) {
    std::deque<Step> steps;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, kIdleWait, [this] { return stopping_ || !queue_.empty(); });
      steps.swap(queue_);
      stopping = stopping_;
    }
    // Reading the events option makes the PUB socket take in new subscribers
    // and their subscriptions now rather than at the next send, whose message
    // they would miss.
    try {
      (void)z_->pub.get(zmq::sockopt::events);
    } catch (const zmq::error_t&) {
    }
    for (Step& s : steps) publish(s);
    serve_replays();
    if (stopping) {
      std::lock_guard<std::mutex> lk(mu_);
      if (queue_.empty()) return;  // push() refuses new steps once stopping
    }
  }
}

void KvEventsPublisher::publish(Step& step) {
  const uint64_t seq = next_seq_++;
  std::string payload =
      encode_kv_event_batch(step.ts, step.events, opt_.hash_format, opt_.data_parallel_rank, opt_.encoding);
  const std::string seq_bytes = seq_frame(static_cast<int64_t>(seq));
  try {
    // A PUB socket never blocks: past its high-water mark a subscriber misses
    // the message (and can ask the replay socket for it).
    z_->pub.send(zmq::buffer(opt_.topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    z_->pub.send(zmq::buffer(seq_bytes), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    z_->pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
    // Kept for replay below; nothing else to do for a subscriber that is gone.
  }
  batches_ += 1;
  events_ += step.events.size();
  buffer_.add(seq, std::move(payload));
}

// Answers every waiting request [identity, "", start] with [identity, "", seq,
// batch] per kept batch from start (a big-endian number of up to 8 bytes), then
// [identity, "", -1, ""]. Requests of another shape are ignored, as vLLM's
// publisher ignores them.
void KvEventsPublisher::serve_replays() {
  if (!z_->replay) return;
  for (;;) {
    std::vector<zmq::message_t> frames;
    zmq::recv_result_t got;
    try {
      got = zmq::recv_multipart(*z_->replay, std::back_inserter(frames), zmq::recv_flags::dontwait);
    } catch (const zmq::error_t&) {
      return;
    }
    if (!got) return;
    if (frames.size() != 3 || frames[2].size() > 8) continue;
    const std::string id = frames[0].to_string();
    const uint64_t start = seq_of_frame(frames[2].to_string_view());
    auto reply = [&](const std::string& seq, const std::string& body) {
      try {
        z_->replay->send(zmq::buffer(id), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        z_->replay->send(zmq::message_t(), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        z_->replay->send(zmq::buffer(seq), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        z_->replay->send(zmq::buffer(body), zmq::send_flags::dontwait);
      } catch (const zmq::error_t&) {
      }
    };
    for (const auto* b : buffer_.from(start)) reply(seq_frame(static_cast<int64_t>(b->first)), b->second);
    replays_ += 1;  // counted before the end marker goes out: a client that saw it sees the count
    reply(seq_frame(-1), "");
  }
}

}  // namespace og::server
