// Putting grammars together: the rules of one grammar text renamed with a
// prefix, so that several generated grammars (each with its own `root`) can
// live in one text that references them (a tool call whose arguments follow
// each tool's JSON schema).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace og::grammar {

// `text` with every rule name, where defined and where used, as prefix + name
// (literals, character classes, repetition bounds and comments untouched).
// The text's `root` becomes prefix + "root".
std::string prefix_rules(std::string_view text, std::string_view prefix);

// A grammar literal ("...") that matches exactly the bytes of s.
std::string grammar_literal(std::string_view s);

// Rules `name`, `name-l`, `name-e`, `name-p`, where `name` matches any text
// (any characters, the empty text included) that does not contain `w`, with
// repetition only (no recursion: a reply may be long). The text a model may
// write before a tool-call marker. `w` is printable ASCII of two characters or
// more whose first character does not recur in it, as "<tool_call>"
// (og::Error otherwise).
std::string text_without_rules(std::string_view w, std::string_view name);

// The same for several words at once: `name` matches any text that contains
// none of `words`. The words follow the rule above, share their first
// character, and none is a prefix of another ("<|channel|>" and
// "<|start|>assistant": harmony's two ways into a message).
std::string text_without_any_rules(const std::vector<std::string>& words, std::string_view name);

}  // namespace og::grammar
