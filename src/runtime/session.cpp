// Session: chunked prefill, the decode loop with its stop rules, and rewind
// with recomputation when a ring cache no longer holds the needed history.
#include "runtime/session.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/timer.h"
#include "runtime/stop_filter.h"

namespace og {

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kNone: return "none";
    case StopReason::kStopToken: return "stop_token";
    case StopReason::kStopString: return "stop_string";
    case StopReason::kMaxTokens: return "max_new_tokens";
    case StopReason::kCapacity: return "capacity";
  }
  return "?";
}

Session::Session(Engine& engine, std::unique_ptr<KvCache> cache, const Tokenizer& tok)
    : engine_(engine), cache_(std::move(cache)), tok_(tok), decoder_(tok) {
  OG_CHECK(cache_ != nullptr, "session: no cache");
  if (cache_->length(0) < 0) {
    const KvResult r = cache_->add_sequence(0);
    OG_CHECK(r.ok(), "session: cannot add sequence 0 to the cache: ", r.message);
  }
  OG_CHECK(cache_->length(0) == 0, "session: the cache must start empty");
}

void Session::forward_checked(const Batch& batch) {
  const KvResult r = engine_.forward(batch, *cache_, logits_);
  if (!r.ok()) {
    const BatchRow& first = batch.rows.front();
    fail("the cache refused a step of ", batch.rows.size(), " token(s) at position ", first.pos, ": ", r.message);
  }
  if (batch.rows.back().want_logits) {
    OG_CHECK(logits_.size() >= static_cast<size_t>(engine_.n_vocab()), "session: the forward pass returned ",
             logits_.size(), " logits, expected ", engine_.n_vocab());
    logits_.resize(engine_.n_vocab());
    // Corrupt weights (or an overflow) would otherwise be sampled as silent garbage.
    for (float x : logits_)
      OG_CHECK(std::isfinite(x), "the model produced a non-finite logit (NaN or inf) at position ",
               batch.rows.back().pos, ": its weights may be corrupt or overflow in f32");
  }
}

void Session::forward_until(int64_t end, bool want_logits, double* seconds) {
  const int64_t chunk = std::max<int64_t>(1, cache_->policy().max_write);
  for (int64_t p = cached(); p < end;) {
    const int64_t n = std::min(chunk, end - p);
    Batch batch;
    batch.rows.reserve(n);
    for (int64_t i = 0; i < n; ++i) batch.rows.push_back({history_[p + i], 0, p + i, false});
    if (want_logits && p + n == end) batch.rows.back().want_logits = true;
    Timer t;
    forward_checked(batch);
    *seconds += t.seconds();
    p += n;
  }
}

void Session::rewind_cache(int64_t length, RewindResult* res) {
  const int64_t have = cached();
  if (have <= length) return;
  const KvResult r = cache_->rewind(0, have - length);
  if (r.ok()) return;
  if (r.status != KvStatus::kHistoryUnavailable) fail("cannot rewind the cache to ", length, ": ", r.message);
  // A ring layer overwrote positions the shorter history needs: rebuild from tokens.
  const KvResult c = cache_->clear(0);
  OG_CHECK(c.ok(), "cannot clear the cache: ", c.message);
  double seconds = 0;
  forward_until(length, false, &seconds);
  stats_.recomputed_tokens += length;
  if (res) {
    res->recomputed = true;
    res->history_begin = r.history_begin;
    res->recomputed_tokens = length;
  }
}

void Session::restore(int64_t length, int64_t cached_length) {
  history_.resize(std::min<int64_t>(length, position()));
  try {
    rewind_cache(std::min(cached_length, cached()), nullptr);
  } catch (const Error&) {
    cache_->clear(0);  // the history is intact; the next turn refills the cache from it
  }
}

RewindResult Session::rewind_to(int64_t length) {
  OG_CHECK(length >= 0 && length <= position(), "cannot rewind to ", length, " tokens: the history holds ",
           position());
  RewindResult res;
  res.removed = position() - length;
  history_.resize(length);
  rewind_cache(length, &res);
  return res;
}

void Session::reset() {
  history_.clear();
  const KvResult r = cache_->clear(0);
  OG_CHECK(r.ok(), "cannot clear the cache: ", r.message);
}

