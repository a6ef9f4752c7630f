// Renaming a grammar's rules, and literals for generated grammars (compose.h).
#include "grammar/compose.h"

#include <cctype>

namespace og::grammar {

namespace {

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

// The end of a quoted run that starts at `at` (the opening quote or bracket),
// backslash escapes skipped; text.size() when it does not close.
size_t skip_quoted(std::string_view text, size_t at, char close) {
  for (size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
      continue;
    }
    if (text[i] == close) return i + 1;
  }
  return text.size();
}

}  // namespace

std::string prefix_rules(std::string_view text, std::string_view prefix) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    size_t end = i + 1;
    if (c == '"') {
      end = skip_quoted(text, i, '"');
    } else if (c == '[') {
      end = skip_quoted(text, i, ']');
    } else if (c == '{') {
      end = skip_quoted(text, i, '}');
    } else if (c == '#') {
      end = text.find('\n', i);
      if (end == std::string_view::npos) end = text.size();
    } else if (name_char(c)) {
      end = i;
      while (end < text.size() && name_char(text[end])) ++end;
      out += prefix;
    }
    out += text.substr(i, end - i);
    i = end;
  }
  return out;
}

std::string grammar_literal(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);  // UTF-8 bytes stand for themselves
    }
  }
  return out + "\"";
}

}  // namespace og::grammar
