// Matcher: bytes and tokens through the automaton, the token mask walk over
// the vocabulary trie, and its plain twin.
#include <algorithm>
#include <bit>

#include "grammar/automaton.h"
#include "grammar/grammar.h"
#include "grammar/trie.h"

namespace og::grammar {

using detail::Automaton;

Matcher::Matcher(std::shared_ptr<const Grammar> grammar)
    : automaton_(std::make_shared<Automaton>(std::move(grammar))), state_(automaton_->initial()) {}

bool Matcher::accept_bytes(std::string_view bytes) {
  int32_t s = state_;
  for (char c : bytes) {
    s = automaton_->next(s, static_cast<uint8_t>(c));
    if (s < 0) return false;
  }
  state_ = s;
  return true;
}

bool Matcher::accept_token(const TokenVocab& vocab, int32_t id) {
  return vocab.in_trie(id) && accept_bytes(vocab.bytes(id));
}

bool Matcher::allows(const TokenVocab& vocab, int32_t id) const {
  if (!vocab.in_trie(id)) return false;
  int32_t s = state_;
  for (char c : vocab.bytes(id)) {
    s = automaton_->next(s, static_cast<uint8_t>(c));
    if (s < 0) return false;
  }
  return true;
}

bool Matcher::is_complete() const { return automaton_->complete(state_); }
bool Matcher::can_continue() const { return automaton_->has_stacks(state_); }
void Matcher::reset() { state_ = automaton_->initial(); }

namespace {

bool step_all_plain(Automaton& a, int32_t state, std::string_view bytes, detail::StackSet& cur) {
  detail::StackSet next;
  cur = a.stack_set(state);
  for (char c : bytes) {
    if (!a.step_plain(cur, static_cast<uint8_t>(c), next)) return false;
    std::swap(cur, next);
  }
  return true;
}

}  // namespace

bool Matcher::accept_bytes_plain(std::string_view bytes) {
  detail::StackSet cur;
  if (!step_all_plain(*automaton_, state_, bytes, cur)) return false;
  state_ = automaton_->intern(std::move(cur));
  return true;
}

bool Matcher::accepts_plain(std::string_view bytes) const {
  detail::StackSet cur;
  return step_all_plain(*automaton_, state_, bytes, cur);
}

namespace {

using detail::CachedMask;
using detail::Trie;

// What a walk found: for the truncated state, the nodes where a token pops
// the anchor and the deepest stack met (relative to the anchor).
struct WalkExits {
  std::vector<uint32_t> nodes;
  int32_t max_depth = 0;
};

// Sets (or, when dense, clears) the bits of order[lo, hi).
uint32_t mark_range(const int32_t* order, uint32_t lo, uint32_t hi, uint64_t* bits, bool dense) {
  if (dense) {
    for (uint32_t k = lo; k < hi; ++k) bits[order[k] >> 6] &= ~(uint64_t{1} << (order[k] & 63));
  } else {
    for (uint32_t k = lo; k < hi; ++k) bits[order[k] >> 6] |= uint64_t{1} << (order[k] & 63);
  }
  return hi - lo;
}

// A walk from a state whose bulk set is wide (a string body, free text)
// allows most tokens: it starts from every token set and clears the rejected
// ones, so that subtrees allowed whole cost nothing.
bool walk_dense(Automaton& a, int32_t s) {
  const detail::Bits256 bulk = a.bulk_bytes(s);
  return detail::bits_test(bulk, detail::kValidUtf8) || std::popcount(bulk[0]) + std::popcount(bulk[1]) >= 48;
}

// Walks trie nodes [begin, end) in preorder (begin's parent prefix in state
// base) carrying the state of each open prefix (walk[depth]). A dead
// transition rejects the node's subtree; a node whose state's bulk set holds
// every byte below it (all loop back, whole characters for bytes >= 0x80)
// allows its whole token range at once: a JSON string's body, free text.
// Bulk sets are looked at where the byte looped or ended a character. For a
// truncated state (exits != nullptr) a node whose state popped the anchor is
// recorded and rejected here: the caller walks it from the real state.
// Sparse walks set the allowed tokens' bits and return how many; dense ones
// (bits preset to the range's tokens) clear the rejected ones and return how
// many.
uint32_t walk_trie(Automaton& a, const Trie& t, uint32_t begin, uint32_t end, int32_t base, uint64_t* bits,
                   WalkExits* exits, bool dense) {
  std::vector<int32_t>& walk = a.walk_states();
  walk.resize(static_cast<size_t>(t.max_depth) + 1);
  walk[t.nodes[begin].depth - 1] = base;
  const detail::TrieNode* nodes = t.nodes.data();
  const int32_t* order = t.order.data();
  const uint8_t* byte_class = a.byte_classes();
  const size_t n_classes = a.n_classes();
  const int32_t* trans = a.trans_data();
  const int32_t* depths = a.top_depths();
  const uint8_t* exit_flags = a.exit_flags();
  int32_t max_depth = 0;
  int32_t loop_state = -1;
  detail::Bits256 loop{};
  uint32_t changed = 0;
  uint32_t i = begin;
  while (i < end) {
    const detail::TrieNode& nd = nodes[i];
    const int32_t ps = walk[nd.depth - 1];
    const uint32_t cls = byte_class[nd.byte];
    int32_t s = trans[static_cast<size_t>(ps) * n_classes + cls];
    if (s == Automaton::kUnknown) {
      s = a.compute(ps, cls);
      trans = a.trans_data();
      depths = a.top_depths();
      exit_flags = a.exit_flags();
    }
    if (s < 0) {
      if (dense) changed += mark_range(order, nd.tok_begin, t.tok_end(i), bits, true);
      i = nd.skip;
      continue;
    }
    if (exits) {
      max_depth = std::max(max_depth, depths[s]);
      if (exit_flags[s]) {
        if (dense) changed += mark_range(order, nd.tok_begin, t.tok_end(i), bits, true);
        exits->nodes.push_back(i);
        i = nd.skip;
        continue;
      }
    }
    if ((s == ps || nd.byte >= 0x80) && t.sub[i] >= 0) {
      if (s != loop_state) {
        loop = a.bulk_bytes(s);
        loop_state = s;
        trans = a.trans_data();
        depths = a.top_depths();
        exit_flags = a.exit_flags();
      }
      if (detail::bits_subset(t.sub_bytes[t.sub[i]], loop)) {
        if (!dense) changed += mark_range(order, nd.tok_begin, t.tok_end(i), bits, false);
        i = nd.skip;
        continue;
      }
    }
    if (!dense) changed += mark_range(order, nd.tok_begin, nd.tok_begin + nd.n_own, bits, false);
    walk[nd.depth] = s;
    ++i;
  }
  if (exits) exits->max_depth = std::max(exits->max_depth, max_depth);
  return changed;
}

// walk_trie over the whole trie; returns the number of tokens allowed.
uint32_t walk_all(Automaton& a, const Trie& t, int32_t base, std::vector<uint64_t>& bits, WalkExits* exits) {
  const bool dense = walk_dense(a, base);
  if (dense) {
    bits = t.base;
  } else {
    bits.assign(t.base.size(), 0);
  }
  const uint32_t n = walk_trie(a, t, 0, static_cast<uint32_t>(t.nodes.size()), base, bits.data(), exits, dense);
  return dense ? static_cast<uint32_t>(t.order.size()) - n : n;
}

// A mask as the shortest of its bits, its allowed ids, or the ids the base
// (every token in the trie) has and it lacks. n_set: the mask's tokens.
CachedMask compress(uint64_t vocab, const std::vector<uint64_t>& bits, const Trie& t, uint32_t n_set) {
  CachedMask c;
  c.vocab = vocab;
  c.count = n_set;
  const size_t n_base = t.order.size();
  const size_t list_max = t.base.size() * 2;  // ids that fit in the bits' bytes
  if (n_set > list_max && n_base - n_set > list_max) {
    c.bits = bits;
    return c;
  }
  c.mode = n_set <= list_max ? 1 : 2;
  for (size_t w = 0; w < t.base.size(); ++w) {
    for (uint64_t x = c.mode == 1 ? bits[w] : (t.base[w] & ~bits[w]); x; x &= x - 1) {
      c.ids.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(x))));
    }
  }
  return c;
}

