// ConnectionLoop: the event loop (accept, read, parse, deadlines, writes of
// loop-answered responses, lingering closes) and its worker pool. Each
// connection is owned by the loop thread; while a worker answers it the loop
// does not watch it, and the worker hands it back through a queue and the
// poller's wake(). The system calls that differ between systems (epoll or
// poll, eventfd or a pipe, accept4 or accept + fcntl) are in poller.cpp and
// socket_ops.cpp; this file uses only their interfaces and POSIX.
#include "server/http_conn.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "server/poller.h"
#include "server/socket_ops.h"

namespace og::server {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kListenBacklog = 1024;
constexpr int kFdReserve = 64;  // descriptors kept for model files, logs and the like
constexpr std::chrono::milliseconds kTick{100};       // deadline sweep period
constexpr std::chrono::seconds kLinger{2};            // how long a closing connection's input is drained
constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kReadBudget = 1 << 20;  // bytes read from one connection per event (fairness)

enum class ConnState { kHead, kBody, kWorker, kWriting, kLinger, kClosed };

struct Conn {
  int fd = -1;
  ConnState state = ConnState::kHead;
  uint32_t events = 0;  // what the poller watches for it now (PollBits; 0 = not registered)
  std::string in;       // bytes read and not consumed (a partial head, a body, pipelined requests)
  HttpRequest req;
  ChunkedDecoder chunked;
  std::string out;  // a loop-written response not yet sent
  size_t out_pos = 0;
  bool close_after = false;  // once `out` is sent
  bool worker_close = false;  // set by the worker: the connection cannot serve another request
  Clock::time_point deadline;
  size_t accounted = 0;  // in + req.body as last counted into Impl::buffered
};

// The one 503 the loop writes when it is at max_connections.
std::string full_response() {
  HttpResponse r = error_response(503, "the server has too many open connections (--max-connections); retry later");
  r.set_header("Retry-After", "1");
  return serialize_response(r, /*keep_alive=*/false, /*head_only=*/false);
}

}  // namespace

struct ConnectionLoop::Impl {
  ConnOptions opts;
  ConnHandlers h;
  int listen_fd = -1;
  bool portable = false;  // OFFGRAPH_PORTABLE=1: the POSIX fallbacks (socket_ops.h)
  std::unique_ptr<Poller> poller;  // from start()
  std::string poller_name;
  int max_conns = 0;
  std::thread loop_thread;
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};
  std::atomic<int> open{0};
  // Request bytes the connections hold (heads, bodies, pipelined bytes; a
  // body until its worker is done), bounded by `budget` so that slow senders
  // cannot hold memory without limit: a read past it is answered 503.
  size_t buffered = 0, budget = 0;
  std::atomic<size_t> buffered_pub{0};
  bool started = false;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns;  // loop thread only (after start)
  std::vector<std::unique_ptr<Conn>> dead;  // closed in this event batch; freed after it
  bool accept_paused = false;
  Clock::time_point accept_resume;
  const std::string full = full_response();

  std::mutex mu;  // guards jobs, returned, workers_stop
  std::condition_variable cv;
  std::deque<Conn*> jobs;
  std::vector<Conn*> returned;
  bool workers_stop = false;

  // The poller's tag for the listener (every other tag is a Conn).
  char listen_tag = 0;

  void run();
  void accept_all();
  void reject_full(int fd);
  void on_event(Conn& c, uint32_t ev);
  bool read_some(Conn& c);
  void process(Conn& c);
  bool read_body(Conn& c);
  void dispatch(Conn& c);
  void respond(Conn& c, const HttpResponse& r, bool close);
  void flush(Conn& c);
  void linger(Conn& c);
  void close_conn(Conn& c);
  void account(Conn& c);
  void set_events(Conn& c, uint32_t ev);
  void sweep(Clock::time_point now);
  void take_returned();
  void worker_main();
  void wake();
  void shut_all();
};

