// Grammar text -> rules of items (a recursive-descent parser over the format
// in grammar.h). Groups, repetitions and non-ASCII character classes become
// generated rules; literals become one single-byte set per byte. The checks
// on the whole rule set and the flat layout are in compile.cpp.
#include "grammar/parser.h"

#include <algorithm>

#include "grammar/utf8_ranges.h"

namespace og::grammar::detail {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Parser::Parser(std::string_view text, const GrammarLimits& limits) : text_(text), limits_(limits) {}

// Counts lines from the last offset asked when it is not past this one:
// generated rules ask in text order, and counting from the start each time
// made a large grammar quadratic (10,000 properties: seconds).
std::string Parser::where(size_t offset) const {
  offset = std::min(offset, text_.size());
  if (offset < where_.offset) where_ = Where{};
  for (size_t i = where_.offset; i < offset; ++i) {
    if (text_[i] == '\n') {
      ++where_.line;
      where_.col = 1;
    } else {
      ++where_.col;
    }
  }
  where_.offset = offset;
  return cat(where_.line, ":", where_.col);
}

void Parser::error_at(size_t offset, const std::string& msg) const { fail("grammar line ", where(offset), ": ", msg); }

void Parser::skip_space() {
  while (p_ < text_.size()) {
    const char c = text_[p_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++p_;
    } else if (c == '#') {
      while (p_ < text_.size() && text_[p_] != '\n') ++p_;
    } else {
      break;
    }
  }
}

// At a name followed by `::=`: the start of the next rule.
bool Parser::at_rule_start() const {
  size_t q = p_;
  while (q < text_.size() && is_name_char(text_[q])) ++q;
  if (q == p_) return false;
  while (q < text_.size() && (text_[q] == ' ' || text_[q] == '\t' || text_[q] == '\r' || text_[q] == '\n')) ++q;
  return text_.substr(q, 3) == "::=";
}

std::string Parser::read_name() {
  const size_t start = p_;
  while (p_ < text_.size() && is_name_char(text_[p_])) ++p_;
  if (p_ == start) error_at(start, "expected a rule name");
  return std::string(text_.substr(start, p_ - start));
}

int32_t Parser::rule_id(const std::string& name, size_t used_at) {
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  const int32_t id = new_rule(name, used_at);
  by_name_.emplace(name, id);
  rules_[id].user = true;
  rules_[id].defined = false;
  return id;
}

int32_t Parser::new_rule(std::string name, size_t at) {
  if (static_cast<int64_t>(rules_.size()) >= limits_.max_rules) {
    error_at(at, cat("more than ", limits_.max_rules, " rules (groups and repetitions count)"));
  }
  RuleDef r;
  r.name = std::move(name);
  r.at = at;
  r.defined = true;
  rules_.push_back(std::move(r));
  return static_cast<int32_t>(rules_.size()) - 1;
}

void Parser::count_elements(int64_t n, size_t at) {
  n_elements_ += n;
  if (n_elements_ > limits_.max_elements) {
    error_at(at, cat("the grammar expands to more than ", limits_.max_elements, " elements"));
  }
}

int32_t Parser::byte_set_id(const Bits256& set) {
  auto it = set_ids_.find(set);
  if (it != set_ids_.end()) return it->second;
  sets_.push_back(set);
  const int32_t id = static_cast<int32_t>(sets_.size()) - 1;
  set_ids_.emplace(set, id);
  return id;
}

Item Parser::byte_item(uint8_t b) {
  Bits256 s{};
  bits_set(s, b);
  return Item{false, byte_set_id(s)};
}

void Parser::parse_grammar() {
  if (text_.size() > limits_.max_text_bytes) {
    fail("grammar: the text is ", text_.size(), " bytes, more than the limit of ", limits_.max_text_bytes);
  }
  skip_space();
  while (p_ < text_.size()) {
    const size_t start = p_;
    if (!is_name_char(text_[p_])) error_at(p_, "expected a rule name at the start of a rule");
    const std::string name = read_name();
    skip_space();
    if (text_.substr(p_, 3) != "::=") error_at(p_, cat("expected '::=' after the rule name '", name, "'"));
    p_ += 3;
    const int32_t id = rule_id(name, start);
    if (rules_[id].defined) {
      error_at(start, cat("rule '", name, "' is defined twice (first at line ", where(rules_[id].at), ")"));
    }
    rules_[id].defined = true;
    rules_[id].at = start;
    rules_[id].alts = parse_alternatives(0, start);
    count_elements(static_cast<int64_t>(rules_[id].alts.size()), start);
  }
}

// Alternatives up to `)` (depth > 0) or the next rule / the end (depth 0).
std::vector<Seq> Parser::parse_alternatives(int depth, size_t open_at) {
  std::vector<Seq> alts;
  for (;;) {
    alts.push_back(parse_sequence(depth, open_at));
    skip_space();
    if (p_ < text_.size() && text_[p_] == '|') {
      ++p_;
      continue;
    }
    return alts;
  }
}

Seq Parser::parse_sequence(int depth, size_t open_at) {
  Seq seq;
  for (;;) {
    skip_space();
    if (p_ >= text_.size()) {
      if (depth > 0) error_at(open_at, "'(' is never closed");
      return seq;
    }
    const char c = text_[p_];
    if (c == '|') return seq;
    if (c == ')') {
      if (depth == 0) error_at(p_, "')' without a matching '('");
      return seq;
    }
    if (is_name_char(c) && at_rule_start()) {
      if (depth > 0) error_at(open_at, "'(' is never closed before the next rule");
      return seq;
    }
    const size_t item_at = p_;
    Seq item = parse_item(depth);
    skip_space();
    if (p_ < text_.size() && is_postfix(text_[p_])) {
      Item x = as_one_item(std::move(item), item_at);
      item.clear();
      while (p_ < text_.size() && is_postfix(text_[p_])) {
        const size_t op_at = p_;
        int32_t min = 0, max = 0;
        parse_postfix(min, max);
        item = repeat(x, min, max, op_at);
        x = as_one_item(std::move(item), op_at);
        item = {x};
        skip_space();
      }
    }
    seq.insert(seq.end(), item.begin(), item.end());
  }
}

bool Parser::is_postfix(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

// One element: a literal, a class, `.`, a rule name or a group. A group with
// one alternative is spliced in place; anything else becomes one item.
Seq Parser::parse_item(int depth) {
  const size_t at = p_;
  const char c = text_[p_];
  if (c == '"') return parse_literal();
  if (c == '[') return {parse_class()};
  if (c == '.') {
    ++p_;
    return {class_item({{0, 0x10FFFF}}, at)};
  }
  if (c == '(') {
    if (depth + 1 > limits_.max_nesting) error_at(at, cat("groups nested deeper than ", limits_.max_nesting));
    ++p_;
    std::vector<Seq> alts = parse_alternatives(depth + 1, at);
    if (p_ >= text_.size() || text_[p_] != ')') error_at(at, "'(' is never closed");
    ++p_;
    if (alts.size() == 1) return std::move(alts[0]);
    const int32_t id = new_rule(cat("group at ", where(at)), at);
    count_elements(static_cast<int64_t>(alts.size()), at);
    rules_[id].alts = std::move(alts);
    return {Item{true, id}};
  }
  if (is_name_char(c)) {
    const std::string name = read_name();
    const int32_t id = rule_id(name, at);
    if (rules_[id].used_at == std::string::npos) rules_[id].used_at = at;
    count_elements(1, at);
    return {Item{true, id}};
  }
  if (text_.substr(p_, 3) == "::=") error_at(at, "'::=' without a rule name before it");
  error_at(at, cat("unexpected character '", std::string(1, c), "'"));
}

// A sequence of items as one item (a generated rule unless it is one already).
Item Parser::as_one_item(Seq seq, size_t at) {
  if (seq.size() == 1) return seq[0];
  const int32_t id = new_rule(cat("group at ", where(at)), at);
  count_elements(1, at);
  rules_[id].alts.push_back(std::move(seq));
  return Item{true, id};
}

Seq Parser::parse_literal() {
  const size_t at = p_;
  ++p_;  // "
  std::string bytes;
  for (;;) {
    if (p_ >= text_.size()) error_at(at, "unterminated string literal");
    if (text_[p_] == '"') {
      ++p_;
      break;
    }
    utf8_encode(parse_char(), bytes);
  }
  count_elements(static_cast<int64_t>(bytes.size()), at);
  Seq seq;
  for (char b : bytes) seq.push_back(byte_item(static_cast<uint8_t>(b)));
  return seq;
}

// One character of a literal or class at p_: an escape or one UTF-8 character.
uint32_t Parser::parse_char() {
  const size_t at = p_;
  if (text_[p_] != '\\') {
    uint32_t cp = 0;
    const size_t n = utf8_decode_one(std::string(text_.substr(p_, 4)), 0, cp);
    if (n == 0) error_at(at, "invalid UTF-8 in the grammar text");
    p_ += n;
    return cp;
  }
  if (p_ + 1 >= text_.size()) error_at(at, "a '\\' at the end of the text");
  const char e = text_[p_ + 1];
  p_ += 2;
  switch (e) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'f': return '\f';
    case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/':
      return static_cast<uint8_t>(e);
    case 'x': return parse_hex(2, at);
    case 'u': return parse_hex(4, at);
    case 'U': return parse_hex(8, at);
    default:
      break;
  }
  error_at(at, cat("unknown escape '\\", std::string(1, e), "'"));
}

uint32_t Parser::parse_hex(int digits, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < digits; ++i) {
    const int h = p_ < text_.size() ? hex_value(text_[p_]) : -1;
    if (h < 0) error_at(at, cat("the escape needs ", digits, " hex digits"));
    v = v * 16 + static_cast<uint64_t>(h);
    ++p_;
  }
  if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) error_at(at, "the escape is not a Unicode scalar value");
  return static_cast<uint32_t>(v);
}