void expand(const CachedMask& c, const std::vector<uint64_t>& base, std::vector<uint64_t>& bits) {
  if (c.mode == 0) {
    bits = c.bits;
  } else if (c.mode == 1) {
    bits.assign(base.size(), 0);
    for (int32_t id : c.ids) bits[id >> 6] |= uint64_t{1} << (id & 63);
  } else {
    bits = base;
    for (int32_t id : c.ids) bits[id >> 6] &= ~(uint64_t{1} << (id & 63));
  }
}

// The walk of the truncated state t: from the cache, or walked and cached.
// Returns the number of tokens allowed without an exit.
uint32_t truncated_walk(Automaton& a, const TokenVocab& vocab, int32_t t, std::vector<uint64_t>& bits,
                        WalkExits& exits) {
  const Trie& trie = vocab.trie();
  if (const CachedMask* c = a.cached(t, vocab.uid())) {
    expand(*c, trie.base, bits);
    exits.nodes = c->exits;
    exits.max_depth = c->max_depth;
    return c->count;
  }
  const uint32_t n = walk_all(a, trie, t, bits, &exits);
  if (a.limits().mask_cache_bytes > 0) {
    CachedMask c = compress(vocab.uid(), bits, trie, n);
    c.exits = exits.nodes;
    c.max_depth = exits.max_depth;
    a.cache(t, std::move(c));
  }
  return n;
}

}  // namespace

