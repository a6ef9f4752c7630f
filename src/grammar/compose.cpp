// Renaming a grammar's rules, and literals for generated grammars (compose.h).
#include "grammar/compose.h"

#include <cctype>
#include <vector>

#include "base/error.h"

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

std::string text_without_rules(std::string_view w, std::string_view name) {
  OG_CHECK(w.size() >= 2, "text_without_rules: the word needs two characters or more");
  for (char c : w)
    OG_CHECK(c > 0x20 && c < 0x7F && c != '"', "text_without_rules: the word must be printable ASCII");
  const char a = w[0];
  OG_CHECK(w.find(a, 1) == std::string_view::npos, "text_without_rules: the word's first character must not recur");
  // With w[0] unique, a matcher of w in state k (the last k characters are
  // w[0, k)) goes to 1 on w[0], to k + 1 on w[k], else to 0. Texts without w:
  //   ( [^a] | a L* E )* ( a L* P )?
  // L: back to state 1 (w[1, k) a), E: back to state 0 (w[1, k) then neither
  // w[k] nor a), P: stop in state k (w[1, k)), for k = 1 .. |w| - 1.
  auto cls = [](char c) { return c == ']' || c == '\\' || c == '^' || c == '-' ? std::string("\\") + c : std::string(1, c); };
  const std::string n(name), ca = "[" + cls(a) + "]";
  std::string l, e, p;
  for (size_t k = 1; k < w.size(); ++k) {
    const std::string mid = k > 1 ? grammar_literal(w.substr(1, k - 1)) + " " : "";
    const std::string sep = k > 1 ? " | " : "";
    l += sep + mid + ca;
    e += sep + mid + "[^" + cls(w[k]) + cls(a) + "]";
    p += sep + (k > 1 ? grammar_literal(w.substr(1, k - 1)) : std::string("\"\""));
  }
  return n + " ::= ([^" + cls(a) + "] | " + ca + " " + n + "-l* " + n + "-e)* (" + ca + " " + n + "-l* " + n + "-p)?\n" +
         n + "-l ::= " + l + "\n" + n + "-e ::= " + e + "\n" + n + "-p ::= " + p + "\n";
}

}  // namespace og::grammar
