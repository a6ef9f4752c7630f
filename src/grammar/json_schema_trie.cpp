// Enum and const values as a trie of grammar rules (see literal_trie in
// json_schema_internal.h).
#include <algorithm>

#include "grammar/json_schema_internal.h"

namespace og::grammar::detail {

namespace {

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Bytes of the UTF-8 character that starts with lead (1 for anything unexpected).
size_t char_length(char lead) {
  const unsigned char c = static_cast<unsigned char>(lead);
  return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

struct TrieWriter {
  const std::vector<std::string>& t;  // sorted, distinct
  const std::function<std::string(const std::string&)>& make_rule;

  // The values t[lo, hi), which share their first d + shared bytes, from byte d on.
  Expr node(size_t lo, size_t hi, size_t d, size_t shared) {
    const std::string& a = t[lo];
    const std::string& b = t[hi - 1];  // sorted: the range's common prefix is a's and b's
    size_t p = d;
    if (lo + 1 == hi) {
      p = a.size();
    } else {
      while (p < a.size() && p < b.size() && a[p] == b[p]) ++p;
      while (p > d + shared && ((p < a.size() && continuation_byte(a[p])) || (p < b.size() && continuation_byte(b[p])))) --p;
    }
    std::vector<Expr> alts;
    size_t i = lo;
    if (t[i].size() == p) {  // a value ends here (it sorts first)
      alts.push_back(Expr(""));
      ++i;
    }
    while (i < hi) {  // one branch per next character
      const size_t len = std::min(char_length(t[i][p]), t[i].size() - p);
      size_t j = i + 1;
      while (j < hi && t[j].compare(p, len, t[i], p, len) == 0) ++j;
      Expr child = node(i, j, p, len);
      alts.push_back(j - i > 1 ? Expr(make_rule(*child)) : child);  // a rule per branching node: no deep nesting
      i = j;
    }
    const std::string prefix = a.substr(d, p - d);
    return g_seq({prefix.empty() ? Expr("") : Expr(gbnf_literal(prefix)), alts.empty() ? Expr("") : g_alt(alts)});
  }
};

}  // namespace

Expr literal_trie(std::vector<std::string> texts, const std::function<std::string(const std::string&)>& make_rule) {
  if (texts.empty()) return std::nullopt;
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  TrieWriter w{texts, make_rule};
  return w.node(0, texts.size(), 0, 0);
}

}  // namespace og::grammar::detail
