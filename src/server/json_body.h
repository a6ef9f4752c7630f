// Bounded JSON parsing for what clients send (request bodies, and JSON held in
// their strings such as a tool call's arguments). nlohmann's own parser into
// an ordered_json inserts each key with a linear search of its object, so a
// body of n keys took time quadratic in n (200k keys: 28 s, before any route
// looked at it). This parser builds the same value (key order kept; a key
// given twice keeps its first place and its last value, as nlohmann's does)
// in time linear in the text, and refuses, naming the limit:
//   - containers nested deeper than kMaxJsonDepth (api_request.h), and
//   - an object of more than kMaxJsonObjectKeys distinct keys,
// so that what reads the value later (a template's variables, a schema's
// properties) never meets an object whose linear lookups add up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace og::server {

// The most distinct keys one JSON object of a request may hold (generous:
// logit_bias, the largest a client has reason to send, takes 1024 entries).
constexpr size_t kMaxJsonObjectKeys = 4096;

// The limits parse_json_bounded enforces: the defaults above and
// kMaxJsonDepth, or what serve's --json-max-keys and --json-max-depth made
// them at start-up (set_json_limits is not synchronised with parses running).
struct JsonLimits {
  int64_t max_keys = kMaxJsonObjectKeys;  // distinct keys of one object
  int64_t max_depth = 64;                 // nested arrays and objects (kMaxJsonDepth)
};
// The largest --json-max-depth: what reads a parsed body later recurses
// (template variables refuse past 512 levels).
constexpr int64_t kMaxJsonDepthLimit = 512;
const JsonLimits& json_limits();
void set_json_limits(const JsonLimits& limits);

struct JsonParse {
  nlohmann::ordered_json value;
  // "" when parsed; else one line: "is not valid JSON: ..." (the parser's
  // message, cut), or the limit hit ("nests deeper than 64 levels", "has an
  // object of more than 4096 keys at 'a.b[0]'").
  std::string error;
  bool limit = false;  // the error is a limit, not a syntax error
  std::string where;   // the limit's place: a path such as "tools[0].function.parameters" ("" = the top)
};

JsonParse parse_json_bounded(std::string_view text);

}  // namespace og::server