void ConnectionLoop::Impl::set_events(Conn& c, uint32_t ev) {
  if (ev == c.events) return;
  if (ev == 0) {
    poller->remove(c.fd);
  } else if (c.events == 0) {
    poller->add(c.fd, ev, &c);
  } else {
    poller->modify(c.fd, ev, &c);
  }
  c.events = ev;
}

void ConnectionLoop::Impl::wake() { poller->wake(); }

void ConnectionLoop::Impl::close_conn(Conn& c) {
  if (c.state == ConnState::kClosed) return;
  set_events(c, 0);
  ::close(c.fd);
  c.state = ConnState::kClosed;
  buffered -= c.accounted;
  buffered_pub.store(buffered);
  c.accounted = 0;
  auto it = conns.find(&c);
  if (it != conns.end()) {
    dead.push_back(std::move(it->second));
    conns.erase(it);
  }
  open.store(static_cast<int>(conns.size()));
}

// Brings `buffered` up to date with what c holds (not while a worker has it).
void ConnectionLoop::Impl::account(Conn& c) {
  if (c.state == ConnState::kClosed || c.state == ConnState::kWorker) return;
  const size_t held = c.in.size() + c.req.body.size();
  buffered = buffered - c.accounted + held;
  c.accounted = held;
  buffered_pub.store(buffered);
}

// Stops sending, then reads and drops what the client still sends for a
// moment, so that closing with unread input does not reset the connection
// before the client has read the response.
void ConnectionLoop::Impl::linger(Conn& c) {
  ::shutdown(c.fd, SHUT_WR);
  c.in.clear();
  c.req.body.clear();
  c.state = ConnState::kLinger;
  c.deadline = Clock::now() + kLinger;
  set_events(c, kPollRead);
}

void ConnectionLoop::Impl::respond(Conn& c, const HttpResponse& orig, bool close) {
  if (!c.req.context && h.begin) h.begin(c.req);
  HttpResponse r = orig;
  if (h.prepare) h.prepare(c.req, r);
  const bool keep = !close && !r.close && c.req.keep_alive;
  if (h.count_status) h.count_status(r.status);
  c.out = serialize_response(r, keep, c.req.method == "HEAD", /*chunked=*/false, c.req.version_minor == 0);
  if (h.done) h.done(c.req, r.status);
  c.out_pos = 0;
  c.close_after = !keep;
  c.state = ConnState::kWriting;
  c.deadline = Clock::now() + std::chrono::seconds(opts.timeout_s);
  flush(c);
}

void ConnectionLoop::Impl::flush(Conn& c) {
  while (c.out_pos < c.out.size()) {
    const ssize_t n = send_nowait(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
      c.deadline = Clock::now() + std::chrono::seconds(opts.timeout_s);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return set_events(c, kPollWrite);
    return close_conn(c);
  }
  c.out.clear();
  c.out_pos = 0;
  if (c.close_after) return linger(c);
  c.state = ConnState::kHead;
  c.req = HttpRequest();
  c.deadline = Clock::now() + std::chrono::seconds(opts.header_timeout_s);
  set_events(c, kPollRead);
}

// Reads what is available; false when the connection was closed.
bool ConnectionLoop::Impl::read_some(Conn& c) {
  char buf[kReadChunk];
  size_t total = 0;
  while (total < kReadBudget) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      total += static_cast<size_t>(n);
      if (c.state == ConnState::kLinger) continue;
      if (buffered - c.accounted + c.in.size() + c.req.body.size() + static_cast<size_t>(n) > budget) {
        HttpResponse r = error_response(503, "the server holds too many request bytes from slow clients; retry later");
        r.set_header("Retry-After", "1");
        c.req = HttpRequest();
        respond(c, r, true);
        return c.state != ConnState::kClosed;
      }
      c.in.append(buf, static_cast<size_t>(n));
      process(c);
      if (c.state != ConnState::kHead && c.state != ConnState::kBody && c.state != ConnState::kLinger)
        return c.state != ConnState::kClosed;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    close_conn(c);  // end of stream or an error: the client is gone (or done, when lingering)
    return false;
  }
  return true;
}

