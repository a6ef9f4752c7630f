// GBNF expression text: literals and classes with every non-plain character
// escaped, and sequence / alternation / repetition builders that keep track of
// "matches nothing" (nullopt) and "matches only the empty string" ("") so the
// compiler never writes an empty alternative. Also code-point ranges and UTF-8.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_set>

#include "grammar/json_schema_internal.h"

namespace og::grammar::detail {

std::optional<std::u32string> utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + n >= s.size() + (n == 0)) return std::nullopt;
    char32_t cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k <= n; ++k) {
      unsigned char d = s[i + k];
      if ((d & 0xC0) != 0x80) return std::nullopt;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const char32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
    out.push_back(cp);
    i += n + 1;
  }
  return out;
}

std::string utf8_encode(char32_t c) {
  std::string o;
  if (c < 0x80) {
    o += char(c);
  } else if (c < 0x800) {
    o += char(0xC0 | (c >> 6));
    o += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    o += char(0xE0 | (c >> 12));
    o += char(0x80 | ((c >> 6) & 0x3F));
    o += char(0x80 | (c & 0x3F));
  } else {
    o += char(0xF0 | (c >> 18));
    o += char(0x80 | ((c >> 12) & 0x3F));
    o += char(0x80 | ((c >> 6) & 0x3F));
    o += char(0x80 | (c & 0x3F));
  }
  return o;
}

CharRanges ranges_normalize(CharRanges r) {
  std::sort(r.begin(), r.end());
  CharRanges out;
  for (const auto& [a, b] : r) {
    if (!out.empty() && a <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, b);
    } else {
      out.push_back({a, b});
    }
  }
  return out;
}

CharRanges ranges_complement(const CharRanges& r) {
  CharRanges n = ranges_normalize(r), out;
  char32_t next = 0;
  for (const auto& [a, b] : n) {
    if (a > next) out.push_back({next, a - 1});
    next = b + 1;
  }
  if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
  return out;
}

CharRanges ranges_minus(const CharRanges& a, const CharRanges& b) {
  // a - b = a & ~b = ~(~a | b)
  CharRanges u = ranges_complement(a);
  u.insert(u.end(), b.begin(), b.end());
  return ranges_complement(u);
}

bool ranges_contain(const CharRanges& r, char32_t c) {
  auto it = std::upper_bound(r.begin(), r.end(), std::make_pair(c, char32_t(0x7FFFFFFF)));
  if (it == r.begin()) return false;
  --it;
  return c >= it->first && c <= it->second;
}

