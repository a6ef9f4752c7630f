// Session: the per-sequence state of one conversation over a KvCache that
// many sessions may share (it is sequence `seq` of that cache): the exact token
// history, the turn's sampler and stop rules, the streaming decoder. The cache
// holds a prefix of the history (a turn's final sampled token stays pending
// until the next turn prefills it).
//
// A turn is stepped from outside so that many sessions share one forward:
//   begin_turn(prompt, ...)                  the prompt joins the history
//   while (!turn_done()) {
//     add_rows(batch, budget)                the rows it needs next (prefill chunk or one decode row)
//     ... one forward over every session's rows ...
//     accept(logits_row_or_null)             samples, streams, applies stop rules
//   }
//   end_turn()                               the result; the final token is in the history
// generate() is the one-session case of the same steps (run and chat use it).
// Undo rewinds the cache, and recomputes from the token history when a ring
// has lost it. Nothing here prints: results and notes are returned.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/timer.h"
#include "runtime/constraint.h"
#include "kv/kv_cache.h"
#include "runtime/engine.h"
#include "runtime/image_span.h"
#include "runtime/sampler.h"
#include "runtime/spec/proposer.h"
#include "runtime/stats.h"
#include "runtime/stop_filter.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer.h"

namespace og {

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0;  // natural log of the softmax of the model's raw logits
};

// One sampled token, as on_token sees it.
struct TokenEvent {
  int32_t id = 0;
  float logprob = 0;              // filled when GenerateOptions.logprobs
  std::vector<TokenLogprob> top;  // top_logprobs alternatives, most likely first
};

// Prompt rows per step when every one wants logits (on_prompt_token).
constexpr int64_t kPromptLogprobRows = 64;

struct GenerateOptions {
  int64_t max_new_tokens = 256;           // excludes the prompt
  std::vector<int32_t> stop_ids;          // ids that end generation (kept in the history)
  std::vector<std::string> stop_strings;  // text that ends generation (never streamed)
  std::function<void()> on_prefilled;     // called once the prompt is in the cache, before decoding
  std::function<void(const TokenEvent&)> on_token;  // optional: each sampled token
  bool logprobs = false;                  // on_token events carry the token's logprob
  int top_logprobs = 0;                   // ... and this many alternatives
  // The text keeps control tokens' texts (a tool-call marker such as
  // <|python_tag|> or [TOOL_CALLS] that a reply parser reads); stop ids are
  // never text either way.
  bool special_text = false;
  // Prompt log-probabilities (an echo request's, as lm-eval's log-likelihood
  // requests ask): when set, every prompt row is forwarded wanting logits and
  // this is called, in order, for each prompt token after the turn's first
  // forwarded row with its logprob given the tokens before it (and
  // top_logprobs alternatives). Rows the cache already holds are not
  // forwarded, so they get none: start the turn over an empty cache.
  std::function<void(const TokenEvent&)> on_prompt_token;
  // Structured output: every sampled token stays inside this grammar (a stop
  // id only once it is complete). Empty: unconstrained.
  GrammarConstraint grammar;
  // Set from anywhere (a SIGINT handler): generate() ends the turn at the next
  // step boundary as interrupt_turn() does. Null: never interrupted.
  const std::atomic<bool>* interrupt = nullptr;
  // Speculative decoding (one-session turns driven by step() / generate()):
  // each decode step forwards the last token plus the proposer's draft in one
  // batch and keeps the longest prefix the target agrees with plus one token
  // of its own. Greedy output is token for token that of plain decoding; a
  // sampled one has the target's distribution (the rejection rule). Under a
  // grammar with temperature > 0 the turn decodes plainly. See docs/speculative.md.
  SpecOptions spec;
};

enum class StopReason { kNone, kStopToken, kStopString, kMaxTokens, kCapacity, kInterrupted };
// In OpenAI's finish-reason vocabulary (the server's, the engine's, batch's):
// "stop" (a stop id or string), "length" (max tokens or the cache's capacity),
// "cancelled" (interrupted), "none". The C API's og_stop_reason_name keeps the
// finer names its header promised (max_new_tokens, ...).
const char* stop_reason_name(StopReason r);

