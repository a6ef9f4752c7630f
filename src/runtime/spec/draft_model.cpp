// The draft model proposer: a Session over the draft's own cache, kept in step
// with the target's history by rewinds and prefills.
#include "runtime/spec/draft_model.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace og {

void check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft) {
  OG_CHECK(target.n_vocab() == draft.n_vocab(), "the draft model's vocabulary has ", draft.n_vocab(),
           " tokens but the target's has ", target.n_vocab(), ": speculative decoding needs the same tokenizer");
  for (int32_t id = 0; id < target.n_vocab(); ++id) {
    OG_CHECK(target.piece(id) == draft.piece(id) && target.token_type(id) == draft.token_type(id),
             "the draft model's token ", id, " differs from the target's: speculative decoding needs the same tokenizer");
  }
  OG_CHECK(target.special().bos == draft.special().bos && target.special().eos == draft.special().eos,
           "the draft model's BOS/EOS tokens differ from the target's: speculative decoding needs the same tokenizer");
}

DraftModelProposer::DraftModelProposer(Engine& engine, std::unique_ptr<KvCache> cache, const Tokenizer& tok,
                                       double p_min)
    : session_(engine, std::move(cache), tok), p_min_(p_min) {
  OG_CHECK(p_min >= 0 && p_min <= 1, "draft model: p_min must be in [0, 1] (got ", p_min, ")");
}

DraftModelProposer::DraftModelProposer(Engine& engine, KvCache& shared, int seq, const Tokenizer& tok, double p_min)
    : session_(engine, shared, seq, tok), p_min_(p_min) {
  OG_CHECK(p_min >= 0 && p_min <= 1, "draft model: p_min must be in [0, 1] (got ", p_min, ")");
}

void DraftModelProposer::sync(std::span<const int32_t> history) {
  const std::vector<int32_t>& mine = session_.history();
  const size_t common = std::mismatch(mine.begin(), mine.end(), history.begin(), history.end()).first - mine.begin();
  // Keep at least one token to prefill, for the logits of the last row.
  const int64_t keep = std::min<int64_t>(common, static_cast<int64_t>(history.size()) - 1);
  session_.rewind_to(keep);
  session_.prefill(history.subspan(static_cast<size_t>(keep)), /*want_logits=*/true);
}

Draft DraftModelProposer::propose(std::span<const int32_t> history, int64_t max_tokens) {
  Draft d;
  if (history.empty()) return d;
  // Drafting k tokens forwards the history and k - 1 of them.
  max_tokens = std::min<int64_t>(max_tokens, session_.capacity() - static_cast<int64_t>(history.size()) + 1);
  if (max_tokens < 1) return d;
  sync(history);
  for (int64_t i = 0; i < max_tokens; ++i) {
    const std::span<const float> l = session_.logits();
    const auto best = std::max_element(l.begin(), l.end());
    double sum = 0;
    for (float x : l) sum += std::exp(static_cast<double>(x) - *best);
    if (1.0 / sum < p_min_) break;  // the top token's probability
    const int32_t id = static_cast<int32_t>(best - l.begin());
    d.tokens.push_back(id);
    if (i + 1 < max_tokens) session_.prefill(std::span<const int32_t>(&id, 1), true);
  }
  return d;
}

}  // namespace og