Item Parser::parse_class() {
  const size_t at = p_;
  ++p_;  // [
  bool negate = false;
  if (p_ < text_.size() && text_[p_] == '^') {
    negate = true;
    ++p_;
  }
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (;;) {
    if (p_ >= text_.size()) error_at(at, "unterminated character class");
    if (text_[p_] == ']') {
      ++p_;
      break;
    }
    const size_t char_at = p_;
    const uint32_t lo = parse_char();
    uint32_t hi = lo;
    if (p_ + 1 < text_.size() && text_[p_] == '-' && text_[p_ + 1] != ']') {
      ++p_;
      hi = parse_char();
      if (hi < lo) error_at(char_at, "a class range runs backwards");
    }
    ranges.push_back({lo, hi});
  }
  return class_item(normalize_ranges(std::move(ranges), negate), at);
}

// A class over code points as one item: a byte set when every member is
// ASCII, else a generated rule whose alternatives are the ASCII members (one
// byte set) and one byte-range sequence per UTF-8 sub-range. Shared by
// equal classes.
Item Parser::class_item(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, size_t at) {
  auto it = class_rules_.find(ranges);
  if (it != class_rules_.end()) return it->second;
  std::vector<Utf8Seq> seqs;
  for (const auto& r : ranges) utf8_sequences(r.first, r.second, seqs);
  Bits256 ascii{};
  std::vector<Seq> alts;
  for (const Utf8Seq& s : seqs) {
    if (s.len == 1) {
      for (unsigned b = s.r[0].lo; b <= s.r[0].hi; ++b) bits_set(ascii, b);
      continue;
    }
    Seq seq;
    for (int k = 0; k < s.len; ++k) {
      Bits256 set{};
      for (unsigned b = s.r[k].lo; b <= s.r[k].hi; ++b) bits_set(set, b);
      seq.push_back(Item{false, byte_set_id(set)});
    }
    alts.push_back(std::move(seq));
  }
  Item item;
  if (alts.empty()) {
    item = Item{false, byte_set_id(ascii)};
  } else {
    if (ascii != Bits256{}) alts.insert(alts.begin(), Seq{Item{false, byte_set_id(ascii)}});
    const int32_t id = new_rule(cat("character class at ", where(at)), at);
    int64_t n = 0;
    for (const Seq& s : alts) n += static_cast<int64_t>(s.size()) + 1;
    count_elements(n, at);
    rules_[id].alts = std::move(alts);
    item = Item{true, id};
  }
  count_elements(1, at);
  class_rules_.emplace(ranges, item);
  return item;
}

