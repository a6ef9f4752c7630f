// How `offgraph serve` stops on SIGINT / SIGTERM, with a bound that nothing
// the server is doing can stretch. A handler writes the signal to a pipe that
// a watch thread reads (a handler, not a signal mask, so that threads started
// by libraries cannot swallow the signals); then:
//  - before set_ready() (the model is loading: a long parse, a template being
//    compiled, a read that blocks) there is nothing to drain: the process
//    ends at once with one line on stderr;
//  - once ready, wait() returns the signal to the main thread, which runs the
//    graceful shutdown (drain, grace, cancel, close); if that has not ended
//    (the watch destroyed) within grace + margin of the signal, or a second
//    signal comes, the process ends there with one line on stderr.
// The exit code is 128 + the signal in every case (130 SIGINT, 143 SIGTERM),
// as for a graceful stop: the stderr line tells a forced stop apart.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

namespace og::server {

// The seconds past --shutdown-grace-s that a graceful shutdown may take
// (cancelling what still runs, writing the last responses, closing) before
// the process is ended.
inline constexpr double kShutdownMarginS = 5;

class ShutdownWatch {
 public:
  // Installs the SIGINT and SIGTERM handlers (whatever the inherited
  // disposition: a background job's ignored SIGINT included) and starts the
  // watch. One per process.
  ShutdownWatch(double grace_s, double margin_s = kShutdownMarginS);
  // Stands the watch down: the graceful shutdown is over.
  ~ShutdownWatch();
  ShutdownWatch(const ShutdownWatch&) = delete;
  ShutdownWatch& operator=(const ShutdownWatch&) = delete;

  // The server serves from now on: a signal starts the graceful path.
  void set_ready();
  // Blocks until the first signal once ready; returns it.
  int wait();

 private:
  void watch();
  // The next byte from the signal pipe within timeout_ms (< 0: no limit);
  // -1 on timeout. 0 is the destructor's stand-down byte.
  int next_byte(int timeout_ms) const;

  const double grace_s_, margin_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false;
  int signal_ = 0;
  std::thread thread_;
};

}  // namespace og::server
