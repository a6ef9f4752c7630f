// Constant-time API key checks.
#include "server/auth.h"

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
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() < kBearer.size() || authorization.substr(0, kBearer.size()) != kBearer) return false;
  const std::string_view given = authorization.substr(kBearer.size());
  bool ok = false;
  for (const auto& k : keys_) ok = constant_time_equal(given, k) | ok;  // no short-circuit: every key is compared
  return ok;
}

}  // namespace og::server
