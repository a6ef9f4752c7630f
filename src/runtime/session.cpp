// Session: a turn's steps (prefill rows, decode rows, sampling with the stop
// rules), the one-session driver, and rewind with recomputation when a ring
// cache no longer holds the needed history.
#include "runtime/session.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/timer.h"
#include "runtime/logprobs.h"

namespace og {

// OpenAI's finish reasons, as the server, the engine and batch say them: a stop
// id or string is "stop", a token or cache limit "length".
const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kNone: return "none";
    case StopReason::kStopToken:
    case StopReason::kStopString: return "stop";
    case StopReason::kMaxTokens:
    case StopReason::kCapacity: return "length";
    case StopReason::kInterrupted: return "cancelled";
  }
  return "?";
}

Session::Session(Engine& engine, KvCache& cache, int seq, const Tokenizer& tok, std::vector<int32_t> history,
                 std::vector<SessionImage> images)
    : engine_(engine),
      cache_(&cache),
      seq_(seq),
      tok_(tok),
      decoder_(tok),
      history_(std::move(history)),
      images_(std::move(images)) {
  OG_CHECK(cache_->length(seq_) == position(), "session: sequence ", seq_, " of the cache holds ",
           cache_->length(seq_), " positions but the session's history has ", position(), " tokens");
  check_image_spans(image_spans(), position(), "session");
}

Session::Session(Engine& engine, std::unique_ptr<KvCache> cache, const Tokenizer& tok)
    : engine_(engine), owned_cache_(std::move(cache)), cache_(owned_cache_.get()), tok_(tok), decoder_(tok) {
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
  size_t wanted = 0;
  for (const BatchRow& row : batch.rows) wanted += row.want_logits ? 1 : 0;
  if (wanted > 0) {
    const size_t n = wanted * static_cast<size_t>(engine_.n_vocab());
    OG_CHECK(logits_.size() >= n, "session: the forward pass returned ", logits_.size(), " logits, expected ", n);
    logits_.resize(n);  // [wanted, n_vocab]
  }
}

void Session::forward_until(int64_t end, bool want_logits, double* seconds) {
  const int64_t chunk = std::max<int64_t>(1, cache_->policy().max_write);
  for (int64_t p = cached(); p < end;) {
    const int64_t n = std::min(chunk, end - p);
    Batch batch;
    batch.rows.reserve(n);
    const int64_t m = push_rows(batch, p, n, false);  // an image is never split across steps
    if (want_logits && p + m == end) batch.rows.back().want_logits = true;
    Timer t;
    forward_checked(batch);
    *seconds += t.seconds();
    p += m;
  }
}

void Session::rewind_cache(int64_t length, RewindResult* res) {
  // The cache keeps an image whole: one it would split is forwarded again from its start.
  if (const SessionImage* im = image_split_at(length); im != nullptr) length = im->span.begin;
  const int64_t have = cached();
  if (have <= length) return;
  const KvResult r = cache_->rewind(seq_, have - length);
  if (r.ok()) return;
  if (r.status != KvStatus::kHistoryUnavailable) fail("cannot rewind the cache to ", length, ": ", r.message);
  // A ring layer overwrote positions the shorter history needs: rebuild from tokens.
  const KvResult c = cache_->clear(seq_);
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
  drop_images_from(position());
  try {
    rewind_cache(std::min(cached_length, cached()), nullptr);
  } catch (const Error&) {
    cache_->clear(seq_);  // the history is intact; the next turn refills the cache from it
  }
}

RewindResult Session::rewind_to(int64_t length) {
  OG_CHECK(!turn_, "cannot rewind during a turn");
  OG_CHECK(length >= 0 && length <= position(), "cannot rewind to ", length, " tokens: the history holds ",
           position());
  if (const SessionImage* im = image_split_at(length); im != nullptr)
    fail("cannot rewind to ", length, " tokens: position ", length, " is inside an image (positions [",
         im->span.begin, ", ", im->span.end(), ")); rewind to ", im->span.begin, " or ", im->span.end());
  RewindResult res;
  res.removed = position() - length;
  history_.resize(length);
  drop_images_from(length);
  rewind_cache(length, &res);
  return res;
}

