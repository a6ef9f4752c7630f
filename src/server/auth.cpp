// Constant-time API key checks.
#include "server/auth.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>

namespace og::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Walk the longer length whatever the contents; a length difference is folded
  // into the accumulator instead of returning early.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  volatile unsigned char acc = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    acc = acc | static_cast<unsigned char>(x ^ y);
  }
  return acc == 0;
}

bool ApiKeys::allows(std::string_view authorization) const {
  if (keys_.empty()) return true;
  // The scheme is case-insensitive and followed by one or more spaces (RFC 7235: "bearer K" is "Bearer K").
  constexpr std::string_view kBearer = "bearer";
  if (authorization.size() <= kBearer.size() || authorization[kBearer.size()] != ' ') return false;
  for (size_t i = 0; i < kBearer.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kBearer[i]) return false;
  const size_t start = authorization.find_first_not_of(' ', kBearer.size());
  if (start == std::string_view::npos) return false;  // a scheme and no key
  const std::string_view given = authorization.substr(start);
  bool ok = false;
  for (const auto& k : keys_) ok = constant_time_equal(given, k) | ok;  // no short-circuit: every key is compared
  return ok;
}

namespace {

// The canonical text of an IP literal, or "" when `s` is not one.
std::string canonical_ip(const std::string& s) {
  char buf[INET6_ADDRSTRLEN];
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, s.c_str(), &a4) == 1) return inet_ntop(AF_INET, &a4, buf, sizeof buf) ? buf : "";
  if (inet_pton(AF_INET6, s.c_str(), &a6) == 1) return inet_ntop(AF_INET6, &a6, buf, sizeof buf) ? buf : "";
  return "";
}

bool all_digits(std::string_view s) { return s.find_first_not_of("0123456789") == std::string_view::npos; }

// The addresses `host` resolves to (as a bind would), each canonical; *every
// is set when one is the wildcard address.
std::vector<std::string> listen_addresses(const std::string& host, bool* every, bool* loopback) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), "0", &hints, &res) != 0) return out;
  for (addrinfo* a = res; a; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = "";
    if (a->ai_family == AF_INET) {
      const in_addr ip = reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
      *every |= ip.s_addr == htonl(INADDR_ANY);
      *loopback |= (ntohl(ip.s_addr) >> 24) == 127;
      inet_ntop(AF_INET, &ip, buf, sizeof buf);
    } else if (a->ai_family == AF_INET6) {
      const in6_addr ip = reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
      *every |= IN6_IS_ADDR_UNSPECIFIED(&ip);
      *loopback |= IN6_IS_ADDR_LOOPBACK(&ip) || (IN6_IS_ADDR_V4MAPPED(&ip) && ip.s6_addr[12] == 127);
      inet_ntop(AF_INET6, &ip, buf, sizeof buf);
    }
    if (buf[0]) out.emplace_back(buf);
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace

std::string normalize_host(std::string_view h) {
  std::string_view name = h;
  std::string_view port;
  if (!name.empty() && name.front() == '[') {  // [IPv6]:port
    const size_t close = name.find(']');
    if (close == std::string_view::npos) return "";
    port = name.substr(close + 1);
    if (!port.empty() && port.front() != ':') return "";
    name = name.substr(1, close - 1);
    const std::string ip = canonical_ip(std::string(name));
    return ip.find(':') != std::string::npos && all_digits(port.substr(port.empty() ? 0 : 1)) ? ip : "";
  }
  if (std::count(name.begin(), name.end(), ':') == 1) {  // name:port (more colons: a bare IPv6 literal)
    port = name.substr(name.find(':') + 1);
    name = name.substr(0, name.find(':'));
    if (!all_digits(port)) return "";
  }
  std::string n(name);
  if (!n.empty() && n.back() == '.') n.pop_back();  // "localhost." is the name localhost
  if (const std::string ip = canonical_ip(n); !ip.empty()) return ip;
  if (n.empty() || n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") !=
                       std::string::npos)
    return "";
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return n;
}

HostCheck::HostCheck(const std::string& listen_host, const std::vector<std::string>& allow, bool keys) {
  if (std::find(allow.begin(), allow.end(), "*") != allow.end() || (keys && allow.empty())) return;
  bool every = false, loopback = false;
  names_ = listen_addresses(listen_host, &every, &loopback);
  if (every && allow.empty()) return;  // remote clients name the server as they like
  any_ = false;
  any_ip_ = every;
  if (const std::string n = normalize_host(listen_host); !n.empty()) names_.push_back(n);
  if (loopback || every) names_.push_back("localhost");
  for (const std::string& a : allow)
    if (const std::string n = normalize_host(a); !n.empty()) names_.push_back(n);
  std::sort(names_.begin(), names_.end());
  names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
  // The wildcard's own literal names no server; any IP literal is served instead.
  if (every) names_.erase(std::remove_if(names_.begin(), names_.end(), [](const std::string& n) {
                            return n == "0.0.0.0" || n == "::";
                          }),
                          names_.end());
}

bool HostCheck::allows(const std::string* host) const {
  if (any_ || !host || host->empty()) return true;
  const std::string n = normalize_host(*host);
  if (n.empty()) return false;
  if (any_ip_ && !canonical_ip(n).empty()) return true;
  return std::binary_search(names_.begin(), names_.end(), n);
}

std::string HostCheck::describe() const {
  std::string out = any_ip_ ? "any IP address" : "";
  for (const std::string& n : names_) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace og::server
