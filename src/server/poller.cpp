// Poller backends (poller.h): epoll (where OG_HAVE_EPOLL) and poll(2).
#include "server/poller.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#if defined(OG_HAVE_EPOLL)
#include <sys/epoll.h>
#endif
#if defined(OG_HAVE_EVENTFD)
#include <sys/eventfd.h>
#endif

#include "base/error.h"
#include "server/socket_ops.h"

namespace og::server {

namespace {

// The wake descriptors: an eventfd (one descriptor) where there is one and
// the caller wants the fast path, else a non-blocking self-pipe.
void open_wake(bool portable, int* rd, int* wr) {
#if defined(OG_HAVE_EVENTFD)
  if (!portable) {
    *rd = *wr = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    OG_CHECK(*rd >= 0, "cannot create the server's event loop (eventfd): ", std::strerror(errno));
    return;
  }
#endif
  int p[2];
  OG_CHECK(open_pipe(p, portable) && set_fd_flags(p[0], true) && set_fd_flags(p[1], true),
           "cannot create the server's event loop (pipe): ", std::strerror(errno));
  *rd = p[0];
  *wr = p[1];
}

// poll(2): an array of pollfd, an index by descriptor for changes.
class PollPoller final : public Poller {
 public:
  PollPoller(int rd, int wr) : Poller(rd, wr) {
    fds_.push_back({wake_read_, POLLIN, 0});
    tags_.push_back(nullptr);
    index_[wake_read_] = 0;
  }
  bool add(int fd, uint32_t bits, void* tag) override {
    if (index_.count(fd)) return false;
    index_[fd] = fds_.size();
    fds_.push_back({fd, to_poll(bits), 0});
    tags_.push_back(tag);
    return true;
  }
  void modify(int fd, uint32_t bits, void* tag) override {
    auto it = index_.find(fd);
    if (it == index_.end()) return;
    fds_[it->second].events = to_poll(bits);
    tags_[it->second] = tag;
  }
  void remove(int fd) override {
    auto it = index_.find(fd);
    if (it == index_.end() || fd == wake_read_) return;
    const size_t i = it->second, last = fds_.size() - 1;
    index_.erase(it);
    if (i != last) {  // the last entry takes the hole
      fds_[i] = fds_[last];
      tags_[i] = tags_[last];
      index_[fds_[i].fd] = i;
    }
    fds_.pop_back();
    tags_.pop_back();
  }
  bool wait(int timeout_ms, std::vector<PollEvent>* out) override {
    out->clear();
    const int n = ::poll(fds_.data(), static_cast<nfds_t>(fds_.size()), timeout_ms);
    if (n <= 0) return false;
    bool woken = false;
    // Copied out before the caller changes the set (a handler may remove
    // any descriptor, or add one that reuses a closed one's number).
    for (size_t i = 0; i < fds_.size(); ++i) {
      const short r = fds_[i].revents;
      if (r == 0) continue;
      fds_[i].revents = 0;
      if (fds_[i].fd == wake_read_) {
        woken = true;
        continue;
      }
      uint32_t bits = 0;
      if (r & POLLIN) bits |= kPollRead;
      if (r & POLLOUT) bits |= kPollWrite;
      if (r & POLLHUP) bits |= kPollHangup;
      if (r & (POLLERR | POLLNVAL)) bits |= kPollError;
      out->push_back({tags_[i], bits});
    }
    if (woken) drain_wake();
    return woken;
  }
  const char* name() const override { return "poll"; }

 private:
  static short to_poll(uint32_t bits) {
    short e = 0;
    if (bits & kPollRead) e |= POLLIN;
    if (bits & kPollWrite) e |= POLLOUT;
    return e;
  }
  std::vector<pollfd> fds_;
  std::vector<void*> tags_;
  std::unordered_map<int, size_t> index_;
};

#if defined(OG_HAVE_EPOLL)
class EpollPoller final : public Poller {
 public:
  EpollPoller(int ep, int rd, int wr) : Poller(rd, wr), ep_(ep), events_(256) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.ptr = &wake_tag_;
    if (epoll_ctl(ep_, EPOLL_CTL_ADD, wake_read_, &e) != 0) {
      const int err = errno;
      ::close(ep_);  // this destructor will not run; the base's closes the wake descriptors
      fail("cannot create the server's event loop (epoll): ", std::strerror(err));
    }
  }
  ~EpollPoller() override { ::close(ep_); }
  bool add(int fd, uint32_t bits, void* tag) override { return ctl(EPOLL_CTL_ADD, fd, bits, tag); }
  void modify(int fd, uint32_t bits, void* tag) override { ctl(EPOLL_CTL_MOD, fd, bits, tag); }
  void remove(int fd) override { epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr); }
  bool wait(int timeout_ms, std::vector<PollEvent>* out) override {
    out->clear();
    const int n = epoll_wait(ep_, events_.data(), static_cast<int>(events_.size()), timeout_ms);
    bool woken = false;
    for (int i = 0; i < n; ++i) {
      const epoll_event& e = events_[static_cast<size_t>(i)];
      if (e.data.ptr == &wake_tag_) {
        woken = true;
        continue;
      }
      uint32_t bits = 0;
      if (e.events & (EPOLLIN | EPOLLRDHUP)) bits |= kPollRead;
      if (e.events & EPOLLOUT) bits |= kPollWrite;
      if (e.events & EPOLLHUP) bits |= kPollHangup;
      if (e.events & EPOLLERR) bits |= kPollError;
      out->push_back({e.data.ptr, bits});
    }
    if (woken) drain_wake();
    return woken;
  }
  const char* name() const override { return "epoll"; }

 private:
  bool ctl(int op, int fd, uint32_t bits, void* tag) {
    epoll_event e{};
    if (bits & kPollRead) e.events |= EPOLLIN | EPOLLRDHUP;
    if (bits & kPollWrite) e.events |= EPOLLOUT;
    e.data.ptr = tag;
    return epoll_ctl(ep_, op, fd, &e) == 0;
  }
  int ep_;
  char wake_tag_ = 0;
  std::vector<epoll_event> events_;
};
#endif

}  // namespace

Poller::~Poller() {
  ::close(wake_read_);
  if (wake_write_ != wake_read_) ::close(wake_write_);
}

void Poller::wake() {
  // 8 bytes: an eventfd takes nothing shorter (a pipe takes any).
  const uint64_t one = 1;
  const ssize_t n = ::write(wake_write_, &one, sizeof one);
  (void)n;  // a full pipe or counter already wakes the loop
}

void Poller::drain_wake() {
  char buf[256];
  while (::read(wake_read_, buf, sizeof buf) > 0) {
  }
}

std::unique_ptr<Poller> Poller::create(bool portable) {
  int rd = -1, wr = -1;
#if defined(OG_HAVE_EPOLL)
  if (!portable) {
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    OG_CHECK(ep >= 0, "cannot create the server's event loop (epoll): ", std::strerror(errno));
    try {
      open_wake(portable, &rd, &wr);
    } catch (...) {
      ::close(ep);
      throw;
    }
    return std::make_unique<EpollPoller>(ep, rd, wr);
  }
#endif
  open_wake(portable, &rd, &wr);
  return std::make_unique<PollPoller>(rd, wr);
}

}  // namespace og::server
