// The one error type of offgraph and the helpers that build its messages.
// Every bad input (file, flag, request) becomes an og::Error with one clear line.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace og {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// cat("a", 1, 'b') -> "a1b"
template <class... A>
std::string cat(const A&... a) {
  std::ostringstream os;
  (os << ... << a);
  return os.str();
}

template <class... A>
[[noreturn]] void fail(const A&... a) {
  throw Error(cat(a...));
}

}  // namespace og

// OG_CHECK(cond, message parts...): throws og::Error(message) when cond is false.
#define OG_CHECK(cond, ...)        \
  do {                             \
    if (!(cond)) ::og::fail(__VA_ARGS__); \
  } while (0)
