// The lazily determinised byte-level pushdown automaton (see automaton.h).
#include "grammar/automaton.h"

#include <algorithm>
#include <bit>

namespace og::grammar::detail {

namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t pair_key(int32_t pos, int32_t parent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
}

}  // namespace

void StampSet::clear() {
  if (++stamp_ == 0) {
    std::fill(stamps_.begin(), stamps_.end(), 0);
    stamp_ = 1;
  }
  size_ = 0;
}

bool StampSet::insert(uint64_t key) {
  if ((size_ + 1) * 2 > keys_.size()) grow();
  const size_t mask = keys_.size() - 1;
  size_t h = mix(key) & mask;
  while (stamps_[h] == stamp_) {
    if (keys_[h] == key) return false;
    h = (h + 1) & mask;
  }
  keys_[h] = key;
  stamps_[h] = stamp_;
  ++size_;
  return true;
}

void StampSet::grow() {
  std::vector<uint64_t> live;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (stamps_[i] == stamp_) live.push_back(keys_[i]);
  }
  const size_t cap = std::max<size_t>(64, keys_.size() * 2);
  keys_.assign(cap, 0);
  stamps_.assign(cap, 0);
  stamp_ = 1;
  size_ = 0;
  for (uint64_t k : live) insert(k);
}

size_t Automaton::VecHash::operator()(const std::vector<int32_t>& v) const {
  uint64_t h = v.size();
  for (int32_t x : v) h = mix(h ^ static_cast<uint32_t>(x)) + 0x9e3779b97f4a7c15ULL;
  return static_cast<size_t>(h);
}

Automaton::Automaton(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), program_(grammar_->program()), n_classes_(program_.n_classes) {
  nodes_.push_back(Node{-1, 0, 0});  // the empty stack
  seen_.clear();
  work_.clear();
  for (int32_t alt : program_.rules[program_.root].alts) work_.push_back({alt, 0});
  StackSet set;
  close(set);
  initial_ = intern(std::move(set));
}

// The node for (pos, parent), or -1 past the stack depth limit (that parse
// is dropped: nesting deeper than the limit is not allowed).
int32_t Automaton::node(int32_t pos, int32_t parent) {
  const uint64_t key = pair_key(pos, parent);
  auto it = node_ids_.find(key);
  if (it != node_ids_.end()) return it->second;
  const int32_t depth = nodes_[parent].depth + 1;
  if (depth > limits().max_stack_depth) return -1;
  if (nodes_.size() >= static_cast<size_t>(limits().max_states) * 16) {
    fail("grammar: the matcher needs more than ", static_cast<size_t>(limits().max_states) * 16,
         " parse stack nodes (limits.max_states * 16)");
  }
  nodes_.push_back(Node{pos, parent, depth});
  const int32_t id = static_cast<int32_t>(nodes_.size()) - 1;
  node_ids_.emplace(key, id);
  return id;
}

// Expands the pending (position, parent) pairs in work_ until every stack's
// top is a byte element: a call pushes its continuation (none when the call
// ends its alternative, so right recursion does not grow the stack) and
// starts each alternative; an alternative's end returns to the parent.
void Automaton::close(StackSet& out) {
  const int32_t max_stacks = limits().max_stacks;
  while (!work_.empty()) {
    const auto [pos, parent] = work_.back();
    work_.pop_back();
    if (!seen_.insert(pair_key(pos, parent))) continue;
    const Element& e = program_.elems[pos];
    if (e.kind == kEnd) {
      if (parent == 0) {
        out.complete = true;
      } else {
        work_.push_back({nodes_[parent].pos, nodes_[parent].parent});
      }
    } else if (e.kind == kBytes) {
      const int32_t n = node(pos, parent);
      if (n < 0) continue;
      out.stacks.push_back(n);
      if (static_cast<int32_t>(out.stacks.size()) > max_stacks) {
        fail("grammar: more than ", max_stacks, " parses are alive at once (an ambiguous grammar; limits.max_stacks)");
      }
    } else {
      int32_t cont = parent;
      if (program_.elems[pos + 1].kind != kEnd) {
        cont = node(pos + 1, parent);
        if (cont < 0) continue;
      }
      for (int32_t alt : program_.rules[e.arg].alts) work_.push_back({alt, cont});
    }
  }
  std::sort(out.stacks.begin(), out.stacks.end());
}

