// ApiError: a request the server refuses, as OpenAI reports it: an HTTP
// status and {"error": {"message", "type", "param", "code"}}. Request parsing
// throws it; the route handlers turn it into the response. The message names
// the input (field, header, path) and what is wrong with it, in one line.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "base/one_line.h"

namespace og::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string code, const std::string& message, std::string param = "")
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        code_(std::move(code)),
        param_(std::move(param)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }    // e.g. "invalid_request_error"
  const std::string& code() const { return code_; }    // "" = null
  const std::string& param() const { return param_; }  // the offending field; "" = null

 private:
  int status_;
  std::string type_, code_, param_;
};

// The length of the longest prefix of `s` of at most `max` bytes that ends on
// a UTF-8 character boundary (so cutting valid UTF-8 there keeps it valid).
inline size_t utf8_prefix(std::string_view s, size_t max) {
  if (s.size() <= max) return s.size();
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

// Client text (a field name, a role, a model id) for an error message: in
// single quotes, with control bytes, quotes and backslashes escaped (\n,
// \x1b, \', \\) and cut after `max` bytes at a UTF-8 boundary, so a message
// that echoes the client stays one short line of valid UTF-8.
inline std::string client_text(std::string_view s, size_t max = 64) {
  const size_t n = utf8_prefix(s, max);
  std::string out = "'";
  append_one_line(out, s.substr(0, n), true);
  out += '\'';
  if (n < s.size()) out += " (cut; " + std::to_string(s.size()) + " bytes)";
  return out;
}

// 400 invalid_request_error naming the field.
[[noreturn]] inline void bad_request(const std::string& message, const std::string& param = "",
                                     const std::string& code = "") {
  throw ApiError(400, "invalid_request_error", code, message, param);
}

}  // namespace og::server
