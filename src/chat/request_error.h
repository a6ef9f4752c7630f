// ChatRequestError: a chat request that a format cannot render or constrain,
// carrying the request field it is about (OpenAI's `param`:
// "tools[2].function.parameters", "tool_choice") and a machine-readable code
// ("unsupported_schema", "" = none) as data, so that a front end (the
// server's 400, the C API's error) reports them without reading the message.
#pragma once

#include <string>
#include <utility>

#include "base/error.h"

namespace og {

class ChatRequestError : public Error {
 public:
  ChatRequestError(const std::string& message, std::string field, std::string code = "")
      : Error(message), field_(std::move(field)), code_(std::move(code)) {}

  const std::string& field() const { return field_; }
  const std::string& code() const { return code_; }

 private:
  std::string field_, code_;
};

}  // namespace og
