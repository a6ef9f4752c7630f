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

Draft Session::propose_draft(int64_t max_tokens) {
  OG_CHECK(turn_ && !turn_->done, "session: propose_draft outside a running turn");
  Turn& t = *turn_;
  const SpecOptions& so = t.opts->spec;
  Draft d;
  if (!so.proposer || in_prefill()) return d;
  if (t.res.tokens.empty()) return d;  // the first token comes from the prompt's last row
  // A grammar's matcher takes each sampled token for good: only its exact
  // (greedy) choice can be compared with a draft token.
  if (t.grammar && t.sampler->config().temperature > 0) return d;
  const int64_t room = std::min(spec_room(), max_tokens);
  const int64_t least = std::max<int64_t>(1, so.draft_min);
  if (room < least) return d;
  Timer tp;
  d = so.proposer->propose(history_, room);
  stats_.spec_propose_s += tp.seconds();
  if (static_cast<int64_t>(d.tokens.size()) > room) d.tokens.resize(room);
  if (static_cast<int64_t>(d.tokens.size()) < least) return Draft{};
  const int32_t n_vocab = engine_.n_vocab();
  for (int32_t id : d.tokens)
    OG_CHECK(id >= 0 && id < n_vocab, "speculative decoding: the ", so.proposer->name(), " proposer gave token ", id,
             " outside the target's vocabulary of ", n_vocab);
  return d;
}

int64_t Session::add_verify_rows(Batch& batch, const Draft& draft) const {
  const int64_t pos = position();  // the pending token goes at pos - 1, draft token i at pos + i
  const int64_t k = static_cast<int64_t>(draft.tokens.size());
  batch.rows.push_back({history_.back(), seq_, pos - 1, true});
  for (int64_t i = 0; i < k; ++i) batch.rows.push_back({draft.tokens[i], seq_, pos + i, true});
  return k + 1;
}

int64_t Session::accept_verify(const float* logits, const Draft& d) {
  OG_CHECK(turn_ && !turn_->done, "session: accept_verify outside a running turn");
  Turn& t = *turn_;
  const int64_t k = static_cast<int64_t>(d.tokens.size());
  const int32_t n_vocab = engine_.n_vocab();
  const double temperature = t.sampler->config().temperature;
  const int64_t pos = position();
  ++stats_.spec_drafts;
  stats_.spec_draft_tokens += k;
  int64_t accepted = 0;
  for (int64_t i = 0; i <= k && !t.done; ++i) {
    logits_.assign(logits + i * n_vocab, logits + (i + 1) * n_vocab);
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
  if (t.opts->spec.proposer) t.opts->spec.proposer->verified(k, accepted);
  return accepted;
}

bool Session::spec_step() {
  const Draft d = propose_draft(turn_->opts->spec.draft_max);
  if (d.tokens.empty()) return false;
  Batch batch;
  batch.rows.reserve(d.tokens.size() + 1);
  add_verify_rows(batch, d);
  Timer tf;
  forward_checked(batch);
  stats_.decode_s += tf.seconds();
  ++stats_.decode_steps;
  const std::vector<float> rows = logits_;  // [k + 1, n_vocab]; accept_verify overwrites logits_
  accept_verify(rows.data(), d);
  return true;
}

}  // namespace og
