// Helpers shared by the grammar tests: a JSON grammar in the text format and
// small wrappers over parse and match.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "grammar/grammar.h"

namespace og::grammar::testing {

// JSON (RFC 8259) with bounded whitespace: what a JSON-schema compiler's
// output looks like in the small.
inline constexpr std::string_view kJsonGrammar = R"(# JSON
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" char* "\"" ws
char   ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= ([ \t\n] ws)?
)";

inline std::shared_ptr<const Grammar> parse(std::string_view text, const GrammarLimits& limits = {}) {
  return Grammar::parse(text, limits);
}

// True when the grammar accepts exactly `input`.
inline bool matches(const std::shared_ptr<const Grammar>& g, std::string_view input) {
  Matcher m(g);
  return m.accept_bytes(input) && m.is_complete();
}

inline bool matches(std::string_view grammar, std::string_view input) { return matches(parse(grammar), input); }

// True when `input` is a prefix of something the grammar accepts.
inline bool prefix_ok(const std::shared_ptr<const Grammar>& g, std::string_view input) {
  Matcher m(g);
  return m.accept_bytes(input);
}

// The og::Error message parsing `text` throws, "" when it parses.
inline std::string parse_error(std::string_view text, const GrammarLimits& limits = {}) {
  try {
    Grammar::parse(text, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace og::grammar::testing
