// Grammar-constrained decoding: grammar text (a GBNF-like format) compiled
// into a byte-level matcher, and per-step token masks over a vocabulary's
// byte strings.
//
//   auto g = og::grammar::Grammar::parse(text);          // og::Error "grammar line 3:14: ..."
//   og::grammar::TokenVocab vocab(token_bytes, allowed);  // once per vocabulary
//   og::grammar::Matcher m(g);                           // once per sequence
//   each step:  sample unconstrained -> if (!m.allows(vocab, id)) { m.fill_mask(vocab, mask);
//               resample under mask }; EOS is allowed iff m.is_complete(); m.accept_token(vocab, id)
//
// ── The grammar format ────────────────────────────────────────────────────
// A grammar is a list of rules `name ::= body`. Names are [A-Za-z0-9_-]+.
// Matching starts at the rule `root` (Grammar::parse may name another) and
// the whole output must match it. A rule's body runs to the next `name ::=`
// or the end of the text; newlines are whitespace everywhere (so bodies may
// span lines, with or without parentheses). `#` starts a comment to the end
// of the line (outside literals and classes). Rules may be used before they
// are defined; each rule is defined once.
//
//   a b          sequence
//   a | b        alternation (lowest precedence); an empty alternative is
//                allowed: `x ::= "a" | ` matches "a" or ""
//   ( ... )      grouping; `()` matches the empty string
//   "text"       literal bytes: the UTF-8 encoding of its characters
//   [a-z_]       one character (code point) from the set; ranges by `-`
//   [^"\\]       one character NOT in the set (any code point but those)
//   .            any one character (any Unicode scalar value, newline included)
//   name         another rule
//   x?  x*  x+   optional, zero or more, one or more
//   x{m} x{m,} x{m,n} x{,n}   repetition bounds (m, n <= limits.max_repeat)
//
// Postfix operators bind to the element just before them: a literal,
// class, `.`, rule name or group (`"ab"*` repeats "ab").
// Escapes in literals and classes: \n \r \t \f \\ \" \' \[ \] \- \^ \/ and
// \xHH, \uHHHH, \UHHHHHHHH, which denote code points (encoded as UTF-8, so
// "\xE9" is the two bytes C3 A9). A `-` first or last in a class is literal.
// Characters are whole code points: classes and `.` match valid, shortest-
// form UTF-8 only (no surrogates), one byte at a time, so a token may stop in
// the middle of a character and the next token finish it.
//
// Refused with an og::Error naming line:column: syntax errors, an undefined
// rule, a rule defined twice, no root rule, a left-recursive rule (`a ::= a
// "x"`, also through rules that can match "": this matcher expands rules top-
// down, so rewrite `a ::= a "x" | "y"` as `a ::= "y" "x"*`), and `*`, `+` or
// `{m,}` over something that can match the empty string.
// Not supported (llama.cpp extensions): token references `<[id]>`, `!`.
//
// ── Matching and masks ────────────────────────────────────────────────────
// A Matcher's state is the set of parse stacks the bytes so far allow (a
// pushdown automaton over bytes, expanded top-down like llama.cpp's). Sets of
// stacks are interned, and transitions between them are cached per byte
// class, so the matcher is a lazily built DFA: a step the matcher has seen
// before is one table lookup, and two matchers in the same state compare equal.
// The DFA, its transitions and a cache of computed masks live in an automaton
// that a Matcher and all its copies share: copying a Matcher is O(1) (keep a
// copy to undo), but a matcher and its copies must be used from one thread at
// a time. Matchers built from the Grammar separately share nothing.
//
// fill_mask walks a byte trie of the vocabulary (TokenVocab, built once) from
// the current state, so tokens with a common prefix share its steps and a
// rejected byte prunes its whole subtree. A subtree whose bytes all bring the
// matcher back where it was (bytes < 0x80 one by one, the others as whole
// valid UTF-8 characters: a JSON string's body, free text) is allowed in one
// go from a per-node byte summary, and walks from such states start from
// "all allowed" and clear what is rejected. The walk of a state is shared by
// every context of the same rule: the state is truncated at the deepest
// stack node all its parses share, the truncated state's walk is cached (one
// for every JSON string of a grammar, say), and only the subtrees where a
// token leaves the rule are walked from the real state. Masks are cached per
// state too, so a state seen again costs a copy.
// fill_mask_plain is its plain twin: every token tried on its own from a
// copy of the matcher, stepping the stack sets directly with no DFA cache,
// trie, truncation or mask cache; the tests hold the two equal.
//
// Bounds (GrammarLimits): the text's size, rules, elements and nesting at
// parse time; at match time nesting deeper than max_stack_depth is rejected
// as if the grammar did not allow it, and more than max_stacks live stacks
// (an ambiguous grammar) or more than max_states DFA states (16 x max_states
// stack nodes) is an og::Error. A matcher's automaton grows with the states
// it meets, so build one per sequence (or per turn), not one per process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace og::grammar {

namespace detail {
struct Program;
struct Trie;
class Automaton;
}  // namespace detail