struct TurnResult {
  StopReason reason = StopReason::kNone;
  int64_t prefilled = 0;        // tokens prefilled this turn (carried pending token included)
  std::vector<int32_t> tokens;  // generated ids, the final one included
  std::string text;             // the text streamed (stop string excluded)
  int32_t stop_token = -1;      // kStopToken: the id
  std::string stop_string;      // kStopString: which one
};

struct RewindResult {
  int64_t removed = 0;            // tokens dropped from the history
  bool recomputed = false;        // the cache could not rewind (ring lost history) and was rebuilt
  int64_t history_begin = 0;      // recomputed: oldest position the cache still held
  int64_t recomputed_tokens = 0;  // recomputed: tokens prefilled again
};

using TextCallback = std::function<void(std::string_view piece)>;

// An image in a session's history (docs/vision.md, "The seam"): its span
// (history() holds the caller's placeholder id at each of its positions; the
// span's hash, never those ids, names it), the rows' embeddings [length,
// width], kept so that a cache that lost the image (a ring) is refilled
// exactly, and whether its rows attend to each other bidirectionally.
struct SessionImage {
  ImageSpan span;
  std::vector<float> embeddings;
  bool bidirectional = false;
};

class Session {
 public:
  // A session over sequence `seq` of a shared cache, which must already hold
  // exactly `history` (empty, or a prefix forked from another sequence).
  // `engine`, `cache` and `tok` must outlive the session; it never adds or
  // removes the sequence.
  // `images`: the images among `history` (a fork of a session that has some).
  Session(Engine& engine, KvCache& cache, int seq, const Tokenizer& tok, std::vector<int32_t> history = {},
          std::vector<SessionImage> images = {});
  // A session that owns a single-sequence cache and uses its sequence 0.
  Session(Engine& engine, std::unique_ptr<KvCache> cache, const Tokenizer& tok);

  int seq() const { return seq_; }
  int64_t capacity() const { return cache_->policy().max_capacity; }
  int64_t position() const { return static_cast<int64_t>(history_.size()); }
  int64_t cached() const { return cache_->length(seq_); }  // positions held by the cache
  const std::vector<int32_t>& history() const { return history_; }
  // The images in the history, by position (their spans: image_spans()).
  const std::vector<SessionImage>& images() const { return images_; }
  std::vector<ImageSpan> image_spans() const;
  const KvCache& cache() const { return *cache_; }
  Stats& stats() { return stats_; }
  const Stats& stats() const { return stats_; }

  // True when `n` new prompt tokens fit in the cache; at least one token is then
  // generated (sampled from the last prompt row's logits, it needs no position
  // until another token follows it). Every position of the cache is usable.
  bool fits(int64_t n) const { return position() + n <= capacity(); }

  // The one-session driver: begin_turn, then steps of this session alone until
  // a stop rule fires. Throws og::Error when the prompt does not fit (check
  // fits() first), when there is nothing to generate from, or when a step
  // fails; on any failure the session is as before the call.
  TurnResult generate(std::span<const int32_t> prompt, Sampler& sampler, const GenerateOptions& opts,
                      const TextCallback& on_text);