// The allowed tokens of state s: cached per state; else the truncated
// state's walk (shared by every context of the same rule) plus real walks of
// the subtrees where a token pops the anchor, when no stack on the way can
// reach the depth limit; else one real walk of the whole trie.
void Matcher::fill_mask(const TokenVocab& vocab, TokenMask& out) const {
  const Trie& t = vocab.trie();
  Automaton& a = *automaton_;
  if (const CachedMask* c = a.cached(state_, vocab.uid())) {
    expand(*c, t.base, out.bits);
    return;
  }
  out.bits.assign(t.base.size(), 0);
  if (t.nodes.empty() || !a.has_stacks(state_)) return;
  uint32_t n_set = 0;
  bool done = false;
  int32_t anchor_depth = 0;
  const int32_t trunc = a.truncated(state_, anchor_depth);
  if (trunc >= 0) {
    WalkExits exits;
    n_set = truncated_walk(a, vocab, trunc, out.bits, exits);
    if (anchor_depth + exits.max_depth <= a.limits().max_stack_depth) {
      for (uint32_t e : exits.nodes) {
        // The real state at e's parent: e's prefix from state_ (alive: no pop on the way).
        const detail::TrieNode& nd = t.nodes[e];
        const std::string_view prefix = vocab.bytes(t.order[nd.tok_begin]).substr(0, nd.depth - 1u);
        int32_t s = state_;
        for (char c : prefix) s = a.next(s, static_cast<uint8_t>(c));
        OG_CHECK(s >= 0, "grammar: internal error: a truncated walk's prefix is dead in the real state");
        n_set += walk_trie(a, t, e, nd.skip, s, out.bits.data(), nullptr, false);
      }
      done = true;
    }
  }
  if (!done) n_set = walk_all(a, t, state_, out.bits, nullptr);
  if (a.limits().mask_cache_bytes > 0) a.cache(state_, compress(vocab.uid(), out.bits, t, n_set));
}

void fill_mask_plain(const Matcher& m, const TokenVocab& vocab, TokenMask& out) {
  out.bits.assign((static_cast<size_t>(vocab.n_vocab()) + 63) / 64, 0);
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
    if (!vocab.in_trie(id)) continue;
    const Matcher copy = m;
    if (copy.accepts_plain(vocab.bytes(id))) out.set(id);
  }
}

}  // namespace og::grammar