void ConnectionLoop::Impl::on_event(Conn& c, uint32_t ev) {
  if (c.state == ConnState::kClosed || c.state == ConnState::kWorker) return;
  if (c.state == ConnState::kWriting) {
    if (ev & (kPollError | kPollHangup)) return close_conn(c);
    flush(c);
    if (c.state == ConnState::kHead) process(c);
  } else if (ev & (kPollRead | kPollHangup | kPollError)) {
    read_some(c);
  }
  account(c);
}

// Reads the body from c.in; true once it is whole (in c.req.body). An error
// is answered (and false returned).
bool ConnectionLoop::Impl::read_body(Conn& c) {
  if (!c.req.chunked) {
    const auto len = static_cast<size_t>(c.req.content_length);
    if (c.in.size() < len) return false;
    c.req.body = c.in.substr(0, len);
    c.in.erase(0, len);
    return true;
  }
  size_t pos = 0;
  const ChunkedDecoder::Status s = c.chunked.feed(c.in, &pos, &c.req.body, opts.max_body_bytes);
  c.in.erase(0, pos);
  switch (s) {
    case ChunkedDecoder::Status::kNeedMore:
      return false;
    case ChunkedDecoder::Status::kDone:
      return true;
    case ChunkedDecoder::Status::kTooLarge:
      respond(c, error_response(413, "the request body is larger than this server takes (" +
                                         std::to_string(opts.max_body_bytes) + " bytes, --max-body-bytes)"),
              true);
      return false;
    case ChunkedDecoder::Status::kError:
      respond(c, error_response(400, "bad chunked request body: " + c.chunked.error()), true);
      return false;
  }
  return false;
}

void ConnectionLoop::Impl::dispatch(Conn& c) {
  if (auto r = h.answer_now(c.req)) return respond(c, *r, false);
  account(c);  // the body stays counted until the worker hands the connection back
  c.state = ConnState::kWorker;
  set_events(c, 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    jobs.push_back(&c);
  }
  cv.notify_one();
}

// Parses and answers what c.in holds, request after request, until it needs
// more bytes or the connection leaves the loop's hands.
void ConnectionLoop::Impl::process(Conn& c) {
  while (c.state == ConnState::kHead || c.state == ConnState::kBody) {
    if (c.state == ConnState::kHead) {
      if (c.in.empty()) return;
      const HeadParse p = parse_request_head(c.in, opts.max_head_bytes, &c.req);
      if (p.status == ParseStatus::kIncomplete) return;
      if (p.status == ParseStatus::kError) return respond(c, error_response(p.error_status, p.error), true);
      c.in.erase(0, p.consumed);
      if (h.begin) h.begin(c.req);
      if (auto r = h.check_head(c.req)) {
        respond(c, *r, c.req.has_body());  // the body is not read: the connection cannot go on
        continue;
      }
      if (c.req.has_body()) {
        if (c.req.expect_continue) {
          static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
          const ssize_t n = send_nowait(c.fd, kContinue, sizeof kContinue - 1);
          (void)n;  // a fresh socket takes 25 bytes; a client that never reads it still sends its body
        }
        c.chunked = ChunkedDecoder();
        c.state = ConnState::kBody;
        c.deadline = Clock::now() + std::chrono::seconds(opts.timeout_s);
      } else {
        dispatch(c);
        continue;
      }
    }
    if (!read_body(c)) return;
    dispatch(c);
  }
}

