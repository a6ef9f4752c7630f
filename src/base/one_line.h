// Text that goes into a one-line message (an error, a log line): control
// bytes are written as \n, \r, \t or \xNN, so that a newline in a template's
// raise_exception message, a path, an endpoint or a client's field can never
// split a line of stderr or of the access log. The one escaping of this kind:
// the CLI's errors, the server's log lines and error texts, and the KV-event
// endpoints all use it.
#pragma once

#include <string>
#include <string_view>

namespace og {

// Appends s to out escaped; with quotes, ' and \ are escaped too (\' and \\),
// for text shown inside single quotes.
void append_one_line(std::string& out, std::string_view s, bool quotes = false);

inline std::string one_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_one_line(out, s);
  return out;
}

}  // namespace og
