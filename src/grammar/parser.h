// The grammar text parser (internal to src/grammar): text -> rules whose
// alternatives are sequences of items (a byte set or a call of a rule).
// compile() then checks the rule set as a whole and lays it out flat.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/program.h"

namespace og::grammar::detail {

struct Item {
  bool ref = false;  // true: call rule `id`; false: one byte from byte set `id`
  int32_t id = -1;
  bool operator==(const Item&) const = default;
};
using Seq = std::vector<Item>;

struct RuleDef {
  std::string name;
  std::vector<Seq> alts;
  bool defined = false;
  bool user = false;                    // named in the text (not generated)
  size_t at = 0;                        // text offset of its definition (or what generated it)
  size_t used_at = std::string::npos;   // first use (user rules)
  Item star_of;                         // star rules: the repeated item (id -1 otherwise)
};

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits);
  // Parses the text, then checks and lays out the rules (compile.cpp).
  Program compile(std::string_view root);

  std::string where(size_t offset) const;  // "line:column"
  [[noreturn]] void error_at(size_t offset, const std::string& msg) const;

 private:
  void parse_grammar();
  std::vector<Seq> parse_alternatives(int depth, size_t open_at);
  Seq parse_sequence(int depth, size_t open_at);
  Seq parse_item(int depth);
  Seq parse_literal();
  uint32_t parse_char();
  uint32_t parse_hex(int digits, size_t at);
  Item parse_class();
  Item class_item(const std::vector<std::pair<uint32_t, uint32_t>>& ranges, size_t at);
  static bool is_postfix(char c);
  void parse_postfix(int32_t& min, int32_t& max);
  int32_t parse_count(size_t at, int32_t none);
  Seq repeat(Item x, int32_t min, int32_t max, size_t at);
  Item as_one_item(Seq seq, size_t at);

  void skip_space();
  bool at_rule_start() const;
  std::string read_name();
  int32_t rule_id(const std::string& name, size_t used_at);
  int32_t new_rule(std::string name, size_t at);
  void count_elements(int64_t n, size_t at);
  int32_t byte_set_id(const Bits256& set);
  Item byte_item(uint8_t b);

  // compile.cpp
  void check_rules(std::string_view root);
  std::vector<char> nullable_rules() const;
  void check_left_recursion(const std::vector<char>& nullable) const;
  Program layout(int32_t root) const;

  std::string_view text_;
  const GrammarLimits& limits_;
  struct Where {
    size_t offset = 0, line = 1, col = 1;
  };
  mutable Where where_;  // where()'s last answer, to count on from
  size_t p_ = 0;
  int64_t n_elements_ = 0;
  std::vector<RuleDef> rules_;
  std::unordered_map<std::string, int32_t> by_name_;
  std::vector<Bits256> sets_;  // distinct byte sets
  std::map<Bits256, int32_t> set_ids_;
  std::map<std::vector<std::pair<uint32_t, uint32_t>>, Item> class_rules_;
};

}  // namespace og::grammar::detail
