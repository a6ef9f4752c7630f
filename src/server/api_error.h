// ApiError: a request the server refuses, as OpenAI reports it: an HTTP
// status and {"error": {"message", "type", "param", "code"}}. Request parsing
// throws it; the route handlers turn it into the response. The message names
// the input (field, header, path) and what is wrong with it, in one line.
#pragma once

#include <stdexcept>
#include <string>

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

// 400 invalid_request_error naming the field.
[[noreturn]] inline void bad_request(const std::string& message, const std::string& param = "",
                                     const std::string& code = "") {
  throw ApiError(400, "invalid_request_error", code, message, param);
}

}  // namespace og::server