struct GrammarLimits {
  size_t max_text_bytes = 1 << 20;  // the grammar text
  int32_t max_rules = 1 << 16;      // rules, the ones groups and repetitions generate included
  int32_t max_elements = 1 << 20;   // elements after repetitions are expanded
  int32_t max_nesting = 128;        // ( ) nesting in the text
  int32_t max_repeat = 10000;       // m and n in {m,n}
  int32_t max_stack_depth = 4096;   // match time: deeper nesting is rejected
  int32_t max_stacks = 8192;        // match time: live parse stacks in one state
  int32_t max_states = 1 << 17;     // match time: DFA states of one matcher and its copies
                                    // (and 16 times as many stack nodes)
  size_t mask_cache_bytes = 16 << 20;  // cached masks of one matcher and its copies; 0 = none
};

class Grammar {
 public:
  // og::Error "grammar line L:C: ..." on a bad grammar (see the format above).
  static std::shared_ptr<const Grammar> parse(std::string_view text, const GrammarLimits& limits = {},
                                              std::string_view root = "root");
  ~Grammar();

  const GrammarLimits& limits() const { return limits_; }
  int32_t n_rules() const;     // rules after groups and repetitions became rules
  int32_t n_elements() const;  // elements after repetitions were expanded
  int32_t n_byte_classes() const;
  const detail::Program& program() const { return *program_; }

 private:
  Grammar(std::unique_ptr<detail::Program> program, const GrammarLimits& limits);
  std::unique_ptr<detail::Program> program_;
  GrammarLimits limits_;
};

// A vocabulary's byte strings as a trie. tokens[id] = the bytes token id
// spells (what the detokenizer emits for it mid-text). allowed[id] = false
// leaves a token out of every mask (special and control tokens: the caller
// decides EOS itself, allowed iff Matcher::is_complete()); empty = all.
// Empty tokens are never allowed (they would let decoding stall).
class TokenVocab {
 public:
  explicit TokenVocab(const std::vector<std::string>& tokens, const std::vector<bool>& allowed = {});
  ~TokenVocab();
  TokenVocab(const TokenVocab&) = delete;
  TokenVocab& operator=(const TokenVocab&) = delete;

  int32_t n_vocab() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  std::string_view bytes(int32_t id) const;
  bool in_trie(int32_t id) const;  // allowed and not empty
  size_t n_trie_nodes() const;
  uint64_t uid() const { return uid_; }  // distinguishes vocabularies in the mask cache
  const detail::Trie& trie() const { return *trie_; }

 private:
  std::string bytes_;             // every token's bytes, concatenated
  std::vector<uint32_t> offsets_;  // [n_vocab + 1]
  std::unique_ptr<detail::Trie> trie_;
  uint64_t uid_;
};

// Allowed token ids as a bitset: bit id of bits[id / 64].
struct TokenMask {
  std::vector<uint64_t> bits;  // [ceil(n_vocab / 64)]
  bool test(int32_t id) const { return (bits[id >> 6] >> (id & 63)) & 1; }
  void set(int32_t id) { bits[id >> 6] |= uint64_t{1} << (id & 63); }
  int32_t count() const;
  std::vector<int32_t> ids() const;  // the allowed ids, ascending
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  // Consumes bytes if the grammar allows them as a continuation (all or
  // nothing: on false the state is unchanged).
  bool accept_bytes(std::string_view bytes);
  bool accept_token(const TokenVocab& vocab, int32_t id);
  // True when token id (in_trie) may come next: the cheap check of one token.
  // Samplers sample unconstrained first and check the sampled token with
  // this; only when it is rejected do they pay for fill_mask and resample
  // (llama.cpp's trick): most steps of a well-prompted model then cost one
  // token's bytes.
  bool allows(const TokenVocab& vocab, int32_t id) const;
  // The allowed tokens (EOS never among them: it is allowed iff is_complete()).
  void fill_mask(const TokenVocab& vocab, TokenMask& out) const;

  bool is_complete() const;   // root can end here
  bool can_continue() const;  // some byte can follow (false and complete: only EOS remains)
  void reset();               // back to the start of root

  // Matchers in the same state (and sharing an automaton) compare equal.
  bool operator==(const Matcher& o) const { return automaton_ == o.automaton_ && state_ == o.state_; }

  // The plain twins of accept_bytes and allows: step explicit stack sets,
  // with no DFA transition cache (accepts_plain leaves the state as it is).
  bool accept_bytes_plain(std::string_view bytes);
  bool accepts_plain(std::string_view bytes) const;
  const std::shared_ptr<detail::Automaton>& automaton() const { return automaton_; }

 private:
  std::shared_ptr<detail::Automaton> automaton_;
  int32_t state_;
};

// The plain twin of Matcher::fill_mask: tries every token independently from
// a copy of m with accepts_plain (about 0.1 s on a 128k vocabulary: tests only).
void fill_mask_plain(const Matcher& m, const TokenVocab& vocab, TokenMask& out);

}  // namespace og::grammar