  // --- A turn stepped from outside (see the file comment) ---
  // Appends `prompt` to the history. `sampler`, `opts` and `on_text` must stay
  // valid until end_turn() or abort_turn(). Throws as generate() does (the
  // session is then unchanged); may forward on its own when the cache holds the
  // whole history (the last token is forwarded again for fresh logits).
  void begin_turn(std::span<const int32_t> prompt, Sampler& sampler, const GenerateOptions& opts,
                  const TextCallback& on_text);
  // Begins a turn with no new prompt over a history the cache already holds
  // in full (e.g. a prompt forked from another sequence), given the logits
  // [n_vocab] of its last row (computed for that other sequence): samples the
  // first token from them at once, as accept() does, so nothing is forwarded
  // again. Throws as begin_turn() and accept() do (then call abort_turn()).
  void begin_turn_with_logits(std::span<const float> logits, Sampler& sampler, const GenerateOptions& opts,
                              const TextCallback& on_text);
  // Prompt rows not yet in the cache (0 while decoding or when done).
  int64_t prefill_pending() const;
  bool in_prefill() const { return turn_ && !turn_->done && prefill_pending() > 0; }
  bool turn_done() const { return !turn_ || turn_->done; }
  bool in_turn() const { return turn_.has_value(); }  // begun and not yet ended
  // Appends the rows this session needs next to `batch`: up to min(max_rows,
  // the cache's max_write) prompt rows, or the one decode row; an image is
  // never split (the rows stop before it, or hold all of it even past
  // max_rows: at most max_write, append_image's bound). The last prompt
  // row and every decode row want logits (every prompt row with
  // on_prompt_token). Returns the number of rows added.
  int64_t add_rows(Batch& batch, int64_t max_rows) const;
  // After the step that carried this session's rows: `logits` [n_rows,
  // n_vocab] are the rows that wanted logits (the trailing rows of what
  // add_rows added), null when none did. Prompt rows before the last give
  // on_prompt_token events; the last prompt row or a decode row is accept()ed
  // unless `sample` is false (then only the events: call accept() with the
  // last row after).
  void accept_rows(const float* logits, int64_t n_rows, bool sample = true);
  // After the step that carried this session's rows: `logits` [n_vocab] is the
  // row it asked for, or null when its rows wanted none (a prompt chunk that is
  // not the last). Samples, streams text, applies the stop rules. Throws
  // og::Error on non-finite logits (the caller then aborts the turn).
  void accept(const float* logits);
  // The result of a finished turn; the session is ready for the next one.
  TurnResult end_turn();
  // Abandons the current turn: history and cache back to before begin_turn.
  void abort_turn();
  // Ends the current turn early (e.g. cancelled) keeping what was generated:
  // text held back for a possible stop string is flushed; reason stays kNone.
  void stop_turn();
  // Ends the current turn early because the user interrupted it, keeping what
  // was generated (the turn is committed by end_turn as any other): text held
  // for a possible stop string is flushed, but the bytes of an unfinished
  // character are dropped, so the text ends on a character boundary; reason
  // kInterrupted.
  void interrupt_turn();

  // --- Speculation inside a shared step (the scheduler; docs/speculative.md) ---
  // The draft the next verify step of this decoding turn would carry, of at
  // most min(max_tokens, the room spec_room() leaves) tokens, from
  // opts.spec.proposer; empty when there is none worth verifying (then
  // decode plainly with add_rows). Throws og::Error when the proposer fails
  // or gives an id outside the vocabulary.
  Draft propose_draft(int64_t max_tokens);
  // Appends the verify rows of `draft` (the pending token and the draft, every
  // row wanting logits): draft.tokens.size() + 1 rows.
  int64_t add_verify_rows(Batch& batch, const Draft& draft) const;
  // After the step that carried add_verify_rows's rows: `rows` [k + 1,
  // n_vocab] their logits. Takes the accepted tokens and the target's own one
  // through the same chooser and stop rules as plain steps, rewinds the cache
  // over the rejected positions and tells the proposer. Returns the draft
  // tokens accepted.
  int64_t accept_verify(const float* rows, const Draft& draft);

  // One step of a turn begun with begin_turn, driving this session alone (a
  // prefill chunk or one decode row): generate() is begin_turn, step() until
  // turn_done(), end_turn(). Throws as generate() does (then call abort_turn()).
  void step();

