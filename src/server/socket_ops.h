// The server's descriptor calls with a Linux fast path and a POSIX fallback:
// sockets and accepted connections opened non-blocking and close-on-exec
// (socket/accept4 with SOCK_NONBLOCK|SOCK_CLOEXEC, else the call and then
// fcntl), close-on-exec pipes (pipe2, else pipe + fcntl), and sends that
// never raise SIGPIPE (MSG_NOSIGNAL, else SO_NOSIGPIPE on each socket, else
// SIGPIPE ignored process-wide). The fast paths are compiled where CMake's
// feature tests found them (OG_HAVE_ACCEPT4, OG_HAVE_PIPE2; none under
// -DOFFGRAPH_PORTABLE_ONLY=ON); `portable` (from OFFGRAPH_PORTABLE=1) takes
// the fallbacks at run time even where the fast path exists, so that they
// are tested on Linux too.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace og::server {

// True when the environment says OFFGRAPH_PORTABLE=1: use the POSIX
// fallbacks (the poll backend, a self-pipe, accept + fcntl, ...) even where
// the Linux calls exist. Read at each call (the server reads it at start).
bool portable_calls_forced();

// A socket(2), non-blocking and close-on-exec; -1 (errno set) on failure.
int open_socket(int family, int type, int protocol, bool portable);
// accept(2) of one connection, non-blocking and close-on-exec, SIGPIPE-free
// where the socket can say so; -1 (errno set, EAGAIN: none waiting).
int accept_connection(int listen_fd, bool portable);
// A close-on-exec pipe (blocking ends); false (errno set) on failure.
bool open_pipe(int fds[2], bool portable);
// Sets O_NONBLOCK (when nonblocking) and FD_CLOEXEC; false on failure.
bool set_fd_flags(int fd, bool nonblocking);

// Makes sure that a send to a closed connection cannot raise SIGPIPE:
// nothing where MSG_NOSIGNAL or SO_NOSIGPIPE does it; otherwise (or when
// portable) SIGPIPE is ignored, unless the program installed its own
// handler, and send_nowait() stops passing MSG_NOSIGNAL. Call before the
// first send (the server calls it at start).
void guard_sigpipe(bool portable);
// One non-blocking send(2) that raises no SIGPIPE: its result and errno.
ssize_t send_nowait(int fd, const void* data, size_t n);

}  // namespace og::server
