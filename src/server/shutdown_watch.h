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
// before the process is ended: the sum of the bounds of what it does once the
// grace has passed, in this order, so that a shutdown that spends every bound
// (a hung disk, a client that stops reading) still ends on the graceful path:
//  - the prefix cache's disk tier writes back what only memory holds
//    (PrefixDiskOptions::shutdown_write_s, checked equal in cmd_serve.cpp);
//  - the cancelled requests' last responses are written: until the margin's
//    end less the close's share (shutdown_responses_s), at most this long;
//  - the connections are closed and the server, the scheduler and the disk
//    worker (which waits up to 1 s for the job it is doing) are destroyed.
inline constexpr double kShutdownWriteBackS = 2;
inline constexpr double kShutdownResponsesS = 1.5;
inline constexpr double kShutdownCloseS = 1.5;
inline constexpr double kShutdownMarginS = kShutdownWriteBackS + kShutdownResponsesS + kShutdownCloseS;

// How long the last responses may still be written when `elapsed_s` have
// passed since the signal: up to the margin's end less the close's share.
inline double shutdown_responses_s(double grace_s, double elapsed_s) {
  const double left = grace_s + kShutdownMarginS - kShutdownCloseS - elapsed_s;
  return left < 0 ? 0 : left < kShutdownResponsesS ? left : kShutdownResponsesS;
}

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
