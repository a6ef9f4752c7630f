// The matcher's automaton (internal to src/grammar): a pushdown automaton
// over bytes whose configurations are sets of parse stacks, determinised
// lazily. A stack is a chain of interned nodes (position, parent), so equal
// stacks are equal ids and stacks share their tails; a state is an interned
// set of stacks whose tops are byte elements (plus "root may end here").
// Transitions are cached per (state, byte class). A Matcher and its copies
// share one Automaton (one thread at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/program.h"

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
};

class Automaton {
 public:
  static constexpr int32_t kUnknown = -1;
  static constexpr int32_t kDead = -2;

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
  // The bytes that lead from s back to s (computed once per state).
  const Bits256& loop_bytes(int32_t s);

  // Plain stepping over explicit stack sets (no transition cache).
  StackSet stack_set(int32_t s) const { return StackSet{states_[s].stacks, states_[s].complete}; }
  bool step_plain(const StackSet& in, uint8_t b, StackSet& out);  // false when nothing survives
  int32_t intern(StackSet set);

  // Masks cached per state (for one vocabulary at a time).
  bool load_mask(int32_t s, uint64_t vocab_uid, const std::vector<uint64_t>& base, TokenMask& out) const;
  void store_mask(int32_t s, uint64_t vocab_uid, const std::vector<uint64_t>& base, const TokenMask& mask);
  std::vector<int32_t>& walk_states() { return walk_states_; }

  const GrammarLimits& limits() const { return grammar_->limits(); }
  size_t n_states() const { return states_.size(); }
  size_t n_nodes() const { return nodes_.size(); }

 private:
  struct Node {
    int32_t pos;     // element index; -1 for the empty stack (node 0)
    int32_t parent;  // node id
    int32_t depth;
  };
  struct State {
    std::vector<int32_t> stacks;
    bool complete = false;
    bool loop_known = false;
    int32_t mask = -1;  // index in masks_
  };
  struct MaskEntry {
    uint64_t vocab = 0;
    int mode = 0;  // 0 bits, 1 ids allowed, 2 base minus ids
    std::vector<uint64_t> bits;
    std::vector<int32_t> ids;
  };
  struct VecHash {
    size_t operator()(const std::vector<int32_t>& v) const;
  };

  int32_t compute(int32_t s, uint32_t cls);
  void advance(const std::vector<int32_t>& stacks, uint32_t cls, StackSet& out);
  void close(StackSet& out);
  int32_t node(int32_t pos, int32_t parent);
  void clear_masks();

  std::shared_ptr<const Grammar> grammar_;
  const Program& program_;
  size_t n_classes_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<State> states_;
  std::vector<Bits256> loops_;  // per state, valid when loop_known
  std::unordered_map<std::vector<int32_t>, int32_t, VecHash> state_ids_;
  std::vector<int32_t> trans_;  // [n_states * n_classes]
  int32_t initial_ = 0;
  // Scratch of one step: pending (position, parent) pairs and those seen.
  std::vector<std::pair<int32_t, int32_t>> work_;
  StampSet seen_;
  std::vector<MaskEntry> masks_;
  size_t mask_bytes_ = 0;
  std::vector<int32_t> walk_states_;
};

}  // namespace og::grammar::detail