namespace {

// An escaped code point: \xHH, \uHHHH or \UHHHHHHHH.
std::string esc(char32_t c) {
  char buf[16];
  if (c < 0x100) std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
  else if (c < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04X", unsigned(c));
  else std::snprintf(buf, sizeof buf, "\\U%08X", unsigned(c));
  return buf;
}

bool plain(char32_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A rule name, one literal, one class, '.' or one parenthesised group.
bool is_atom(const std::string& x) {
  if (x.empty()) return false;
  bool name = std::all_of(x.begin(), x.end(), [](char c) { return plain(char32_t(c)) || c == '-'; });
  if (name || x == ".") return true;
  char open = x[0];
  char close = open == '"' ? '"' : open == '[' ? ']' : open == '(' ? ')' : 0;
  if (!close || x.back() != close) return false;
  // The opening token must end exactly at the last character.
  int depth = 0;
  bool in_lit = false, in_class = false;
  for (size_t i = 0; i < x.size(); ++i) {
    char c = x[i];
    if (in_lit || in_class) {
      if (c == '\\') {
        ++i;
        continue;
      }
      if ((in_lit && c == '"') || (in_class && c == ']')) {
        in_lit = in_class = false;
        if (depth == 0) return i == x.size() - 1;
      }
      continue;
    }
    if (c == '"') in_lit = true;
    else if (c == '[') in_class = true;
    else if (c == '(') ++depth;
    else if (c == ')' && --depth == 0) return i == x.size() - 1;
  }
  return false;
}

std::string atom(const std::string& x) { return is_atom(x) ? x : "(" + x + ")"; }

}  // namespace

std::string gbnf_literal(const std::string& utf8) {
  std::string o = "\"";
  auto cps = utf8_decode(utf8);
  if (!cps) {  // not reachable from parsed JSON; escape byte by byte
    for (unsigned char c : utf8) o += esc(c);
    return o + "\"";
  }
  for (char32_t c : *cps) {
    if (c == '"') o += "\\\"";
    else if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else if (c == '\r') o += "\\r";
    else if (c >= 0x20 && c < 0x7F) o += char(c);
    else o += esc(c);
  }
  return o + "\"";
}

std::string gbnf_class(const CharRanges& r, bool negated) {
  std::string o = negated ? "[^" : "[";
  auto one = [](char32_t c) { return plain(c) ? std::string(1, char(c)) : esc(c); };
  for (const auto& [a, b] : r) {
    o += one(a);
    if (b != a) {
      if (b != a + 1) o += "-";
      o += one(b);
    }
  }
  return o + "]";
}

Expr g_seq(const std::vector<Expr>& parts) {
  std::string o;
  for (const auto& p : parts) {
    if (!p) return std::nullopt;
    if (p->empty()) continue;
    if (!o.empty()) o += ' ';
    // An alternation inside a sequence needs its parentheses.
    o += p->find(" | ") != std::string::npos ? atom(*p) : *p;
  }
  return o;
}

Expr g_alt(const std::vector<Expr>& alts) {
  std::vector<std::string> xs;
  std::set<std::string> seen;
  bool eps = false;
  for (const auto& a : alts) {
    if (!a) continue;
    if (a->empty()) {
      eps = true;
      continue;
    }
    if (seen.insert(*a).second) xs.push_back(*a);
  }
  if (xs.empty()) return eps ? Expr("") : std::nullopt;
  std::string body;
  for (size_t i = 0; i < xs.size(); ++i) body += (i ? " | " : "") + xs[i];
  if (eps) return atom(body) + "?";
  return xs.size() == 1 ? body : "(" + body + ")";
}

Expr g_rep(const Expr& x, int min, int max) {
  if (!x) return min == 0 ? Expr("") : std::nullopt;
  if (x->empty() || max == 0) return Expr("");
  if (min == 1 && max == 1) return x;
  std::string a = atom(*x);
  if (min == 0 && max == 1) return a + "?";
  if (min == 0 && max < 0) return a + "*";
  if (min == 1 && max < 0) return a + "+";
  if (max < 0) return a + "{" + std::to_string(min) + "," + std::to_string(min) + "} " + a + "*";
  return a + "{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

namespace {

// Can the expression (an alternation up to ')' or the end) derive a finite
// string, given which rules can? Reads the text this file writes.
struct ProductiveEval {
  const std::string& s;
  const std::unordered_set<std::string>& productive;
  size_t p = 0;

  void skip_quoted(char close) {
    for (++p; p < s.size() && s[p] != close; ++p)
      if (s[p] == '\\') ++p;
    ++p;
  }
  bool alt() {
    bool any = false;
    for (;;) {
      any = seq() || any;
      if (p < s.size() && s[p] == '|') {
        ++p;
        continue;
      }
      return any;
    }
  }
  bool seq() {
    bool all = true;
    for (;;) {
      while (p < s.size() && s[p] == ' ') ++p;
      if (p >= s.size() || s[p] == '|' || s[p] == ')') return all;
      bool a = true;
      if (s[p] == '(') {
        ++p;
        a = alt();
        ++p;  // ')'
      } else if (s[p] == '"') {
        skip_quoted('"');
      } else if (s[p] == '[') {
        skip_quoted(']');
      } else {
        size_t start = p;
        while (p < s.size() && (plain(char32_t(s[p])) || s[p] == '-')) ++p;
        if (p == start) return false;  // not text this file writes
        a = productive.count(s.substr(start, p - start)) != 0;
      }
      if (p < s.size() && (s[p] == '?' || s[p] == '*')) {
        ++p;
        a = true;
      } else if (p < s.size() && s[p] == '+') {
        ++p;
      } else if (p < s.size() && s[p] == '{') {
        a = a || s[p + 1] == '0';
        p = s.find('}', p) + 1;
      }
      all = all && a;
    }
  }
};

std::vector<std::string> rule_names_in(const std::string& body) {
  std::vector<std::string> out;
  for (size_t p = 0; p < body.size();) {
    char c = body[p];
    if (c == '"' || c == '[') {
      char close = c == '"' ? '"' : ']';
      for (++p; p < body.size() && body[p] != close; ++p)
        if (body[p] == '\\') ++p;
      ++p;
    } else if (c == '{') {
      p = body.find('}', p) + 1;
    } else if (plain(char32_t(c)) || c == '-') {
      size_t start = p;
      while (p < body.size() && (plain(char32_t(body[p])) || body[p] == '-')) ++p;
      out.push_back(body.substr(start, p - start));
    } else {
      ++p;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> unproductive_rules(const std::vector<std::pair<std::string, std::string>>& rules) {
  std::map<std::string, std::vector<size_t>> users;
  for (size_t i = 0; i < rules.size(); ++i)
    for (const auto& n : rule_names_in(rules[i].second)) users[n].push_back(i);
  std::unordered_set<std::string> productive;
  std::vector<size_t> work(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) work[i] = rules.size() - 1 - i;
  // A rule waits in the work list at most once: a rule using 1,000 others was
  // re-read once per other that became productive (quadratic in properties).
  std::vector<char> queued(rules.size(), 1);
  while (!work.empty()) {
    size_t i = work.back();
    work.pop_back();
    queued[i] = 0;
    if (productive.count(rules[i].first)) continue;
    ProductiveEval e{rules[i].second, productive};
    if (!e.alt()) continue;
    productive.insert(rules[i].first);
    for (size_t u : users[rules[i].first])
      if (!queued[u] && !productive.count(rules[u].first)) {
        queued[u] = 1;
        work.push_back(u);
      }
  }
  std::vector<std::string> out;
  for (const auto& [name, body] : rules)
    if (!productive.count(name)) out.push_back(name);
  return out;
}

}  // namespace og::grammar::detail
