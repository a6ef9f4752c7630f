// Matcher: bytes and tokens through the automaton, the token mask walk over
// the vocabulary trie, and its plain twin.
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

// Walks the trie in preorder carrying the automaton state of each open
// prefix (walk[depth]). A dead transition skips the node's subtree; a node
// whose byte loops (state unchanged) and whose subtree's bytes all loop too
// allows its whole token range at once (a JSON string's body, free text).
void Matcher::fill_mask(const TokenVocab& vocab, TokenMask& out) const {
  const detail::Trie& t = vocab.trie();
  Automaton& a = *automaton_;
  if (a.load_mask(state_, vocab.uid(), t.base, out)) return;
  out.bits.assign(t.base.size(), 0);
  uint64_t* bits = out.bits.data();
  const auto mark = [bits](int32_t id) { bits[id >> 6] |= uint64_t{1} << (id & 63); };
  std::vector<int32_t>& walk = a.walk_states();
  walk.resize(static_cast<size_t>(t.max_depth) + 1);
  walk[0] = state_;
  const detail::TrieNode* nodes = t.nodes.data();
  const int32_t* order = t.order.data();
  const uint32_t n = static_cast<uint32_t>(t.nodes.size());
  uint32_t i = 0;
  while (i < n) {
    const detail::TrieNode& nd = nodes[i];
    const int32_t ps = walk[nd.depth - 1];
    const int32_t s = a.next(ps, nd.byte);
    if (s < 0) {
      i = nd.skip;
      continue;
    }
    if (s == ps && t.sub[i] >= 0 && detail::bits_subset(t.sub_bytes[t.sub[i]], a.loop_bytes(s))) {
      const uint32_t end = t.tok_end(i);
      for (uint32_t k = nd.tok_begin; k < end; ++k) mark(order[k]);
      i = nd.skip;
      continue;
    }
    for (uint32_t k = nd.tok_begin; k < nd.tok_begin + nd.n_own; ++k) mark(order[k]);
    walk[nd.depth] = s;
    ++i;
  }
  a.store_mask(state_, vocab.uid(), t.base, out);
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
