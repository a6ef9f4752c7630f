// API keys: a request to a protected route must carry
// "Authorization: Bearer <key>" naming one of the server's keys. Keys are
// compared in time that does not depend on where they differ (nor on which
// key matched), so response timing leaks nothing about a key's bytes.
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

}  // namespace og::server
