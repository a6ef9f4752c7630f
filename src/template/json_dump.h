// Python's json.dumps over engine values: what transformers' `tojson` filter
// produces (ensure_ascii=False by default, indent, separators, sort_keys).
#pragma once

#include <optional>
#include <string>

#include "template/value.h"

namespace og::jinja {

struct JsonFormat {
  std::optional<std::string> indent;  // unset: one line; else the per-level indent text
  std::string item_sep = ", ";        // json.dumps' default; ","  when indent is set
  std::string key_sep = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Throws og::Error for values JSON cannot hold (undefined, callables).
std::string to_json(const Value& v, const JsonFormat& fmt);

// A JSON string literal of s, as json.dumps writes it.
std::string json_quote(const std::string& s, bool ensure_ascii);

}  // namespace og::jinja
