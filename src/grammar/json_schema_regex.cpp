// The `pattern` subset: an ECMA-262 regex parser that refuses what it cannot
// translate into a grammar exactly (backreferences, lookaround, \b, anchors
// inside the pattern), and a set-of-positions matcher over code points for the
// validator (no backtracking blow-up).
#include <algorithm>

#include "grammar/json_schema_internal.h"

namespace og::grammar::detail {
namespace {

const CharRanges kDigit = {{'0', '9'}};
const CharRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMA-262 WhiteSpace and LineTerminator.
const CharRanges kSpace = {{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                           {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// `.`: anything but a line terminator.
const CharRanges kNotLineTerminator = ranges_complement({{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}});

RegexNode set_node(CharRanges r) {
  RegexNode n;
  n.kind = RegexNode::Kind::Set;
  n.set = ranges_normalize(std::move(r));
  return n;
}

class Parser {
 public:
  Parser(std::u32string p, const std::string& source, const std::string& path, int max_rep)
      : p_(std::move(p)), source_(source), path_(path), max_rep_(max_rep) {}

  Regex parse() {
    Regex re;
    for (;;) {
      RegexBranch b;
      if (peek('^')) {
        ++pos_;
        b.anchored_start = true;
      }
      b.node = parse_seq(true, &b.anchored_end);
      re.branches.push_back(std::move(b));
      if (pos_ == p_.size()) break;
      if (p_[pos_] == '|') {
        ++pos_;
        continue;
      }
      fail("unbalanced ')'");
    }
    return re;
  }

 private:
  std::u32string p_;
  const std::string& source_;
  const std::string& path_;
  int max_rep_;
  size_t pos_ = 0;
  int depth_ = 0;  // open groups
  static constexpr int kMaxGroupDepth = 24;  // the grammar nests about two parentheses per group

  [[noreturn]] void fail(const std::string& what) {
    schema_fail(path_, "pattern",
                "pattern " + Json(source_).dump() + " " + where(path_) + ": " + what + " (at character " +
                    std::to_string(pos_) + ")");
  }
  bool peek(char32_t c) const { return pos_ < p_.size() && p_[pos_] == c; }
  bool at_end() const { return pos_ >= p_.size(); }

  // A sequence up to '|' or ')' (or the end). At the top level a '$' may end it.
  RegexNode parse_seq(bool top, bool* anchored_end) {
    RegexNode seq;
    seq.kind = RegexNode::Kind::Seq;
    while (!at_end() && !peek('|') && !peek(')')) {
      char32_t c = p_[pos_];
      if (c == '$') {
        ++pos_;
        if (top && (at_end() || peek('|'))) {
          *anchored_end = true;
          break;
        }
        fail("'$' is supported only at the end of a top-level alternative");
      }
      if (c == '^') fail("'^' is supported only at the start of a top-level alternative");
      RegexNode atom = parse_atom();
      seq.kids.push_back(parse_quantifier(std::move(atom)));
    }
    return seq;
  }

  RegexNode parse_alt_group() {
    RegexNode alt;
    alt.kind = RegexNode::Kind::Alt;
    for (;;) {
      bool unused = false;
      alt.kids.push_back(parse_seq(false, &unused));
      if (peek('|')) {
        ++pos_;
        continue;
      }
      break;
    }
    if (!peek(')')) fail("missing ')'");
    ++pos_;
    return alt;
  }

  RegexNode parse_atom() {
    char32_t c = p_[pos_++];
    switch (c) {
      case '(':
        if (++depth_ > kMaxGroupDepth) fail("groups nested deeper than " + std::to_string(kMaxGroupDepth));
        if (peek('?')) {
          if (pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
            pos_ += 2;
          } else {
            fail("lookaround and named groups are not supported (only (...) and (?:...))");
          }
        }
        {
          RegexNode g = parse_alt_group();
          --depth_;
          return g;
        }
      case '[':
        return parse_class();
      case '.':
        return set_node(kNotLineTerminator);
      case '\\':
        return parse_escape(false);
      case '*':
      case '+':
      case '?':
        fail("a quantifier with nothing to repeat");
      case '{':
        fail("'{' that is not a quantifier: escape it as \\{");
      default:
        return set_node({{c, c}});
    }
  }

  int parse_int() {
    size_t start = pos_;
    int64_t v = 0;
    while (!at_end() && p_[pos_] >= '0' && p_[pos_] <= '9') {
      v = v * 10 + (p_[pos_] - '0');
      if (v > max_rep_) fail("a repetition bound above " + std::to_string(max_rep_));
      ++pos_;
    }
    if (pos_ == start) fail("a '{' quantifier needs a number");
    return static_cast<int>(v);
  }

  RegexNode parse_quantifier(RegexNode atom) {
    if (at_end()) return atom;
    int min = 0, max = -1;
    char32_t c = p_[pos_];
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      ++pos_;
      min = 1;
    } else if (c == '?') {
      ++pos_;
      max = 1;
    } else if (c == '{') {
      ++pos_;
      min = parse_int();
      max = min;
      if (peek(',')) {
        ++pos_;
        max = peek('}') ? -1 : parse_int();
      }
      if (!peek('}')) fail("a '{' quantifier must be {m}, {m,} or {m,n}");
      ++pos_;
      if (max >= 0 && max < min) fail("a quantifier {m,n} with n < m");
    } else {
      return atom;
    }
    if (peek('?')) ++pos_;  // lazy: the same language
    if (!at_end() && (peek('*') || peek('+') || peek('?') || peek('{'))) fail("a quantifier after a quantifier");
    RegexNode r;
    r.kind = RegexNode::Kind::Repeat;
    r.min = min;
    r.max = max;
    r.kids.push_back(std::move(atom));
    return r;
  }

  char32_t hex(int n) {
    char32_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (at_end()) fail("a short hex escape");
      char32_t c = p_[pos_++];
      int d = (c >= '0' && c <= '9')   ? int(c - '0')
              : (c >= 'a' && c <= 'f') ? int(c - 'a' + 10)
              : (c >= 'A' && c <= 'F') ? int(c - 'A' + 10)
                                       : -1;
      if (d < 0) fail("a bad hex escape");
      v = v * 16 + d;
    }
    return v;
  }

  // After a backslash: a class escape or one character.
  RegexNode parse_escape(bool in_class) {
    if (at_end()) fail("a pattern ending in a backslash");
    char32_t c = p_[pos_++];
    switch (c) {
      case 'd': return set_node(kDigit);
      case 'D': return set_node(ranges_complement(kDigit));
      case 'w': return set_node(kWord);
      case 'W': return set_node(ranges_complement(kWord));
      case 's': return set_node(kSpace);
      case 'S': return set_node(ranges_complement(kSpace));
      case 'n': return set_node({{0x0A, 0x0A}});
      case 'r': return set_node({{0x0D, 0x0D}});
      case 't': return set_node({{0x09, 0x09}});
      case 'f': return set_node({{0x0C, 0x0C}});
      case 'v': return set_node({{0x0B, 0x0B}});
      case '0':
        if (!at_end() && p_[pos_] >= '0' && p_[pos_] <= '9') fail("octal escapes are not supported");
        return set_node({{0, 0}});
      case 'x': {
        char32_t v = hex(2);
        return set_node({{v, v}});
      }
      case 'u': {
        if (peek('{')) fail("\\u{...} is not supported (use \\uHHHH)");
        char32_t v = hex(4);
        if (v >= 0xD800 && v <= 0xDFFF) fail("\\u escapes of UTF-16 surrogates are not supported");
        return set_node({{v, v}});
      }
      case 'b':
        if (in_class) return set_node({{0x08, 0x08}});
        fail("word boundaries (\\b) are not supported");
      default:
        break;
    }
    bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum) {
      if (c >= '1' && c <= '9') fail("backreferences are not supported");
      fail(std::string("the escape \\") + char(c) + " is not supported");
    }
    return set_node({{c, c}});
  }

  // One class member: a character, or (single=false) a class escape too.
  // Returns the set and whether it is a single character.
  std::pair<CharRanges, bool> class_member() {
    char32_t c = p_[pos_++];
    if (c == '\\') {
      RegexNode n = parse_escape(true);
      bool single = n.set.size() == 1 && n.set[0].first == n.set[0].second;
      return {n.set, single};
    }
    if (c == '[') fail("'[' inside a class: escape it as \\[");
    return {{{c, c}}, true};
  }

  RegexNode parse_class() {
    bool negated = false;
    if (peek('^')) {
      ++pos_;
      negated = true;
    }
    if (peek(']')) fail("an empty class [] or [^] (engines disagree on it)");
    CharRanges set;
    for (;;) {
      if (at_end()) fail("missing ']'");
      if (peek(']')) {
        ++pos_;
        break;
      }
      auto [first, single] = class_member();
      if (peek('-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        auto [last, single2] = class_member();
        if (!single || !single2) fail("a class range whose end is a class escape (\\d, \\w, ...)");
        if (last[0].first < first[0].first) fail("a class range out of order");
        set.push_back({first[0].first, last[0].first});
      } else {
        set.insert(set.end(), first.begin(), first.end());
      }
    }
    set = ranges_normalize(std::move(set));
    return set_node(negated ? ranges_complement(set) : set);
  }
};

// ---- matching: sets of positions ----

using Positions = std::vector<char>;  // [n + 1]: 1 where a match may be

bool any(const Positions& p) { return std::find(p.begin(), p.end(), 1) != p.end(); }

Positions step(const RegexNode& n, const std::u32string& s, const Positions& in);

Positions step_repeat(const RegexNode& n, const std::u32string& s, const Positions& in) {
  Positions out(in.size(), 0), cur = in;
  if (n.min == 0) out = in;
  for (int i = 1; n.max < 0 || i <= n.max; ++i) {
    cur = step(n.kids[0], s, cur);
    if (!any(cur)) break;
    bool grew = false;
    if (i >= n.min) {
      for (size_t k = 0; k < cur.size(); ++k)
        if (cur[k] && !out[k]) out[k] = 1, grew = true;
      // Every position reached now was reached (and expanded) before.
      if (!grew && i > n.min) break;
    }
  }
  return out;
}

Positions step(const RegexNode& n, const std::u32string& s, const Positions& in) {
  switch (n.kind) {
    case RegexNode::Kind::Set: {
      Positions out(in.size(), 0);
      for (size_t k = 0; k < s.size(); ++k)
        if (in[k] && ranges_contain(n.set, s[k])) out[k + 1] = 1;
      return out;
    }
    case RegexNode::Kind::Seq: {
      Positions cur = in;
      for (const auto& kid : n.kids) {
        cur = step(kid, s, cur);
        if (!any(cur)) break;
      }
      return cur;
    }
    case RegexNode::Kind::Alt: {
      Positions out(in.size(), 0);
      for (const auto& kid : n.kids) {
        Positions r = step(kid, s, in);
        for (size_t k = 0; k < r.size(); ++k) out[k] |= r[k];
      }
      return out;
    }
    case RegexNode::Kind::Repeat:
      return step_repeat(n, s, in);
  }
  return in;
}

}  // namespace

Regex regex_parse(const std::string& pattern, const std::string& path, int max_repetition) {
  auto cps = utf8_decode(pattern);
  if (!cps) schema_fail(path, "pattern", "pattern " + where(path) + " is not valid UTF-8");
  return Parser(*cps, pattern, path, max_repetition).parse();
}

bool regex_search(const Regex& re, const std::u32string& s) {
  for (const auto& b : re.branches) {
    Positions start(s.size() + 1, b.anchored_start ? 0 : 1);
    start[0] = 1;
    Positions end = step(b.node, s, start);
    if (b.anchored_end ? end[s.size()] != 0 : any(end)) return true;
  }
  return false;
}

}  // namespace og::grammar::detail
