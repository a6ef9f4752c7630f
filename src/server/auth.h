// Who may call the server. API keys: a request to a protected route must
// carry "Authorization: Bearer <key>" naming one of the server's keys (the
// scheme in any case). Keys are compared in time that does not depend on
// where they differ (nor on which key matched), so response timing leaks
// nothing about a key's bytes. The Host check: see HostCheck.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace og::server {

// True when a == b; the time taken depends only on the lengths, never on the bytes.
bool constant_time_equal(std::string_view a, std::string_view b);

class ApiKeys {
 public:
  ApiKeys() = default;
  explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}

  bool enabled() const { return !keys_.empty(); }
  // The Authorization header's value ("" when absent): true when no keys are
  // set, or it is "Bearer K" for one of them (every key is compared).
  bool allows(std::string_view authorization) const;

 private:
  std::vector<std::string> keys_;
};

// The Host header check against DNS rebinding: a web page whose own name the
// attacker re-points at the server's address makes the browser send
// "Host: <that name>" to the server, with the page allowed to read the
// answers; a server without keys would serve it. So a request is served only
// when its Host (port ignored, any case) is
//   - an address the server listens on: its IP literal (bound to a name, that
//     name and the addresses it resolves to), and `localhost` when that is a
//     loopback address; bound to every address (0.0.0.0, ::), any IP literal
//     and `localhost`;
//   - or a --host-allow name.
// Bound to every address with no --host-allow, any Host is served (remote
// clients name the server as they like); "*" among the names turns the check
// off; with API keys the check is off unless --host-allow is given (a
// rebinding page cannot know the key). A request without Host (HTTP/1.0
// clients; browsers always send one) is served.
class HostCheck {
 public:
  HostCheck() = default;  // serves any Host
  // listen_host: the address the server binds ("" = every address);
  // allow: the --host-allow names; keys: whether the server has API keys.
  HostCheck(const std::string& listen_host, const std::vector<std::string>& allow, bool keys);

  bool active() const { return !any_; }
  // host: the Host header's value, nullptr when absent.
  bool allows(const std::string* host) const;
  // What is served, for the 403's message ("127.0.0.1, localhost").
  std::string describe() const;

 private:
  bool any_ = true;
  bool any_ip_ = false;             // every IP literal (bound to every address)
  std::vector<std::string> names_;  // as normalize_host() gives them
};

// A Host value or a --host-allow name in the form HostCheck compares: the
// port, IPv6 brackets and a trailing dot dropped, lower case, an IP literal in
// its canonical form ("[0::1]:80" -> "::1"); "" when it is not a host name
// or IP literal.
std::string normalize_host(std::string_view host);

}  // namespace og::server
