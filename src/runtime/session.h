// Session: one sequence (seq 0) over an Engine and a KvCache the session owns.
// It keeps the exact token history; the cache holds a prefix of it (the turn's
// final sampled token stays pending until the next turn prefills it). A turn
// prefills its new tokens in chunks of the cache's max_write, then decodes
// until a stop rule fires, streaming text through a callback. Undo rewinds the
// cache, and recomputes from the token history when a ring has lost it.
// Nothing here prints: results and notes are returned to the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/timer.h"
#include "kv/kv_cache.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/stats.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer.h"

namespace og {

struct GenerateOptions {
  int64_t max_new_tokens = 256;           // excludes the prompt
  std::vector<int32_t> stop_ids;          // ids that end generation (kept in the history)
  std::vector<std::string> stop_strings;  // text that ends generation (never streamed)
  std::function<void()> on_prefilled;     // called once the prompt is in the cache, before decoding
};

enum class StopReason { kNone, kStopToken, kStopString, kMaxTokens, kCapacity };
const char* stop_reason_name(StopReason r);  // "stop_token", "stop_string", "max_new_tokens", "capacity"

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

class Session {
 public:
  // `engine` and `tok` must outlive the session. cache: a single-sequence cache
  // (seq 0 must exist or be addable).
  Session(Engine& engine, std::unique_ptr<KvCache> cache, const Tokenizer& tok);

  int64_t capacity() const { return cache_->policy().max_capacity; }
  int64_t position() const { return static_cast<int64_t>(history_.size()); }
  int64_t cached() const { return cache_->length(0); }  // positions held by the cache
  const std::vector<int32_t>& history() const { return history_; }
  const KvCache& cache() const { return *cache_; }
  Stats& stats() { return stats_; }
  const Stats& stats() const { return stats_; }

  // True when `n` new prompt tokens fit with room left for at least one generated token.
  bool fits(int64_t n) const { return position() + n + 1 <= capacity(); }

  // Appends `prompt` to the history, prefills everything the cache lacks, then
  // samples until a stop rule fires. The final token is committed to the history.
  // Throws og::Error when the prompt does not fit (check fits() first) or when
  // there is nothing to generate from; on any failure the session is unchanged.
  TurnResult generate(std::span<const int32_t> prompt, Sampler& sampler, const GenerateOptions& opts,
                      const TextCallback& on_text);

  // Prefills `tokens` (appended to the history) without generating.
  void prefill(std::span<const int32_t> tokens);

  // Truncates the history to `length` tokens and the cache with it; when the
  // cache answers kHistoryUnavailable it is cleared and refilled from the history.
  RewindResult rewind_to(int64_t length);
  void reset();  // empty history, cache cleared (allocation kept)

 private:
  // Forwards history_[cached(), end) in chunks of max_write; logits of the
  // last row when want_logits; adds the forward time to *seconds.
  void forward_until(int64_t end, bool want_logits, double* seconds);
  void forward_checked(const Batch& batch);  // throws on a cache refusal
  // Rewinds the cache to `length` positions, recomputing from history_ when a
  // ring lost the history (reported in *res when given).
  void rewind_cache(int64_t length, RewindResult* res);
  void restore(int64_t length, int64_t cached_length);
  // Samples until a stop rule fires, appending to *res.
  void decode_loop(Sampler& sampler, const GenerateOptions& opts, const TextCallback& on_text,
                   const Timer& turn_timer, TurnResult* res);  // rollback after a failed step

  Engine& engine_;
  std::unique_ptr<KvCache> cache_;
  const Tokenizer& tok_;
  StreamingDecoder decoder_;
  std::vector<int32_t> history_;
  std::vector<float> logits_;  // [n_vocab] of the last forwarded row
  Stats stats_;
};

}  // namespace og
