// The checks on a parsed rule set as a whole (undefined rules, the root,
// left recursion, repetitions of the empty string) and its flat layout with
// byte classes; Grammar::parse.
#include <algorithm>

#include "grammar/automaton.h"
#include "grammar/parser.h"

namespace og::grammar::detail {

Program Parser::compile(std::string_view root) {
  parse_grammar();
  check_rules(root);
  const std::vector<char> nullable = nullable_rules();
  for (const RuleDef& r : rules_) {
    if (r.star_of.id >= 0 && r.star_of.ref && nullable[r.star_of.id]) {
      error_at(r.at, "'*', '+' or '{m,}' repeats something that can match the empty string, "
                     "which would repeat forever; make the repeated part non-empty");
    }
  }
  check_left_recursion(nullable);
  return layout(by_name_.at(std::string(root)));
}

void Parser::check_rules(std::string_view root) {
  const RuleDef* undefined = nullptr;
  for (const RuleDef& r : rules_) {
    if (!r.defined && (!undefined || r.used_at < undefined->used_at)) undefined = &r;
  }
  if (undefined) error_at(undefined->used_at, cat("undefined rule '", undefined->name, "'"));
  if (!by_name_.contains(std::string(root))) {
    fail("grammar: no rule named '", root, "' (matching starts at it)");
  }
}

// Which rules can match the empty string: a worklist over, per alternative,
// the count of its calls not yet known nullable (an alternative holding a
// byte never is).
std::vector<char> Parser::nullable_rules() const {
  const size_t n_rules = rules_.size();
  std::vector<int64_t> remaining;    // per alternative
  std::vector<int32_t> owner;        // per alternative
  std::vector<std::vector<int32_t>> uses(n_rules);  // per rule: alternatives that call it (once per call)
  std::vector<char> nullable(n_rules, 0);
  std::vector<int32_t> queue;
  for (size_t r = 0; r < n_rules; ++r) {
    for (const Seq& alt : rules_[r].alts) {
      const int32_t a = static_cast<int32_t>(remaining.size());
      int64_t count = 0;
      for (const Item& it : alt) {
        if (!it.ref) {
          count = INT64_MAX;
          break;
        }
        ++count;
      }
      if (count != INT64_MAX) {
        for (const Item& it : alt) uses[it.id].push_back(a);
      }
      remaining.push_back(count);
      owner.push_back(static_cast<int32_t>(r));
      if (count == 0 && !nullable[r]) {
        nullable[r] = 1;
        queue.push_back(static_cast<int32_t>(r));
      }
    }
  }
  while (!queue.empty()) {
    const int32_t r = queue.back();
    queue.pop_back();
    for (int32_t a : uses[r]) {
      if (--remaining[a] == 0 && !nullable[owner[a]]) {
        nullable[owner[a]] = 1;
        queue.push_back(owner[a]);
      }
    }
  }
  return nullable;
}

// A rule that can call itself before consuming a byte would make top-down
// expansion loop: a cycle in "calls at a position where everything before
// is nullable". Iterative depth-first search, so a long chain of rules
// cannot overflow the stack.
void Parser::check_left_recursion(const std::vector<char>& nullable) const {
  const size_t n_rules = rules_.size();
  std::vector<std::vector<int32_t>> edges(n_rules);
  for (size_t r = 0; r < n_rules; ++r) {
    for (const Seq& alt : rules_[r].alts) {
      for (const Item& it : alt) {
        if (!it.ref) break;
        edges[r].push_back(it.id);
        if (!nullable[it.id]) break;
      }
    }
  }
  std::vector<char> color(n_rules, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<int32_t, size_t>> path;
  for (size_t start = 0; start < n_rules; ++start) {
    if (color[start]) continue;
    path.push_back({static_cast<int32_t>(start), 0});
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == edges[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const int32_t to = edges[r][next++];
      if (color[to] == 0) {
        color[to] = 1;
        path.push_back({to, 0});
      } else if (color[to] == 1) {
        size_t k = 0;
        while (path[k].first != to) ++k;
        std::string cycle;
        const size_t len = path.size() - k;
        for (size_t i = k; i < path.size(); ++i) {
          if (len > 8 && i == k + 4) {
            cycle += cat("... (", len - 7, " more) -> ");
            i = path.size() - 4;
            continue;
          }
          cycle += rules_[path[i].first].name + " -> ";
        }
        cycle += rules_[to].name;
        error_at(rules_[to].at, cat("rule '", rules_[to].name, "' is left-recursive (", cycle,
                                    "): it can reach itself before matching a byte; rewrite it "
                                    "with repetition, e.g. a ::= b \"x\"* instead of a ::= a \"x\" | b"));
      }
    }
  }
}

Program Parser::layout(int32_t root) const {
  Program p;
  p.root = root;
  // Byte classes: refine the partition of bytes by every byte set in turn.
  std::array<int32_t, 256> cls{};
  int32_t n_classes = 1;
  for (const Bits256& set : sets_) {
    std::vector<int32_t> renum(static_cast<size_t>(n_classes) * 2, -1);
    int32_t n = 0;
    for (unsigned b = 0; b < 256; ++b) {
      int32_t& to = renum[static_cast<size_t>(cls[b]) * 2 + (bits_test(set, b) ? 1 : 0)];
      if (to < 0) to = n++;
      cls[b] = to;
    }
    n_classes = n;
  }
  for (unsigned b = 0; b < 256; ++b) p.byte_class[b] = static_cast<uint8_t>(cls[b]);
  p.n_classes = n_classes;
  p.class_sets.resize(sets_.size());
  for (size_t s = 0; s < sets_.size(); ++s) {
    p.class_sets[s] = Bits256{};
    for (unsigned b = 0; b < 256; ++b) {
      if (bits_test(sets_[s], b)) bits_set(p.class_sets[s], static_cast<unsigned>(cls[b]));
    }
  }
  p.rules.resize(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r) {
    p.rules[r].name = rules_[r].name;
    for (const Seq& alt : rules_[r].alts) {
      p.rules[r].alts.push_back(static_cast<int32_t>(p.elems.size()));
      for (const Item& it : alt) p.elems.push_back(Element{it.ref ? kRule : kBytes, it.id});
      p.elems.push_back(Element{kEnd, 0});
    }
  }
  return p;
}

}  // namespace og::grammar::detail

namespace og::grammar {

std::shared_ptr<const Grammar> Grammar::parse(std::string_view text, const GrammarLimits& limits,
                                              std::string_view root) {
  detail::Parser parser(text, limits);
  auto program = std::make_unique<detail::Program>(parser.compile(root));
  std::shared_ptr<const Grammar> g(new Grammar(std::move(program), limits));
  // The start state, built now: a grammar whose first byte already has more
  // than limits.max_stacks live parses (10,000 alternatives that begin alike)
  // is a parse error here, where callers report bad grammars, rather than a
  // failure when the first matcher is made.
  detail::Automaton start(g);
  return g;
}

Grammar::Grammar(std::unique_ptr<detail::Program> program, const GrammarLimits& limits)
    : program_(std::move(program)), limits_(limits) {}

Grammar::~Grammar() = default;

int32_t Grammar::n_rules() const { return static_cast<int32_t>(program_->rules.size()); }
int32_t Grammar::n_elements() const { return static_cast<int32_t>(program_->elems.size()); }
int32_t Grammar::n_byte_classes() const { return program_->n_classes; }

}  // namespace og::grammar
