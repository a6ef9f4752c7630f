// The Jinja lexer: template source to tokens, with jinja2's whitespace rules
// under trim_blocks=True and lstrip_blocks=True ({%- -%} {{- -}} {#- -#}, {%+ %}).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace og::jinja {

enum class Tok { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  Tok kind;
  std::string text;  // Text data, a name, an operator, a decoded string literal, a number's digits
  int line;
};

// Throws og::Error("line N: ...") on an unterminated tag, comment or string.
std::vector<Token> tokenize(std::string_view source);

}  // namespace og::jinja
