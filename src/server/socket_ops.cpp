// Descriptor calls with a Linux fast path and a POSIX fallback (socket_ops.h).
// The fast paths are selected by feature macros (CMake's tests for accept4
// and pipe2, the header's SOCK_NONBLOCK/MSG_NOSIGNAL/SO_NOSIGPIPE), never by
// the name of the system.
#include "server/socket_ops.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace og::server {

namespace {

// False once guard_sigpipe() chose the fallback: SIGPIPE ignored instead.
std::atomic<bool> g_use_msg_nosignal{true};

// Where a socket can be told not to raise SIGPIPE (macOS, the BSDs).
void set_nosigpipe(int fd) {
#ifdef SO_NOSIGPIPE
  int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, sizeof yes);
#else
  (void)fd;
#endif
}

// Closes fd keeping the errno that made us give up on it; returns -1.
int close_keep_errno(int fd) {
  const int e = errno;
  ::close(fd);
  errno = e;
  return -1;
}

}  // namespace

bool portable_calls_forced() {
  const char* v = std::getenv("OFFGRAPH_PORTABLE");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

bool set_fd_flags(int fd, bool nonblocking) {
  const int fd_flags = fcntl(fd, F_GETFD);
  if (fd_flags < 0 || fcntl(fd, F_SETFD, fd_flags | FD_CLOEXEC) != 0) return false;
  if (!nonblocking) return true;
  const int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

int open_socket(int family, int type, int protocol, bool portable) {
#if defined(SOCK_NONBLOCK) && defined(SOCK_CLOEXEC) && !defined(OFFGRAPH_PORTABLE_ONLY)
  if (!portable) {
    const int fd = ::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
    if (fd >= 0) set_nosigpipe(fd);
    return fd;
  }
#else
  (void)portable;
#endif
  // Between socket() and fcntl() a fork + exec elsewhere in the process could
  // inherit the descriptor: the price of the fallback.
  const int fd = ::socket(family, type, protocol);
  if (fd < 0) return -1;
  if (!set_fd_flags(fd, true)) return close_keep_errno(fd);
  set_nosigpipe(fd);
  return fd;
}

int accept_connection(int listen_fd, bool portable) {
#if defined(OG_HAVE_ACCEPT4)
  if (!portable) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) set_nosigpipe(fd);
    return fd;
  }
#else
  (void)portable;
#endif
  // Linux's accept() does not pass the listener's O_NONBLOCK on (the BSDs'
  // does): set both flags either way.
  const int fd = ::accept(listen_fd, nullptr, nullptr);
  if (fd < 0) return -1;
  if (!set_fd_flags(fd, true)) return close_keep_errno(fd);
  set_nosigpipe(fd);
  return fd;
}

bool open_pipe(int fds[2], bool portable) {
#if defined(OG_HAVE_PIPE2)
  if (!portable) return pipe2(fds, O_CLOEXEC) == 0;
#else
  (void)portable;
#endif
  if (::pipe(fds) != 0) return false;
  if (set_fd_flags(fds[0], false) && set_fd_flags(fds[1], false)) return true;
  const int e = errno;
  ::close(fds[0]);
  ::close(fds[1]);
  fds[0] = fds[1] = -1;
  errno = e;
  return false;
}

void guard_sigpipe(bool portable) {
#if (defined(MSG_NOSIGNAL) || defined(SO_NOSIGPIPE)) && !defined(OFFGRAPH_PORTABLE_ONLY)
  if (!portable) return;  // each send says so, or each socket does
#else
  (void)portable;
#endif
  g_use_msg_nosignal.store(false);
  struct sigaction old {};
  // A program's own handler stays (it then sees each broken pipe); the
  // default, which ends the process, is replaced.
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, nullptr);
  }
}

ssize_t send_nowait(int fd, const void* data, size_t n) {
  int flags = 0;
#ifdef MSG_DONTWAIT
  flags |= MSG_DONTWAIT;  // elsewhere the descriptor's O_NONBLOCK does it
#endif
#if defined(MSG_NOSIGNAL) && !defined(OFFGRAPH_PORTABLE_ONLY)
  if (g_use_msg_nosignal.load(std::memory_order_relaxed)) flags |= MSG_NOSIGNAL;
#endif
  return ::send(fd, data, n, flags);
}

}  // namespace og::server