void Session::append_pending(std::span<const int32_t> tokens) {
  OG_CHECK(!turn_, "cannot append pending tokens during a turn");
  OG_CHECK(fits(static_cast<int64_t>(tokens.size())), tokens.size(), " pending tokens do not fit: ", position(), "/",
           capacity(), " positions used");
  history_.insert(history_.end(), tokens.begin(), tokens.end());
}

void Session::reset() {
  OG_CHECK(!turn_, "cannot reset during a turn");
  history_.clear();
  images_.clear();
  const KvResult r = cache_->clear(seq_);
  OG_CHECK(r.ok(), "cannot clear the cache: ", r.message);
}

void Session::prefill(std::span<const int32_t> tokens, bool want_logits) {
  OG_CHECK(!turn_, "cannot prefill during a turn");
  OG_CHECK(position() + static_cast<int64_t>(tokens.size()) <= capacity(), "prefill of ", tokens.size(),
           " tokens does not fit: ", position(), "/", capacity(), " positions used");
  const int64_t old_len = position();
  const int64_t before = cached();
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  try {
    if (want_logits && cached() == position() && position() > 0) {
      rewind_cache(position() - 1, nullptr);  // everything is cached: forward the last token again
    }
    forward_until(position(), want_logits, &stats_.prefill_s);
  } catch (...) {
    restore(old_len, before);
    throw;
  }
  stats_.prompt_tokens += position() - before;
}

Session::Turn Session::new_turn(Sampler& sampler, const GenerateOptions& opts, const TextCallback& on_text) const {
  Turn t;
  t.sampler = &sampler;
  t.opts = &opts;
  t.on_text = &on_text;
  t.old_len = position();
  t.old_cached = cached();
  t.filter = StopFilter(opts.stop_strings);
  if (opts.grammar.grammar) t.grammar.emplace(opts.grammar);
  return t;
}

void Session::start_decoder(bool after_text, const GenerateOptions& opts) {
  if (after_text) decoder_.reset_continuation();
  else decoder_.reset();
  decoder_.set_skip_special(!opts.special_text);
}

void Session::begin_turn(std::span<const int32_t> prompt, Sampler& sampler, const GenerateOptions& opts,
                         const TextCallback& on_text) {
  OG_CHECK(!turn_, "a turn is already running in this session");
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  OG_CHECK(fits(n_prompt), "a prompt of ", n_prompt, " tokens does not fit: ", position(), "/", capacity(),
           " positions used");
  OG_CHECK(position() + n_prompt > 0, "nothing to generate from: the prompt and the history are empty");
  Turn t = new_turn(sampler, opts, on_text);
  // Whether any text precedes the reply decides the leading-space rule of its first piece.
  bool after_text = false;
  for (int32_t id : history_) after_text = after_text || tok_.token_type(id) != TokenType::kControl;
  for (int32_t id : prompt) after_text = after_text || tok_.token_type(id) != TokenType::kControl;
  history_.insert(history_.end(), prompt.begin(), prompt.end());
  try {
    // Logits come from the last history token, so it must be (re)forwarded now.
    if (cached() >= position()) rewind_cache(position() - 1, nullptr);
  } catch (...) {
    restore(t.old_len, t.old_cached);
    throw;
  }
  t.res.prefilled = position() - cached();
  start_decoder(after_text, opts);
  turn_.emplace(std::move(t));
}

void Session::begin_turn_with_logits(std::span<const float> logits, Sampler& sampler, const GenerateOptions& opts,
                                     const TextCallback& on_text) {
  OG_CHECK(!turn_, "a turn is already running in this session");
  OG_CHECK(position() > 0 && cached() == position(), "a turn from given logits needs the whole history (",
           position(), " tokens) in the cache, which holds ", cached());
  OG_CHECK(logits.size() == static_cast<size_t>(engine_.n_vocab()), "a turn from given logits needs ",
           engine_.n_vocab(), " logits, got ", logits.size());
  Turn t = new_turn(sampler, opts, on_text);
  bool after_text = false;
  for (int32_t id : history_) after_text = after_text || tok_.token_type(id) != TokenType::kControl;
  start_decoder(after_text, opts);
  turn_.emplace(std::move(t));
  accept(logits.data());
}

