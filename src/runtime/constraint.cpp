// Grammar-constrained sampling (constraint.h).
#include "runtime/constraint.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <mutex>

#include "base/error.h"

namespace og {

std::shared_ptr<const grammar::TokenVocab> grammar_vocab(const Tokenizer& tok, std::span<const std::string> admitted) {
  const int32_t n = static_cast<int32_t>(tok.n_vocab());
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> allowed(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    const TokenType t = tok.token_type(id);
    bytes[static_cast<size_t>(id)] = tok.token_bytes(id);
    // Only tokens whose text is their bytes: control, unused and unknown tokens
    // decode to nothing, so the grammar would count characters the reply lacks.
    // An admitted control token's text (its bytes here) is in the reply.
    const bool admit = t == TokenType::kControl &&
                       std::find(admitted.begin(), admitted.end(), bytes[static_cast<size_t>(id)]) != admitted.end();
    allowed[static_cast<size_t>(id)] =
        admit || (t != TokenType::kControl && t != TokenType::kUnused && t != TokenType::kUnknown);
  }
  return std::make_shared<const grammar::TokenVocab>(bytes, allowed);
}

std::shared_ptr<const grammar::TokenVocab> grammar_vocab(const Tokenizer& tok) { return grammar_vocab(tok, {}); }

bool has_control_token(const Tokenizer& tok, std::span<const std::string> texts) {
  for (const std::string& t : texts) {
    const std::optional<int32_t> id = tok.find_piece(t);
    if (id && tok.token_type(*id) == TokenType::kControl) return true;
  }
  return false;
}

GrammarState::GrammarState(const GrammarConstraint& c) : c_(c), matcher_(c.grammar) {
  OG_CHECK(c_.grammar && c_.vocab, "a grammar constraint needs a grammar and a vocabulary");
  if (!c_.reasoning.close.empty())
    block_ = c_.reasoning.starts_open ? Block::kOpen : c_.reasoning.open.empty() ? Block::kDone : Block::kBefore;
}

int32_t GrammarState::sample(Sampler& sampler, std::span<const float> logits, std::span<const int32_t> recent,
                             std::span<const int32_t> generated, std::span<const int32_t> stop_ids) {
  const bool over = block_ == Block::kOpen && c_.reasoning.max_tokens >= 0 &&
                    reasoning_tokens_ >= c_.reasoning.max_tokens;
  if (over) {
    const int32_t id = forced_close_token();
    if (id >= 0) {
      OG_CHECK(matcher_.accept_token(*c_.vocab, id), "grammar: a forced token was refused");
      reasoning_forced_ = true;
      track(id);
      return id;
    }
  }
  const bool counted = block_ == Block::kOpen;
  const int32_t id = sample_allowed(sampler, logits, recent, generated, stop_ids);
  if (counted && !over) ++reasoning_tokens_;
  track(id);
  return id;
}

// The close marker's next bytes (after what of it the reply already ends
// with), spelled by the longest allowed token. A scan of the vocabulary: it
// runs only for the few tokens of a marker, once per reply at most.
int32_t GrammarState::forced_close_token() const {
  const std::string& close = c_.reasoning.close;
  size_t have = std::min(seen_.size(), close.size() - 1);
  while (have > 0 && std::string_view(seen_).substr(seen_.size() - have) != std::string_view(close).substr(0, have))
    --have;
  const std::string_view rest = std::string_view(close).substr(have);
  int32_t best = -1;
  size_t best_len = 0;
  for (int32_t id = 0; id < c_.vocab->n_vocab(); ++id) {
    const std::string_view b = c_.vocab->bytes(id);
    if (b.size() <= best_len || !rest.starts_with(b) || !c_.vocab->in_trie(id)) continue;
    if (!matcher_.allows(*c_.vocab, id)) continue;
    best = id;
    best_len = b.size();
  }
  return best;
}

// Follows the reply through the reasoning block: opened (by its opener at the
// start, or by the prompt), then closed by its close marker.
void GrammarState::track(int32_t id) {
  if (block_ == Block::kDone || id < 0 || id >= c_.vocab->n_vocab()) return;
  seen_ += c_.vocab->bytes(id);
  const std::string& open = c_.reasoning.open;
  if (block_ == Block::kBefore) {
    if (!seen_.starts_with(open)) {
      if (!std::string_view(open).starts_with(seen_)) block_ = Block::kDone;  // no block: the answer began
      return;
    }
    block_ = Block::kOpen;
    seen_.erase(0, open.size());
  }
  const std::string& close = c_.reasoning.close;
  if (seen_.find(close) != std::string::npos) {
    block_ = Block::kDone;
    seen_.clear();
    return;
  }
  if (seen_.size() >= close.size()) seen_.erase(0, seen_.size() - (close.size() - 1));
}

int32_t GrammarState::sample_allowed(Sampler& sampler, std::span<const float> logits, std::span<const int32_t> recent,
                                     std::span<const int32_t> generated, std::span<const int32_t> stop_ids) {
  auto is_stop = [&](int32_t id) { return std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end(); };
  const bool complete = matcher_.is_complete();
  const bool more = matcher_.can_continue();
  const int32_t n_vocab = c_.vocab->n_vocab();
  auto fits = [&](int32_t id) {
    if (is_stop(id)) return complete;
    return id >= 0 && id < n_vocab && c_.vocab->in_trie(id) && matcher_.allows(*c_.vocab, id);
  };
  if (more) {
    const int32_t id = sampler.sample(logits, recent, generated);
    if (fits(id)) {
      if (!is_stop(id)) OG_CHECK(matcher_.accept_token(*c_.vocab, id), "grammar: an allowed token was refused");
      return id;
    }
  }
  // The masked draw: the allowed tokens (none when nothing can follow), and the
  // stop ids when the grammar is complete.
  ++masked_steps_;
  masked_.assign(logits.begin(), logits.end());
  if (more) {
    matcher_.fill_mask(*c_.vocab, mask_);
  } else {
    mask_.bits.assign((static_cast<size_t>(n_vocab) + 63) / 64, 0);
  }
  int32_t first_ok = -1;
  for (size_t i = 0; i < masked_.size(); ++i) {
    const int32_t id = static_cast<int32_t>(i);
    const bool ok = (id < n_vocab && mask_.test(id) && !is_stop(id)) || (complete && is_stop(id));
    if (!ok) masked_[i] = -INFINITY;
    if (ok && first_ok < 0) first_ok = id;
  }
  if (first_ok < 0) {
    // Nothing fits (a grammar with a dead end, or a vocabulary that cannot
    // spell what it needs): end the turn rather than leave the grammar.
    dead_end_ = true;
    OG_CHECK(!stop_ids.empty(), "grammar: no token can continue the output and the turn has no stop id");
    return stop_ids.front();
  }
  int32_t id = sampler.sample(masked_, recent, generated);
  // Every allowed logit was -inf (a bias of -inf, an overflow): the first allowed token.
  if (id < 0 || static_cast<size_t>(id) >= masked_.size() || masked_[static_cast<size_t>(id)] == -INFINITY)
    id = first_ok;
  if (!is_stop(id)) OG_CHECK(matcher_.accept_token(*c_.vocab, id), "grammar: a masked token was refused");
  return id;
}

}  // namespace og