void ConnectionLoop::Impl::reject_full(int fd) {
  if (h.count_status) h.count_status(503);
  char buf[4096];
  while (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  const ssize_t n = send_nowait(fd, full.data(), full.size());
  (void)n;  // best effort: the connection is closed either way
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

void ConnectionLoop::Impl::accept_all() {
  while (true) {
    const int fd = accept_connection(listen_fd, portable);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting for a tick instead of spinning on the ready listener.
        accept_paused = true;
        accept_resume = Clock::now() + kTick;
        poller->modify(listen_fd, 0, &listen_tag);
      }
      return;
    }
    if (static_cast<int>(conns.size()) >= max_conns) {
      reject_full(fd);
      continue;
    }
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // SSE pieces go out as they come
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->deadline = Clock::now() + std::chrono::seconds(opts.header_timeout_s);
    Conn& ref = *c;
    conns.emplace(&ref, std::move(c));
    open.store(static_cast<int>(conns.size()));
    set_events(ref, kPollRead);
  }
}

void ConnectionLoop::Impl::sweep(Clock::time_point now) {
  if (accept_paused && now >= accept_resume) {
    accept_paused = false;
    poller->modify(listen_fd, kPollRead, &listen_tag);
  }
  std::vector<Conn*> late;
  for (auto& [p, c] : conns)
    if (c->state != ConnState::kWorker && now >= c->deadline) late.push_back(p);
  for (Conn* c : late) {
    switch (c->state) {
      case ConnState::kHead:
        if (c->in.empty()) {
          close_conn(*c);  // idle (nothing sent, or between keep-alive requests)
        } else {
          c->req = HttpRequest();
          respond(*c, error_response(408, "the request head did not arrive within " +
                                              std::to_string(opts.header_timeout_s) + " s (--header-timeout-s)"),
                  true);
        }
        break;
      case ConnState::kBody:
        respond(*c, error_response(408, "the request body did not arrive within " + std::to_string(opts.timeout_s) +
                                            " s (--timeout-s)"),
                true);
        break;
      default:
        close_conn(*c);  // a client that does not read its response, or a lingering close
        break;
    }
    account(*c);
  }
}

void ConnectionLoop::Impl::take_returned() {
  std::vector<Conn*> back;
  {
    std::lock_guard<std::mutex> lock(mu);
    back.swap(returned);
  }
  for (Conn* c : back) {
    c->req.body.clear();
    c->req.body.shrink_to_fit();
    if (c->worker_close) {
      c->state = ConnState::kHead;  // the loop's again (linger() sets its state)
      linger(*c);
    } else {
      c->state = ConnState::kHead;
      c->req = HttpRequest();
      c->deadline = Clock::now() + std::chrono::seconds(opts.header_timeout_s);
      set_events(*c, kPollRead);
      process(*c);  // a pipelined request may be waiting in c->in
    }
    account(*c);
  }
}

void ConnectionLoop::Impl::run() {
  std::vector<PollEvent> events;
  auto last_sweep = Clock::now();
  while (!stopping.load()) {
    const bool woken = poller->wait(static_cast<int>(kTick.count()), &events);
    for (const PollEvent& e : events) {
      if (e.tag == &listen_tag) {
        accept_all();
      } else {
        on_event(*static_cast<Conn*>(e.tag), e.bits);
      }
    }
    if (woken) take_returned();
    dead.clear();
    const auto now = Clock::now();
    if (now - last_sweep >= kTick) {
      sweep(now);
      dead.clear();
      last_sweep = now;
    }
  }
  shut_all();
}

// On the way out: the listener and every connection the loop holds are
// closed; a worker's connection is shut down (its writes fail, its probe sees
// the client gone) and closed once the workers are joined.
void ConnectionLoop::Impl::shut_all() {
  ::close(listen_fd);
  listen_fd = -1;
  std::vector<Conn*> all;
  for (auto& [p, c] : conns) all.push_back(p);
  for (Conn* c : all) {
    if (c->state == ConnState::kWorker) {
      ::shutdown(c->fd, SHUT_RDWR);
    } else {
      close_conn(*c);
    }
  }
  dead.clear();
}

