// Session's verify step for speculative decoding. The target forwards the
// pending last token and the k draft tokens as one prefill-style batch
// (positions p-1 .. p+k-1, every row wanting logits); row i's logits are
// exactly those a plain decode step would get after the first i draft tokens
// (a row's result is bit for bit what it gets alone, docs/cache.md), so
// taking row i's token through the same chooser and stop rules as a plain
// step, for as long as it equals the draft, reproduces plain decoding. The
// cache is then rewound over the rejected positions.
//
// Ring layers: a verify step writes k + 1 <= max_write rows and the rewind
// drops at most k < max_write positions; a ring of window + max_write - 1
// slots still holds the window of the shortened sequence (its last write
// overwrote only positions below end - slots <= length - window), so the
// rewind never needs recomputation and the ring is not made larger. The draft
// is bounded by max_write - 1 for this (spec_room).
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/timer.h"
#include "runtime/session.h"
#include "runtime/spec/accept.h"

namespace og {

int64_t Session::spec_room() const {
  const Turn& t = *turn_;
  const int64_t pos = position();  // the pending token goes at pos - 1, draft token i at pos + i
  int64_t k = t.opts->spec.draft_max;
  k = std::min(k, std::max<int64_t>(1, cache_->policy().max_write) - 1);
  k = std::min(k, capacity() - pos);
  // The verify step yields up to k + 1 tokens; more draft than the budget is waste.
  k = std::min(k, t.opts->max_new_tokens - static_cast<int64_t>(t.res.tokens.size()) - 1);
  return std::max<int64_t>(0, k);
}

bool Session::spec_step() {
  Turn& t = *turn_;
  const SpecOptions& so = t.opts->spec;
  if (t.res.tokens.empty()) return false;  // the first token comes from the prompt's last row
  const double temperature = t.sampler->config().temperature;
  // A grammar's matcher takes each sampled token for good: only its exact
  // (greedy) choice can be compared with a draft token.
  if (t.grammar && temperature > 0) return false;
  const int64_t room = spec_room();
  if (room < std::max<int64_t>(1, so.draft_min)) return false;
  Timer tp;
  Draft d = so.proposer->propose(history_, room);
  stats_.spec_propose_s += tp.seconds();
  if (static_cast<int64_t>(d.tokens.size()) > room) d.tokens.resize(room);
  const int64_t k = static_cast<int64_t>(d.tokens.size());
  if (k < std::max<int64_t>(1, so.draft_min)) return false;
  const int32_t n_vocab = engine_.n_vocab();
  for (int32_t id : d.tokens)
    OG_CHECK(id >= 0 && id < n_vocab, "speculative decoding: the ", so.proposer->name(), " proposer gave token ", id,
             " outside the target's vocabulary of ", n_vocab);

  const int64_t pos = position();
  Batch batch;
  batch.rows.reserve(k + 1);
  batch.rows.push_back({history_.back(), seq_, pos - 1, true});
  for (int64_t i = 0; i < k; ++i) batch.rows.push_back({d.tokens[i], seq_, pos + i, true});
  Timer tf;
  forward_checked(batch);
  stats_.decode_s += tf.seconds();
  ++stats_.decode_steps;
  ++stats_.spec_drafts;
  stats_.spec_draft_tokens += k;

  const std::vector<float> rows = logits_;  // [k + 1, n_vocab]
  int64_t accepted = 0;
  for (int64_t i = 0; i <= k && !t.done; ++i) {
    logits_.assign(rows.begin() + i * n_vocab, rows.begin() + (i + 1) * n_vocab);
    for (float x : logits_)
      OG_CHECK(std::isfinite(x), "the model produced a non-finite logit (NaN or inf) at position ", pos - 1 + i,
               ": its weights may be corrupt or overflow in f32");
    if ((t.res.reason = budget_left()) != StopReason::kNone) {
      finish_text();
      break;
    }
    int32_t id = 0;
    bool match = false;
    if (i == k) {
      id = choose_token();  // every draft token accepted: this row's token is the bonus
    } else if (temperature == 0.0 || t.grammar) {
      id = choose_token();  // exact: the token a plain step would take
      match = id == d.tokens[i];
    } else {
      Timer ts;
      const TokenDist p = t.sampler->distribution(logits_, history_, t.res.tokens);
      const TokenDist none;
      const TokenDist& q = i < static_cast<int64_t>(d.q.size()) ? d.q[i] : none;
      const double u1 = t.sampler->uniform(), u2 = t.sampler->uniform();
      const SpecChoice c = spec_accept(p, d.tokens[i], q, u1, u2);
      stats_.sampling_s += ts.seconds();
      id = c.token;
      match = c.accepted;
    }
    take_token(id);
    if (!match) break;
    ++accepted;
  }
  stats_.spec_accepted_tokens += accepted;
  // The cache keeps the history but its pending last token, as after a plain step.
  rewind_cache(std::min(cached(), position() - 1), nullptr);
  so.proposer->verified(k, accepted);
  return true;
}

}  // namespace og