void Automaton::advance(const std::vector<int32_t>& stacks, uint32_t cls, StackSet& out) {
  seen_.clear();
  work_.clear();
  for (int32_t n : stacks) {
    const int32_t pos = nodes_[n].pos;
    if (bits_test(program_.class_sets[program_.elems[pos].arg], cls)) work_.push_back({pos + 1, nodes_[n].parent});
  }
  close(out);
}

int32_t Automaton::compute(int32_t s, uint32_t cls) {
  StackSet out;
  advance(states_[s].stacks, cls, out);
  const int32_t t = (out.stacks.empty() && !out.complete) ? kDead : intern(std::move(out));
  trans_[static_cast<size_t>(s) * n_classes_ + cls] = t;
  return t;
}

bool Automaton::step_plain(const StackSet& in, uint8_t b, StackSet& out) {
  out.stacks.clear();
  out.complete = false;
  advance(in.stacks, program_.byte_class[b], out);
  return !out.stacks.empty() || out.complete;
}

int32_t Automaton::intern(StackSet set) {
  std::vector<int32_t> key = set.stacks;
  key.push_back(set.complete ? 1 : 0);
  auto it = state_ids_.find(key);
  if (it != state_ids_.end()) return it->second;
  if (static_cast<int64_t>(states_.size()) >= limits().max_states) {
    fail("grammar: the matcher needs more than ", limits().max_states, " states (limits.max_states)");
  }
  State st;
  st.stacks = std::move(set.stacks);
  st.complete = set.complete;
  states_.push_back(std::move(st));
  loops_.push_back(Bits256{});
  trans_.resize(trans_.size() + n_classes_, kUnknown);
  const int32_t id = static_cast<int32_t>(states_.size()) - 1;
  state_ids_.emplace(std::move(key), id);
  return id;
}

const Bits256& Automaton::loop_bytes(int32_t s) {
  if (!states_[s].loop_known) {
    Bits256 loop{};
    for (unsigned b = 0; b < 256; ++b) {
      if (next(s, static_cast<uint8_t>(b)) == s) bits_set(loop, b);
    }
    loops_[s] = loop;
    states_[s].loop_known = true;
  }
  return loops_[s];
}

bool Automaton::load_mask(int32_t s, uint64_t vocab_uid, const std::vector<uint64_t>& base, TokenMask& out) const {
  const int32_t idx = states_[s].mask;
  if (idx < 0 || masks_[idx].vocab != vocab_uid) return false;
  const MaskEntry& e = masks_[idx];
  if (e.mode == 0) {
    out.bits = e.bits;
  } else if (e.mode == 1) {
    out.bits.assign(base.size(), 0);
    for (int32_t id : e.ids) out.set(id);
  } else {
    out.bits = base;
    for (int32_t id : e.ids) out.bits[id >> 6] &= ~(uint64_t{1} << (id & 63));
  }
  return true;
}

// Stores a mask as the shortest of: its bits, its allowed ids, or the ids
// the base (every token in the trie) has and it lacks.
void Automaton::store_mask(int32_t s, uint64_t vocab_uid, const std::vector<uint64_t>& base, const TokenMask& mask) {
  const size_t limit = limits().mask_cache_bytes;
  if (limit == 0) return;
  size_t n_set = 0, n_base = 0;
  for (size_t w = 0; w < base.size(); ++w) {
    n_set += static_cast<size_t>(std::popcount(mask.bits[w]));
    n_base += static_cast<size_t>(std::popcount(base[w]));
  }
  const size_t list_max = base.size() * 2;  // ids that fit in the bits' bytes
  MaskEntry e;
  e.vocab = vocab_uid;
  if (n_set <= list_max || n_base - n_set <= list_max) {
    e.mode = n_set <= list_max ? 1 : 2;
    for (size_t w = 0; w < base.size(); ++w) {
      uint64_t x = e.mode == 1 ? mask.bits[w] : (base[w] & ~mask.bits[w]);
      while (x) {
        e.ids.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(x))));
        x &= x - 1;
      }
    }
  } else {
    e.bits = mask.bits;
  }
  const size_t bytes = e.bits.size() * 8 + e.ids.size() * 4 + sizeof(MaskEntry);
  if (bytes > limit) return;
  if (mask_bytes_ + bytes > limit) clear_masks();
  mask_bytes_ += bytes;
  masks_.push_back(std::move(e));
  states_[s].mask = static_cast<int32_t>(masks_.size()) - 1;
}

void Automaton::clear_masks() {
  for (State& st : states_) st.mask = -1;
  masks_.clear();
  mask_bytes_ = 0;
}

}  // namespace og::grammar::detail