void ConnectionLoop::Impl::worker_main() {
  while (true) {
    Conn* c = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return workers_stop || !jobs.empty(); });
      if (jobs.empty()) return;
      c = jobs.front();
      jobs.pop_front();
    }
    if (!stopping.load()) {
      ResponseWriter w(c->fd, c->req.keep_alive, c->req.version_minor >= 1, c->req.method == "HEAD", opts.timeout_s,
                       h.count_status, &stopping);
      if (h.prepare) w.set_prepare([&](HttpResponse& r) { h.prepare(c->req, r); });
      h.answer_on_worker(c->req, w);
      if (h.done) h.done(c->req, w.status());
      c->worker_close = !w.reusable();
    } else {
      c->worker_close = true;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      returned.push_back(c);
    }
    wake();
  }
}

ConnectionLoop::ConnectionLoop(ConnOptions opts, ConnHandlers handlers) : impl_(std::make_unique<Impl>()) {
  impl_->opts = std::move(opts);
  impl_->h = std::move(handlers);
  impl_->portable = portable_calls_forced();
  // At least one largest request fits, whatever the option says.
  const ConnOptions& o = impl_->opts;
  impl_->budget = static_cast<size_t>(std::max<int64_t>(
      o.max_buffered_bytes, o.max_body_bytes + static_cast<int64_t>(o.max_head_bytes + 2 * kReadChunk)));
}

ConnectionLoop::~ConnectionLoop() { stop(); }

int ConnectionLoop::bind() {
  Impl& m = *impl_;
  // Every connection is a descriptor: take what the hard limit allows.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  const int64_t fd_room = rl.rlim_cur == RLIM_INFINITY ? INT32_MAX : static_cast<int64_t>(rl.rlim_cur) - kFdReserve;
  m.max_conns = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(m.opts.max_connections, fd_room)));

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(m.opts.port);
  const char* host = m.opts.host.empty() ? nullptr : m.opts.host.c_str();
  auto fail_listen = [&] { fail("cannot listen on ", m.opts.host, ":", m.opts.port, " (address in use or not local?)"); };
  if (getaddrinfo(host, port.c_str(), &hints, &res) != 0) fail_listen();
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = open_socket(a->ai_family, a->ai_socktype, a->ai_protocol, m.portable);
    if (fd < 0) continue;
    // SO_REUSEADDR alone allows a quick restart; SO_REUSEPORT would let a second server share the port.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, kListenBacklog) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) fail_listen();
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int bound = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  m.listen_fd = fd;
  return bound;
}

void ConnectionLoop::start() {
  Impl& m = *impl_;
  OG_CHECK(m.listen_fd >= 0, "ConnectionLoop::start before bind");
  m.poller = Poller::create(m.portable);
  m.poller_name = m.poller->name();
  OG_CHECK(m.poller->add(m.listen_fd, kPollRead, &m.listen_tag), "cannot watch the listening socket: ",
           std::strerror(errno));
  guard_sigpipe(m.portable);
  const int n = std::max(1, m.opts.workers);
  for (int i = 0; i < n; ++i) m.workers.emplace_back([&m] { m.worker_main(); });
  m.loop_thread = std::thread([&m] { m.run(); });
  m.started = true;
}

void ConnectionLoop::stop() {
  Impl& m = *impl_;
  if (!m.started) {
    if (m.listen_fd >= 0) ::close(m.listen_fd);
    m.listen_fd = -1;
    return;
  }
  m.stopping.store(true);
  m.wake();
  m.loop_thread.join();
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.workers_stop = true;
  }
  m.cv.notify_all();
  for (auto& t : m.workers) t.join();
  m.workers.clear();
  for (auto& [p, c] : m.conns) ::close(c->fd);
  m.conns.clear();
  m.jobs.clear();
  m.returned.clear();
  m.open.store(0);
  m.buffered = 0;
  m.buffered_pub.store(0);
  m.poller.reset();
  m.started = false;
}

int ConnectionLoop::open_connections() const { return impl_->open.load(); }

int ConnectionLoop::max_connections() const { return impl_->max_conns; }

const std::string& ConnectionLoop::poller_name() const { return impl_->poller_name; }

int64_t ConnectionLoop::buffered_bytes() const { return static_cast<int64_t>(impl_->buffered_pub.load()); }

}  // namespace og::server
