// The matcher's automaton (internal to src/grammar): a pushdown automaton
// over bytes whose configurations are sets of parse stacks, determinised
// lazily. A stack is a chain of interned nodes (position, parent), so equal
// stacks are equal ids and stacks share their tails; a state is an interned
// set of stacks whose tops are byte elements (plus "root may end here").
// Transitions are cached per (state, byte class). A Matcher and its copies
// share one Automaton (one thread at a time).
//
// Truncation (for masks): a state's stacks all sit on a deepest common node,
// the anchor (the continuation after the string, value or rule being
// matched). Replacing the anchor by the opaque node kBottom gives the
// truncated state, equal for every context the same rule is in (every JSON
// string of a grammar truncates to one state). Tokens that never pop into
// kBottom behave the same from the truncated state as from the real one, so
// the mask walk of the truncated state is cached once and only the subtrees
// where a token pops it ("exits") are walked for real.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/program.h"
#include "grammar/utf8_ranges.h"

namespace og::grammar::detail {

// An open-addressing set of 64-bit keys, emptied in O(1) by a generation count.
class StampSet {
 public:
  void clear();
  bool insert(uint64_t key);  // false when already there

 private:
  void grow();
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> stamps_;
  uint32_t stamp_ = 1;
  size_t size_ = 0;
};

struct StackSet {
  std::vector<int32_t> stacks;  // node ids, sorted, unique; each top is a kBytes element
  bool complete = false;        // root can end here
  bool exit = false;            // a parse popped into kBottom (truncated states only)
};

// A mask kept for a state: its bits (as the shortest of bits, allowed ids, or
// base-minus ids), and for a truncated state the trie nodes where a token
// exits and the deepest stack its walk met (relative to the anchor).
struct CachedMask {
  uint64_t vocab = 0;
  int mode = 0;  // 0 bits, 1 ids allowed, 2 base minus ids
  std::vector<uint64_t> bits;
  std::vector<int32_t> ids;
  std::vector<uint32_t> exits;
  int32_t max_depth = 0;
  uint32_t count = 0;  // allowed tokens
};

class Automaton {
 public:
  static constexpr int32_t kUnknown = -1;
  static constexpr int32_t kDead = -2;
  static constexpr int32_t kBottom = 1;  // node id of the truncation's opaque anchor

  explicit Automaton(std::shared_ptr<const Grammar> grammar);

  int32_t initial() const { return initial_; }
  bool complete(int32_t s) const { return states_[s].complete; }
  bool has_stacks(int32_t s) const { return !states_[s].stacks.empty(); }

  // The state after byte b from s, or kDead.
  int32_t next(int32_t s, uint8_t b) {
    const uint32_t c = program_.byte_class[b];
    const int32_t t = trans_[static_cast<size_t>(s) * n_classes_ + c];
    return t != kUnknown ? t : compute(s, c);
  }
  // The raw tables of the mask walk's inner loop: valid until the next
  // compute() or loop_bytes(), which may add states.
  const int32_t* trans_data() const { return trans_.data(); }
  const uint8_t* exit_flags() const { return exit_.data(); }
  const int32_t* top_depths() const { return top_depth_.data(); }
  const uint8_t* byte_classes() const { return program_.byte_class.data(); }
  size_t n_classes() const { return n_classes_; }
  int32_t compute(int32_t s, uint32_t cls);
  // The bulk set of s (computed once per state): the bytes < 0x80 that lead
  // from s back to s, plus kValidUtf8 when every character >= U+0080 does
  // (each of its bytes alive on the way). A subtree whose sub_bytes are in it
  // is allowed whole.
  Bits256 bulk_bytes(int32_t s);
  // The truncated state of s (-1 when its anchor is the empty stack) and the
  // anchor's depth.
  int32_t truncated(int32_t s, int32_t& anchor_depth);

  // Plain stepping over explicit stack sets (no transition cache).
  StackSet stack_set(int32_t s) const { return StackSet{states_[s].stacks, states_[s].complete, states_[s].exit}; }
  bool step_plain(const StackSet& in, uint8_t b, StackSet& out);  // false when nothing survives
  int32_t intern(StackSet set);

  // Masks kept per state (for one vocabulary at a time); a pointer is valid
  // until the next cache().
  const CachedMask* cached(int32_t s, uint64_t vocab_uid) const;
  void cache(int32_t s, CachedMask&& m);
  std::vector<int32_t>& walk_states() { return walk_states_; }

  const GrammarLimits& limits() const { return grammar_->limits(); }
  size_t n_states() const { return states_.size(); }
  size_t n_nodes() const { return nodes_.size(); }

 private:
  struct Node {
    int32_t pos;     // element index; -1 for the empty stack (node 0) and kBottom
    int32_t parent;  // node id
    int32_t depth;
  };
  struct State {
    std::vector<int32_t> stacks;
    bool complete = false;
    bool exit = false;
    bool loop_known = false;
    int32_t mask = -1;       // index in masks_
    int32_t trunc = -2;      // truncated state; -1 none, -2 not computed
    int32_t anchor_depth = 0;
  };
  struct VecHash {
    size_t operator()(const std::vector<int32_t>& v) const;
  };

  void advance(const std::vector<int32_t>& stacks, uint32_t cls, StackSet& out);
  void close(StackSet& out);
  int32_t node(int32_t pos, int32_t parent);
  int32_t anchor_of(const std::vector<int32_t>& stacks) const;
  bool loops_on_non_ascii(int32_t s);

  std::shared_ptr<const Grammar> grammar_;
  const Program& program_;
  size_t n_classes_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<State> states_;
  std::vector<uint8_t> exit_;        // per state: State::exit, for the walk
  std::vector<int32_t> top_depth_;   // per state: its deepest stack
  std::vector<Bits256> loops_;       // per state: bulk_bytes, valid when loop_known
  std::vector<std::vector<ByteRange>> non_ascii_;  // UTF-8 byte-range sequences of U+0080..U+10FFFF
  std::unordered_map<std::vector<int32_t>, int32_t, VecHash> state_ids_;
  std::vector<int32_t> trans_;  // [n_states * n_classes]
  int32_t initial_ = 0;
  // Scratch of one step: pending (position, parent) pairs and those seen.
  std::vector<std::pair<int32_t, int32_t>> work_;
  StampSet seen_;
  std::vector<CachedMask> masks_;
  size_t mask_bytes_ = 0;
  std::vector<int32_t> walk_states_;
};

}  // namespace og::grammar::detail