int64_t Session::prefill_pending() const {
  if (!turn_ || turn_->done) return 0;
  return turn_->res.tokens.empty() ? position() - cached() : 0;
}

int64_t Session::add_rows(Batch& batch, int64_t max_rows) const {
  if (turn_done() || max_rows < 1) return 0;
  const int64_t pending = prefill_pending();
  if (pending > 0) {
    const int64_t begin = cached();
    const bool all = static_cast<bool>(turn_->opts->on_prompt_token);
    // Every row of a prompt-logprobs chunk returns [n_vocab] logits: smaller
    // chunks bound that memory (64 rows of a 128k vocabulary: 32 MiB).
    const int64_t cap = all ? std::min<int64_t>(kPromptLogprobRows, max_rows) : max_rows;
    // An image is forwarded whole (push_rows may give fewer or more rows than asked).
    const int64_t n = push_rows(batch, begin, std::min({pending, cap, std::max<int64_t>(1, cache_->policy().max_write)}),
                                all);
    if (n == pending) batch.rows.back().want_logits = true;
    return n;
  }
  // Decoding: the last sampled token is forwarded for the next logits.
  batch.rows.push_back({history_.back(), seq_, position() - 1, true});
  return 1;
}

void Session::accept(const float* logits) {
  OG_CHECK(turn_ && !turn_->done, "session: accept outside a running turn");
  if (logits == nullptr) return;  // a prompt chunk that is not the last
  const int64_t n_vocab = engine_.n_vocab();
  logits_.assign(logits, logits + n_vocab);
  // Corrupt weights (or an overflow) would otherwise be sampled as silent garbage.
  for (float x : logits_)
    OG_CHECK(std::isfinite(x), "the model produced a non-finite logit (NaN or inf) at position ", cached() - 1,
             ": its weights may be corrupt or overflow in f32");
  if (turn_->res.tokens.empty()) {
    stats_.prompt_tokens += turn_->res.prefilled;
    if (turn_->opts->on_prefilled) turn_->opts->on_prefilled();
  }
  sample_next();
}

void Session::accept_rows(const float* logits, int64_t n_rows, bool sample) {
  OG_CHECK(turn_ && !turn_->done, "session: accept outside a running turn");
  if (logits == nullptr || n_rows <= 0) return sample ? accept(nullptr) : void();
  const int64_t n_vocab = engine_.n_vocab();
  const int64_t first = cached() - n_rows;  // the rows were the last n_rows forwarded
  for (int64_t k = 0; k < n_rows; ++k) {
    const float* row = logits + k * n_vocab;
    const int64_t pos = first + k;
    if (pos + 1 >= position()) return sample ? accept(row) : void();  // the last prompt row, or a decode row
    const std::span<const float> r(row, static_cast<size_t>(n_vocab));
    for (float x : r)
      OG_CHECK(std::isfinite(x), "the model produced a non-finite logit (NaN or inf) at position ", pos,
               ": its weights may be corrupt or overflow in f32");
    const Turn& t = *turn_;
    if (t.opts->on_prompt_token) t.opts->on_prompt_token(token_event(r, history_[pos + 1], true, t.opts->top_logprobs));
  }
}

StopReason Session::budget_left() const {
  if (static_cast<int64_t>(turn_->res.tokens.size()) >= turn_->opts->max_new_tokens) return StopReason::kMaxTokens;
  // Another token needs the last one forwarded at position() - 1, the cache's last at most.
  if (position() > capacity()) return StopReason::kCapacity;
  return StopReason::kNone;
}

void Session::emit(const std::string& s) {
  if (s.empty()) return;
  turn_->res.text += s;
  if (*turn_->on_text) (*turn_->on_text)(s);
}

