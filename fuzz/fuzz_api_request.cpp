// libFuzzer target: an HTTP request body as the server's routes read it (the
// network-facing input). The bytes go through parse_json_object and, when
// they are an object, through every endpoint's strict parser. Refusals must
// be ApiError with a 4xx status and a one-line message; anything else (a
// crash, another exception, a 5xx) is a finding. The bounded parser
// (json_body.h) must also build exactly nlohmann's value (key order and
// repeated keys included) for a short input both accept.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/json_body.h"

namespace {

void check_refusal(const og::server::ApiError& e) {
  if (e.status() < 400 || e.status() > 499) __builtin_trap();
  const std::string_view what = e.what();  // one line, and short whatever the body holds
  if (what.find('\n') != std::string_view::npos || what.size() > 1024) __builtin_trap();
}

template <class Parse>
void try_parse(Parse parse, const nlohmann::ordered_json& body) {
  try {
    (void)parse(body);
  } catch (const og::server::ApiError& e) {
    check_refusal(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // nlohmann's own parser is quadratic in keys: compared on short inputs only.
  if (size <= 4096) {
    const og::server::JsonParse p = og::server::parse_json_bounded(bytes);
    const auto want = nlohmann::ordered_json::parse(bytes, nullptr, /*allow_exceptions=*/false);
    if (p.error.empty() && (want.is_discarded() || p.value.dump() != want.dump())) __builtin_trap();
    if (!p.error.empty() && !p.limit && !want.is_discarded()) __builtin_trap();
  }
  nlohmann::ordered_json body;
  try {
    body = og::server::parse_json_object(bytes);
  } catch (const og::server::ApiError& e) {
    check_refusal(e);
    return 0;
  }
  try_parse(og::server::parse_chat_request, body);
  try_parse(og::server::parse_completion_request, body);
  try_parse(og::server::parse_tokenize_request, body);
  try_parse(og::server::parse_detokenize_request, body);
  try_parse(og::server::parse_apply_template_request, body);
  return 0;
}
