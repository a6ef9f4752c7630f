// Renaming a grammar's rules, literals, and text that avoids given words, for
// generated grammars (compose.h).
#include "grammar/compose.h"

#include <algorithm>
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
  return text_without_any_rules({std::string(w)}, name);
}

std::string text_without_any_rules(const std::vector<std::string>& words, std::string_view name) {
  OG_CHECK(!words.empty(), "text_without_rules: no word");
  const char a = words[0].empty() ? '\0' : words[0][0];
  for (const std::string& w : words) {
    OG_CHECK(w.size() >= 2, "text_without_rules: a word needs two characters or more");
    for (char c : w)
      OG_CHECK(c > 0x20 && c < 0x7F && c != '"', "text_without_rules: a word must be printable ASCII");
    OG_CHECK(w[0] == a, "text_without_rules: the words must share their first character");
    OG_CHECK(w.find(a, 1) == std::string::npos, "text_without_rules: the first character must not recur");
    for (const std::string& v : words)
      OG_CHECK(&v == &w || !v.starts_with(w), "text_without_rules: a word is a prefix of another");
  }
  // With a = the words' first character and found nowhere else in them, a
  // matcher of the words is in state 0 or in a node of their trie: after a,
  // the text read since a is s, a proper prefix of some word's rest. From
  // node s, a child character goes one deeper (a whole word: refused), a goes
  // back to node "" and any other character back to state 0. Texts without
  // the words:
  //   ( [^a] | a L* E )* ( a L* P )?
  // over the nodes s: L: s a (back to node ""), E: s then neither a child of
  // s nor a (back to state 0), P: stop in node s.
  auto cls = [](char c) { return c == ']' || c == '\\' || c == '^' || c == '-' ? std::string("\\") + c : std::string(1, c); };
  std::vector<std::string> nodes;  // each proper prefix of a word's rest, once, in order
  for (const std::string& w : words)
    for (size_t k = 1; k < w.size(); ++k) {
      const std::string s = w.substr(1, k - 1);
      if (std::find(nodes.begin(), nodes.end(), s) == nodes.end()) nodes.push_back(s);
    }
  const std::string n(name), ca = "[" + cls(a) + "]";
  std::string l, e, p;
  for (const std::string& s : nodes) {
    std::string children;
    for (const std::string& w : words)
      if (w.size() > s.size() + 1 && w.compare(1, s.size(), s) == 0 &&
          children.find(w[s.size() + 1]) == std::string::npos)
        children += w[s.size() + 1];
    std::string not_next;
    for (char c : children) not_next += cls(c);
    const std::string mid = s.empty() ? "" : grammar_literal(s) + " ";
    const std::string sep = l.empty() ? "" : " | ";
    l += sep + mid + ca;
    e += sep + mid + "[^" + not_next + cls(a) + "]";
    p += sep + (s.empty() ? std::string("\"\"") : grammar_literal(s));
  }
  return n + " ::= ([^" + cls(a) + "] | " + ca + " " + n + "-l* " + n + "-e)* (" + ca + " " + n + "-l* " + n + "-p)?\n" +
         n + "-l ::= " + l + "\n" + n + "-e ::= " + e + "\n" + n + "-p ::= " + p + "\n";
}

}  // namespace og::grammar
