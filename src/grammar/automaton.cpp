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
  nodes_.push_back(Node{-1, kBottom, 0});  // kBottom
  std::vector<Utf8Seq> seqs;
  utf8_sequences(0x80, 0x10FFFF, seqs);
  for (const Utf8Seq& q : seqs) non_ascii_.emplace_back(q.r, q.r + q.len);
  seen_.clear();
  work_.clear();
  for (int32_t alt : program_.rules[program_.root].alts) work_.push_back({alt, 0});
  StackSet set;
  close(set);
  initial_ = intern(std::move(set));
}

int32_t Automaton::node(int32_t pos, int32_t parent) {
  const uint64_t key = pair_key(pos, parent);
  auto it = node_ids_.find(key);
  if (it != node_ids_.end()) return it->second;
  if (nodes_.size() >= static_cast<size_t>(limits().max_states) * 16) {
    fail("grammar: the matcher needs more than ", static_cast<size_t>(limits().max_states) * 16,
         " parse stack nodes (limits.max_states * 16)");
  }
  nodes_.push_back(Node{pos, parent, nodes_[parent].depth + 1});
  const int32_t id = static_cast<int32_t>(nodes_.size()) - 1;
  node_ids_.emplace(key, id);
  return id;
}

// Expands the pending (position, parent) pairs in work_ until every stack's
// top is a byte element: a call pushes its continuation (none when the call
// ends its alternative, so right recursion does not grow the stack) and
// starts each alternative; an alternative's end returns to the parent. A
// stack deeper than max_stack_depth is dropped: nesting deeper than the
// limit is not allowed. (Continuations alone cannot run away: without left
// recursion one closure pushes at most one per rule.)
void Automaton::close(StackSet& out) {
  const int32_t max_stacks = limits().max_stacks;
  const int32_t max_depth = limits().max_stack_depth;
  while (!work_.empty()) {
    const auto [pos, parent] = work_.back();
    work_.pop_back();
    if (!seen_.insert(pair_key(pos, parent))) continue;
    const Element& e = program_.elems[pos];
    if (e.kind == kEnd) {
      if (parent == 0) {
        out.complete = true;
      } else if (parent == kBottom) {
        out.exit = true;
      } else {
        work_.push_back({nodes_[parent].pos, nodes_[parent].parent});
      }
    } else if (e.kind == kBytes) {
      if (nodes_[parent].depth + 1 > max_depth) continue;
      out.stacks.push_back(node(pos, parent));
      if (static_cast<int32_t>(out.stacks.size()) > max_stacks) {
        fail("grammar: more than ", max_stacks, " parses are alive at once (an ambiguous grammar; limits.max_stacks)");
      }
    } else {
      const int32_t cont = program_.elems[pos + 1].kind == kEnd ? parent : node(pos + 1, parent);
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
  const int32_t t = (out.stacks.empty() && !out.complete && !out.exit) ? kDead : intern(std::move(out));
  trans_[static_cast<size_t>(s) * n_classes_ + cls] = t;
  return t;
}

bool Automaton::step_plain(const StackSet& in, uint8_t b, StackSet& out) {
  out.stacks.clear();
  out.complete = false;
  out.exit = false;
  advance(in.stacks, program_.byte_class[b], out);
  return !out.stacks.empty() || out.complete || out.exit;
}

int32_t Automaton::intern(StackSet set) {
  std::vector<int32_t> key = set.stacks;
  key.push_back((set.complete ? 1 : 0) | (set.exit ? 2 : 0));
  auto it = state_ids_.find(key);
  if (it != state_ids_.end()) return it->second;
  if (static_cast<int64_t>(states_.size()) >= limits().max_states) {
    fail("grammar: the matcher needs more than ", limits().max_states, " states (limits.max_states)");
  }
  int32_t depth = 0;
  for (int32_t n : set.stacks) depth = std::max(depth, nodes_[n].depth);
  State st;
  st.stacks = std::move(set.stacks);
  st.complete = set.complete;
  st.exit = set.exit;
  states_.push_back(std::move(st));
  exit_.push_back(set.exit ? 1 : 0);
  top_depth_.push_back(depth);
  loops_.push_back(Bits256{});
  trans_.resize(trans_.size() + n_classes_, kUnknown);
  const int32_t id = static_cast<int32_t>(states_.size()) - 1;
  state_ids_.emplace(std::move(key), id);
  return id;
}

Bits256 Automaton::bulk_bytes(int32_t s) {
  if (!states_[s].loop_known) {
    Bits256 loop{};
    for (unsigned b = 0; b < 0x80; ++b) {
      if (next(s, static_cast<uint8_t>(b)) == s) bits_set(loop, b);
    }
    if (loops_on_non_ascii(s)) bits_set(loop, kValidUtf8);
    loops_[s] = loop;
    states_[s].loop_known = true;
  }
  return loops_[s];
}

// Every character >= U+0080 leads from s back to s, alive after each byte: one
// byte-range sequence at a time, following the set of states its prefixes reach.
bool Automaton::loops_on_non_ascii(int32_t s) {
  std::vector<int32_t> cur, nxt;
  for (const std::vector<ByteRange>& seq : non_ascii_) {
    cur.assign(1, s);
    for (const ByteRange& r : seq) {
      nxt.clear();
      for (int32_t x : cur) {
        for (unsigned b = r.lo; b <= r.hi; ++b) {
          const int32_t t = next(x, static_cast<uint8_t>(b));
          if (t < 0) return false;
          if (std::find(nxt.begin(), nxt.end(), t) == nxt.end()) nxt.push_back(t);
        }
      }
      std::swap(cur, nxt);
    }
    if (cur.size() != 1 || cur[0] != s) return false;
  }
  return true;
}

// The deepest node below every stack's top (0 or kBottom when there is none).
int32_t Automaton::anchor_of(const std::vector<int32_t>& stacks) const {
  int32_t a = nodes_[stacks[0]].parent;
  for (size_t k = 1; k < stacks.size() && a > kBottom; ++k) {
    int32_t b = nodes_[stacks[k]].parent;
    while (a != b) {
      const int32_t da = nodes_[a].depth, db = nodes_[b].depth;
      if (da == 0 && db == 0) return 0;
      if (da >= db) a = nodes_[a].parent;
      if (db >= da) b = nodes_[b].parent;
    }
  }
  return a;
}

int32_t Automaton::truncated(int32_t s, int32_t& anchor_depth) {
  if (states_[s].trunc != -2) {
    anchor_depth = states_[s].anchor_depth;
    return states_[s].trunc;
  }
  int32_t t = -1, depth = 0;
  if (!states_[s].stacks.empty()) {
    const int32_t anchor = anchor_of(states_[s].stacks);
    if (anchor > kBottom) {
      depth = nodes_[anchor].depth;
      // Each stack's nodes above the anchor, rebuilt on kBottom.
      std::unordered_map<int32_t, int32_t> moved{{anchor, kBottom}};
      std::vector<int32_t> chain;
      StackSet set;
      for (int32_t top : states_[s].stacks) {
        chain.clear();
        int32_t n = top;
        while (!moved.contains(n)) {
          chain.push_back(n);
          n = nodes_[n].parent;
        }
        int32_t cur = moved[n];
        for (size_t i = chain.size(); i-- > 0;) {
          cur = node(nodes_[chain[i]].pos, cur);
          moved.emplace(chain[i], cur);
        }
        set.stacks.push_back(cur);
      }
      std::sort(set.stacks.begin(), set.stacks.end());
      t = intern(std::move(set));
    }
  }
  states_[s].trunc = t;
  states_[s].anchor_depth = depth;
  anchor_depth = depth;
  return t;
}

const CachedMask* Automaton::cached(int32_t s, uint64_t vocab_uid) const {
  const int32_t idx = states_[s].mask;
  return idx >= 0 && masks_[idx].vocab == vocab_uid ? &masks_[idx] : nullptr;
}

void Automaton::cache(int32_t s, CachedMask&& m) {
  const size_t limit = limits().mask_cache_bytes;
  const size_t bytes = m.bits.size() * 8 + m.ids.size() * 4 + m.exits.size() * 4 + sizeof(CachedMask);
  if (bytes > limit) return;
  if (mask_bytes_ + bytes > limit) {
    for (State& st : states_) st.mask = -1;
    masks_.clear();
    mask_bytes_ = 0;
  }
  mask_bytes_ += bytes;
  masks_.push_back(std::move(m));
  states_[s].mask = static_cast<int32_t>(masks_.size()) - 1;
}

}  // namespace og::grammar::detail