  // Prefills `tokens` (appended to the history) without generating;
  // want_logits keeps the last row's logits (logits()).
  void prefill(std::span<const int32_t> tokens, bool want_logits = false);
  // Appends `tokens` to the history without forwarding them: they stay pending
  // for the next prefill or turn, as a turn's final sampled token does (a
  // restored session's, og_session_load). Outside a turn; they must fit.
  void append_pending(std::span<const int32_t> tokens);
  // Appends an image to the history without forwarding it, as append_pending
  // does: `embeddings` holds its rows [n, width] (the model's hidden size,
  // checked by the forward), `hash` names the image's pixels and
  // preprocessing (the prefix cache's key), `placeholder` is the id its
  // positions hold in history() (and the id a family with per-layer inputs
  // reads for them). The image is always forwarded whole in one step, so n is
  // at most the cache's max_write. Outside a turn; it must fit.
  void append_image(std::span<const float> embeddings, int64_t width, const Sha256Digest& hash, int32_t placeholder,
                    bool bidirectional);
  // [n_vocab] logits of the last forwarded row that asked for them; not
  // meaningful (empty or stale) when the last forward asked for none.
  std::span<const float> logits() const { return logits_; }

  // Truncates the history to `length` tokens and the cache with it; when the
  // cache answers kHistoryUnavailable it is cleared and refilled from the history.
  // og::Error when `length` falls inside an image (an image is kept or
  // dropped whole: rewind to its start or its end).
  RewindResult rewind_to(int64_t length);
  void reset();  // empty history, cache cleared (allocation kept)

 private:
  struct Turn {
    Sampler* sampler = nullptr;
    const GenerateOptions* opts = nullptr;
    const TextCallback* on_text = nullptr;
    int64_t old_len = 0, old_cached = 0;  // to restore on abort
    Timer timer;                          // from begin_turn
    StopFilter filter;
    std::optional<GrammarState> grammar;  // opts->grammar's matcher for this turn
    TurnResult res;
    bool done = false;
  };

  // Forwards history_[cached(), end) in chunks of max_write; logits of the
  // last row when want_logits; adds the forward time to *seconds.
  void forward_until(int64_t end, bool want_logits, double* seconds);
  void forward_checked(const Batch& batch);  // throws on a cache refusal
  // Rewinds the cache to `length` positions, recomputing from history_ when a
  // ring lost the history (reported in *res when given).
  void rewind_cache(int64_t length, RewindResult* res);
  void restore(int64_t length, int64_t cached_length);
  // Appends history rows [from, from + n) to `batch` (session_images.cpp):
  // image rows carry their embedding and span; n is cut before an image it
  // would split, or grown to the end of an image that starts at `from`.
  // Returns the rows added.
  int64_t push_rows(Batch& batch, int64_t from, int64_t n, bool want_logits) const;
  // The image whose span `p` splits (begin < p < end), or nullptr.
  const SessionImage* image_split_at(int64_t p) const;
  void drop_images_from(int64_t length);  // images that end after `length` are dropped
  // A turn's state before its prompt joins the history, and the streaming
  // decoder set for a reply that follows text or not.
  Turn new_turn(Sampler& sampler, const GenerateOptions& opts, const TextCallback& on_text) const;
  void start_decoder(bool after_text, const GenerateOptions& opts);
  // Samples one token from logits_ and applies the stop rules (the loop body of a turn).
  void sample_next();
  // sample_next's halves: the token the sampler (and grammar) pick from
  // logits_, and taking a token into the turn (history, events, text, stop rules).
  int32_t choose_token();
  void take_token(int32_t id);
  // A decode step under speculation (runtime/spec/spec_step.cpp): false when
  // it did nothing (no draft worth verifying), so step() decodes plainly.
  bool spec_step();
  // The most draft tokens the next verify step may carry.
  int64_t spec_room() const;
  StopReason budget_left() const;
  void finish_text();
  void emit(const std::string& s);

  Engine& engine_;
  std::unique_ptr<KvCache> owned_cache_;  // set by the owning constructor
  KvCache* cache_;
  int seq_ = 0;
  const Tokenizer& tok_;
  StreamingDecoder decoder_;
  std::vector<int32_t> history_;
  std::vector<SessionImage> images_;  // sorted by position, disjoint
  std::vector<float> logits_;  // [n_vocab] of the last forwarded row
  std::optional<Turn> turn_;
  Stats stats_;
};

}  // namespace og
