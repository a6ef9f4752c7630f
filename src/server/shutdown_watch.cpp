// serve's signal watch (shutdown_watch.h). The forced exits use _exit after a
// write(2) of their line: the main thread may be stuck inside anything (a
// render, a blocked read, a join), holding stdio's locks or not, and no
// destructor or atexit handler may be left to block the exit.
#include "server/shutdown_watch.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "server/socket_ops.h"

namespace og::server {

namespace {

int g_pipe[2] = {-1, -1};

extern "C" void on_serve_signal(int sig) {
  const int saved = errno;
  const char c = static_cast<char>(sig);
  const ssize_t n = write(g_pipe[1], &c, 1);
  (void)n;
  errno = saved;
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

// One line on stderr, then the end of the process with 128 + sig.
[[noreturn]] void end_now(const std::string& line, int sig) {
  const std::string out = "[serve] " + line + "\n";
  const ssize_t n = write(STDERR_FILENO, out.data(), out.size());
  (void)n;
  _exit(128 + sig);
}

}  // namespace

ShutdownWatch::ShutdownWatch(double grace_s, double margin_s) : grace_s_(grace_s), margin_s_(margin_s) {
  if (g_pipe[0] < 0)
    OG_CHECK(open_pipe(g_pipe, portable_calls_forced()), "cannot create the signal pipe: ", std::strerror(errno));
  struct sigaction sa {};
  sa.sa_handler = on_serve_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  thread_ = std::thread([this] { watch(); });
}

ShutdownWatch::~ShutdownWatch() {
  const char stand_down = 0;
  const ssize_t n = write(g_pipe[1], &stand_down, 1);
  (void)n;
  thread_.join();
}

void ShutdownWatch::set_ready() {
  std::lock_guard<std::mutex> lock(mu_);
  ready_ = true;
}

int ShutdownWatch::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return signal_ != 0; });
  return signal_;
}

int ShutdownWatch::next_byte(int timeout_ms) const {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  while (true) {
    int wait_ms = -1;
    if (timeout_ms >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return -1;
      wait_ms = static_cast<int>(left.count());
    }
    pollfd p{g_pipe[0], POLLIN, 0};
    const int r = poll(&p, 1, wait_ms);
    if (r < 0 && errno != EINTR) return 0;  // cannot watch: behave as stood down (the main path still runs)
    if (r <= 0) continue;
    char c = 0;
    const ssize_t n = read(g_pipe[0], &c, 1);
    if (n == 1) return static_cast<unsigned char>(c);
    if (n < 0 && errno != EINTR && errno != EAGAIN) return 0;
  }
}

void ShutdownWatch::watch() {
  const int sig = next_byte(-1);
  if (sig <= 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_) end_now(std::string(signal_name(sig)) + " while loading the model: stopped before serving", sig);
    signal_ = sig;
  }
  cv_.notify_all();
  const double limit_s = grace_s_ + margin_s_;
  const int next = next_byte(static_cast<int>(std::ceil(limit_s * 1000)));
  if (next == 0) return;  // the graceful shutdown ended in time
  if (next < 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "shutdown did not finish within %.1f s (--shutdown-grace-s %.1f + %g s): exiting now", limit_s,
                  grace_s_, margin_s_);
    end_now(buf, sig);
  }
  end_now(std::string("second signal (") + signal_name(next) + ") during the shutdown: exiting now", next);
}

}  // namespace og::server
