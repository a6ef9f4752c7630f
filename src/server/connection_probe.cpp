// Socket lookup by address pair, and a non-consuming check for a closed peer.
#include "server/connection_probe.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace og::server {

namespace {

// The numeric host and port of one end of a socket (getsockname / getpeername).
bool endpoint_of(int fd, bool peer, std::string* host, int* port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0 || (addr.ss_family != AF_INET && addr.ss_family != AF_INET6)) return false;
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  *host = h;
  *port = std::atoi(s);
  return true;
}

}  // namespace

int find_connection_socket(const std::string& local_addr, int local_port, const std::string& remote_addr,
                           int remote_port) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();  // strtol's end pointer points into it
    char* rest = nullptr;
    const long n = std::strtol(name.c_str(), &rest, 10);
    if (rest == name.c_str() || *rest != '\0' || n < 0) continue;
    const int fd = static_cast<int>(n);
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    std::string host;
    int port = -1;
    if (!endpoint_of(fd, /*peer=*/false, &host, &port) || port != local_port || host != local_addr) continue;
    if (!endpoint_of(fd, /*peer=*/true, &host, &port) || port != remote_port || host != remote_addr) continue;
    return fd;
  }
  return -1;
}

bool peer_closed(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // orderly shutdown: the client is not reading a reply
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace og::server
