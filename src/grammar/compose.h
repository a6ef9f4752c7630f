// Putting grammars together: the rules of one grammar text renamed with a
// prefix, so that several generated grammars (each with its own `root`) can
// live in one text that references them (a tool call whose arguments follow
// each tool's JSON schema).
#pragma once

#include <string>
#include <string_view>

namespace og::grammar {

// `text` with every rule name, where defined and where used, as prefix + name
// (literals, character classes, repetition bounds and comments untouched).
// The text's `root` becomes prefix + "root".
std::string prefix_rules(std::string_view text, std::string_view prefix);

// A grammar literal ("...") that matches exactly the bytes of s.
std::string grammar_literal(std::string_view s);

}  // namespace og::grammar