void Session::finish_text() {
  Turn& t = *turn_;
  t.done = true;
  if (!t.filter.matched()) {
    emit(t.filter.push(decoder_.flush()));
    emit(t.filter.flush());
  }
}

void Session::sample_next() {
  if ((turn_->res.reason = budget_left()) != StopReason::kNone) return finish_text();
  take_token(choose_token());
}

int32_t Session::choose_token() {
  Turn& t = *turn_;
  Timer ts;
  const int32_t id = t.grammar ? t.grammar->sample(*t.sampler, logits_, history_, t.res.tokens, t.opts->stop_ids)
                               : t.sampler->sample(logits_, history_, t.res.tokens);
  stats_.sampling_s += ts.seconds();
  return id;
}

void Session::take_token(int32_t id) {
  Turn& t = *turn_;
  TurnResult& res = t.res;
  if (res.tokens.empty()) stats_.ttft_s = t.timer.seconds();
  history_.push_back(id);
  res.tokens.push_back(id);
  ++stats_.generated_tokens;
  if (t.opts->on_token) t.opts->on_token(token_event(logits_, id, t.opts->logprobs, t.opts->top_logprobs));
  if (std::find(t.opts->stop_ids.begin(), t.opts->stop_ids.end(), id) != t.opts->stop_ids.end()) {
    res.reason = StopReason::kStopToken;
    res.stop_token = id;
    return finish_text();
  }
  emit(t.filter.push(decoder_.push(id)));
  if (t.filter.matched()) {
    res.reason = StopReason::kStopString;
    res.stop_string = t.filter.matched_string();
    return finish_text();
  }
  // The sampled token is forwarded only when another one will be sampled after
  // it; otherwise it stays pending for the next turn's prefill.
  if ((res.reason = budget_left()) != StopReason::kNone) return finish_text();
}

TurnResult Session::end_turn() {
  OG_CHECK(turn_ && turn_->done, "session: end_turn before the turn is done");
  TurnResult r = std::move(turn_->res);
  turn_.reset();
  return r;
}

void Session::abort_turn() {
  if (!turn_) return;
  const Turn& t = *turn_;
  const int64_t len = t.old_len, cached_len = t.old_cached;
  turn_.reset();
  restore(len, cached_len);
}

void Session::stop_turn() {
  if (!turn_ || turn_->done) return;
  turn_->res.reason = StopReason::kNone;
  finish_text();
}

void Session::interrupt_turn() {
  if (!turn_ || turn_->done) return;
  Turn& t = *turn_;
  t.res.reason = StopReason::kInterrupted;
  t.done = true;
  decoder_.reset();  // drops the bytes of a character not yet complete
  if (!t.filter.matched()) emit(t.filter.flush());
}

void Session::step() {
  OG_CHECK(turn_ && !turn_->done, "session: no turn to step");
  const bool prefill = in_prefill();
  if (!prefill && turn_->opts->spec.proposer && spec_step()) return;
  Batch batch;
  add_rows(batch, cache_->policy().max_write);
  Timer tf;
  forward_checked(batch);
  if (prefill) {
    stats_.prefill_s += tf.seconds();
  } else {
    stats_.decode_s += tf.seconds();
    ++stats_.decode_steps;
  }
  int64_t wanted = 0;
  for (const BatchRow& r : batch.rows) wanted += r.want_logits ? 1 : 0;
  if (wanted <= 1) return accept(wanted ? logits_.data() : nullptr);
  const std::vector<float> rows = logits_;  // accept() overwrites logits_ with the last row
  accept_rows(rows.data(), wanted);
}

TurnResult Session::generate(std::span<const int32_t> prompt, Sampler& sampler, const GenerateOptions& opts,
                             const TextCallback& on_text) {
  begin_turn(prompt, sampler, opts, on_text);
  try {
    while (!turn_done()) {
      if (opts.interrupt && opts.interrupt->load(std::memory_order_relaxed)) {
        interrupt_turn();
        break;
      }
      step();
    }
  } catch (...) {
    abort_turn();
    throw;
  }
  return end_turn();
}

}  // namespace og