void Parser::parse_postfix(int32_t& min, int32_t& max) {
  const size_t at = p_;
  const char c = text_[p_++];
  if (c == '*') {
    min = 0, max = -1;
  } else if (c == '+') {
    min = 1, max = -1;
  } else if (c == '?') {
    min = 0, max = 1;
  } else {  // {m} {m,} {m,n} {,n}
    skip_space();
    min = parse_count(at, 0);
    skip_space();
    max = min;
    if (p_ < text_.size() && text_[p_] == ',') {
      ++p_;
      skip_space();
      max = (p_ < text_.size() && text_[p_] == '}') ? -1 : parse_count(at, -1);
      skip_space();
    }
    if (p_ >= text_.size() || text_[p_] != '}') error_at(at, "expected '}' to close the repetition");
    ++p_;
    if (max >= 0 && max < min) error_at(at, cat("repetition {", min, ",", max, "}: the maximum is below the minimum"));
  }
}

// A decimal count at p_; `none` when there are no digits and none >= 0.
int32_t Parser::parse_count(size_t at, int32_t none) {
  const size_t start = p_;
  int64_t v = 0;
  while (p_ < text_.size() && text_[p_] >= '0' && text_[p_] <= '9') {
    v = v * 10 + (text_[p_] - '0');
    if (v > limits_.max_repeat) error_at(at, cat("a repetition count above the limit of ", limits_.max_repeat));
    ++p_;
  }
  if (p_ == start) {
    if (none < 0) error_at(at, "expected a repetition count");
    return none;
  }
  return static_cast<int32_t>(v);
}

// x{min,max} (max < 0: unbounded) as a sequence: min copies of x, then either
// a star rule (s ::= x s | "") or a chain of nested optionals
// (o_k ::= x o_{k-1} | ""), which unlike x? x? x? is unambiguous.
Seq Parser::repeat(Item x, int32_t min, int32_t max, size_t at) {
  const int64_t extra = max < 0 ? 1 : max - min;
  count_elements(static_cast<int64_t>(min) + 1 + extra * 4, at);
  Seq seq(static_cast<size_t>(min), x);
  if (max < 0) {
    const int32_t id = new_rule(cat("repetition at ", where(at)), at);
    rules_[id].alts = {Seq{x, Item{true, id}}, Seq{}};
    rules_[id].star_of = x;
    seq.push_back(Item{true, id});
    return seq;
  }
  int32_t inner = -1;
  for (int32_t k = 0; k < max - min; ++k) {
    const int32_t id = new_rule(cat("repetition at ", where(at)), at);
    Seq body{x};
    if (inner >= 0) body.push_back(Item{true, inner});
    rules_[id].alts = {std::move(body), Seq{}};
    inner = id;
  }
  if (inner >= 0) seq.push_back(Item{true, inner});
  return seq;
}

}  // namespace og::grammar::detail
