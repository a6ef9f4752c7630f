// Poller: the readiness wait under the server's event loop (http_conn.cpp),
// with two backends behind one small interface: epoll where the system has
// it (Linux), and poll(2), which every POSIX system has (macOS, the BSDs).
// Both are level-triggered. Each descriptor carries a tag (the loop's
// connection) that a ready event hands back. wake() lets another thread
// interrupt a wait: an eventfd under epoll where there is one, a self-pipe
// otherwise.
//
// Which backend: epoll where compiled in (OG_HAVE_EPOLL, found by CMake's
// feature test), unless the caller asks for the portable one; the server asks
// when the environment says OFFGRAPH_PORTABLE=1 (socket_ops.h), which is how
// the poll backend and the other POSIX fallbacks are tested on Linux.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace og::server {

// Interest and readiness bits (what a backend's own bits map to).
enum PollBits : uint32_t {
  kPollRead = 1,   // data, or the peer's end of stream
  kPollWrite = 2,  // room to send
  kPollHangup = 4,
  kPollError = 8,
};

struct PollEvent {
  void* tag = nullptr;
  uint32_t bits = 0;
};

class Poller {
 public:
  // The backend: "poll" when portable is true or epoll is not compiled in.
  // og::Error when the system refuses its descriptors.
  static std::unique_ptr<Poller> create(bool portable);

  virtual ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Registers fd (not yet registered) for `bits` (0: registered, nothing
  // asked; errors and hangups may still be reported). false when the system
  // refuses (the descriptor is then not watched).
  virtual bool add(int fd, uint32_t bits, void* tag) = 0;
  virtual void modify(int fd, uint32_t bits, void* tag) = 0;
  virtual void remove(int fd) = 0;  // before the descriptor is closed
  // Waits up to timeout_ms (-1: no limit) and fills `out` (cleared first)
  // with the ready descriptors' tags. Returns true when wake() was called
  // since the last wait (its signal is consumed). Interrupted by a signal, it
  // returns with nothing ready.
  virtual bool wait(int timeout_ms, std::vector<PollEvent>* out) = 0;
  // From any thread: makes the current or next wait() return true.
  void wake();
  virtual const char* name() const = 0;

 protected:
  // wake_read_ == wake_write_ for an eventfd.
  Poller(int wake_read, int wake_write) : wake_read_(wake_read), wake_write_(wake_write) {}
  void drain_wake();  // after wake_read_ was seen readable
  int wake_read_ = -1, wake_write_ = -1;
};

}  // namespace og::server