void Session::prefill(std::span<const int32_t> tokens) {
  OG_CHECK(position() + static_cast<int64_t>(tokens.size()) <= capacity(), "prefill of ", tokens.size(),
           " tokens does not fit: ", position(), "/", capacity(), " positions used");
  const int64_t old_len = position();
  const int64_t before = cached();
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  try {
    forward_until(position(), false, &stats_.prefill_s);
  } catch (...) {
    restore(old_len, before);
    throw;
  }
  stats_.prompt_tokens += position() - before;
}

TurnResult Session::generate(std::span<const int32_t> prompt, Sampler& sampler, const GenerateOptions& opts,
                             const TextCallback& on_text) {
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  OG_CHECK(fits(n_prompt), "a prompt of ", n_prompt, " tokens does not fit: ", position(), "/", capacity(),
           " positions used and at least one must stay free for generation");
  OG_CHECK(position() + n_prompt > 0, "nothing to generate from: the prompt and the history are empty");
  Timer turn_timer;
  const int64_t old_len = position();
  const int64_t old_cached = cached();
  TurnResult res;
  // Whether any text precedes the reply decides the leading-space rule of its first piece.
  bool after_text = false;
  for (int32_t t : history_) after_text = after_text || tok_.token_type(t) != TokenType::kControl;
  for (int32_t t : prompt) after_text = after_text || tok_.token_type(t) != TokenType::kControl;
  history_.insert(history_.end(), prompt.begin(), prompt.end());
  try {
    // Logits come from the last history token, so it must be (re)forwarded now.
    if (cached() >= position()) rewind_cache(position() - 1, nullptr);
    res.prefilled = position() - cached();
    forward_until(position(), true, &stats_.prefill_s);
  } catch (...) {
    restore(old_len, old_cached);
    throw;
  }
  stats_.prompt_tokens += res.prefilled;
  if (opts.on_prefilled) opts.on_prefilled();
  if (after_text) decoder_.reset_continuation();
  else decoder_.reset();
  try {
    decode_loop(sampler, opts, on_text, turn_timer, &res);
  } catch (...) {
    restore(old_len, old_cached);
    throw;
  }
  return res;
}

void Session::decode_loop(Sampler& sampler, const GenerateOptions& opts, const TextCallback& on_text,
                          const Timer& turn_timer, TurnResult* out) {
  TurnResult& res = *out;
  StopFilter filter(opts.stop_strings);
  auto emit = [&](const std::string& s) {
    if (s.empty()) return;
    res.text += s;
    if (on_text) on_text(s);
  };
  auto budget_left = [&] {
    if (static_cast<int64_t>(res.tokens.size()) >= opts.max_new_tokens) return StopReason::kMaxTokens;
    if (position() >= capacity()) return StopReason::kCapacity;
    return StopReason::kNone;
  };
  while ((res.reason = budget_left()) == StopReason::kNone) {
    Timer ts;
    const int32_t tok = sampler.sample(logits_, history_);
    stats_.sampling_s += ts.seconds();
    if (res.tokens.empty()) stats_.ttft_s = turn_timer.seconds();
    history_.push_back(tok);
    res.tokens.push_back(tok);
    ++stats_.generated_tokens;
    if (std::find(opts.stop_ids.begin(), opts.stop_ids.end(), tok) != opts.stop_ids.end()) {
      res.reason = StopReason::kStopToken;
      res.stop_token = tok;
      break;
    }
    emit(filter.push(decoder_.push(tok)));
    if (filter.matched()) {
      res.reason = StopReason::kStopString;
      res.stop_string = filter.matched_string();
      break;
    }
    if ((res.reason = budget_left()) != StopReason::kNone) break;
    // The sampled token is forwarded only when another one will be sampled after
    // it; otherwise it stays pending for the next turn's prefill.
    Batch batch;
    batch.rows.push_back({tok, 0, position() - 1, true});
    Timer tf;
    forward_checked(batch);
    stats_.decode_s += tf.seconds();
    ++stats_.decode_steps;
  }
  if (!filter.matched()) {
    emit(filter.push(decoder_.flush()));
    emit(filter.flush());
  }
}

}  // namespace og
