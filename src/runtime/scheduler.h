// Scheduler: continuous batching of many independent requests over one shared
// KV cache. Each step is ONE forward over the decode rows of every running
// session plus prefill chunks of waiting ones, under a per-step token budget
// (decode rows first), so each weight matrix is read once per step for all rows.
// Requests join and leave between steps; a shared prefix cache lets a new
// request start from the cached KV of an earlier prompt's longest common prefix.
//
// Guarantees (the contract the server and `offgraph batch` rely on):
// - submit() and cancel() are thread-safe and never block on a running step
//   for longer than it takes to take a mutex.
// - Every submitted request gets exactly one on_finish per choice, whatever
//   happens (finished, cancelled, refused, failed, scheduler destroyed).
// - Callbacks run on the thread that runs step() (the scheduler's own thread
//   after start()), never concurrently with each other; they must not block for
//   long and must not call step(). They may call cancel() and submit().
// - Text reaches on_text in order, never split inside a UTF-8 character, and
//   never contains a stop string or anything after it.
// - An admitted request is never cut short by another's arrival; a request
//   that can never fit (prompt + max_new_tokens > max_session_tokens) is
//   refused at once with a reason; one that fits but finds no room waits (FIFO).
// - cancel() takes effect within one step and frees the request's cache.
// - With greedy sampling and f32 storage, a request's tokens do not depend on
//   what else is batched with it.
//
// A request of n choices (submit_group, OpenAI's `n`) is admitted only when n
// session slots are free (its place in the FIFO is kept meanwhile; n above
// max_decode_sequences is refused at once, since it could never be admitted).
// Its first choice prefills the prompt once; in the step that leaves the
// prompt in the cache and yields its last row's logits, the scheduler forks
// that sequence into the n - 1 other slots (copy-on-write blocks in
// batched-cell, copies in batched-sequence) and every choice samples its first
// token from those same logits with its own sampler: choice i seeds its sampler
// with sampler.seed + i. So a group with seed s gives exactly the tokens of n
// single requests with seeds s, s + 1, ..., s + n - 1 (greedy: n equal replies)
// while the prompt is forwarded once. The choices then decode side by side,
// each with its own callbacks and its own on_finish; cancel(id) ends them all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_cache.h"
#include "runtime/engine.h"
#include "runtime/generation_limits.h"
#include "runtime/kv_events.h"
#include "runtime/prefix_disk_tier.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

namespace og {

struct TowerImage;  // runtime/image_input.h

// An image in a request's prompt (docs/vision.md, "Images through the
// scheduler"): the prompt holds `placeholder` at positions [begin, begin +
// rows), and those positions go into the step as the image's embedding rows
// (a bidirectional span where the family says so), forwarded whole in one
// step. The prefix cache keys them by the image's hash. `image` is shared,
// never copied, by the request's choices.
struct RequestImage {
  int64_t begin = 0;
  std::shared_ptr<const TowerImage> image;
  int32_t placeholder = 0;
  bool bidirectional = false;
};

struct RequestOptions {
  std::vector<int32_t> prompt;            // token ids (chat template already applied); not empty
  // The prompt's images, sorted by begin, disjoint; each at most the cache's
  // max_write positions and (SchedulerOptions::image_width) of the model's width.
  std::vector<RequestImage> images;
  int64_t max_new_tokens = 256;           // excludes the prompt
  SamplerConfig sampler;
  std::vector<int32_t> stop_ids;          // ids that end generation (not streamed as text)
  std::vector<std::string> stop_strings;  // text that ends generation (never streamed)
  int top_logprobs = 0;                   // > 0: TokenEvent.top holds that many alternatives
  bool logprobs = false;                  // TokenEvent.logprob filled in
  bool use_prefix_cache = true;           // may start from (and feed) the shared prefix cache
  bool special_text = false;              // streamed text keeps control tokens' texts (GenerateOptions)
  // The prompt's tokens' logprobs (GenerateOptions::on_prompt_token; top_logprobs
  // alternatives), given to the first choice's on_prompt_token; the prompt is
  // then forwarded in full (no prefix-cache hit).
  bool prompt_logprobs = false;
  GrammarConstraint grammar;              // structured output (GenerateOptions); empty = none
  // Isolates this request's prefix-cache entries (vLLM's cache_salt): it only
  // shares KV with requests of the same salt. Empty: no salt.
  std::string cache_salt;
  // false: this request decodes plainly even when the scheduler speculates
  // (SchedulerOptions::spec).
  bool speculate = true;
};

enum class FinishReason { kStop, kLength, kCancelled, kRefused, kFailed };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "refused", "failed"

struct RequestReport {
  uint64_t id = 0;
  int choice = 0;                  // which of the request's choices (0 .. n-1)
  FinishReason reason = FinishReason::kStop;
  std::string message;             // refused / failed: one line saying why
  std::string stop_string;         // kStop by a stop string: which one
  int32_t stop_token = -1;         // kStop by a stop id: the id
  int64_t prompt_tokens = 0;       // tokens of the prompt
  int64_t cached_tokens = 0;       // prompt tokens taken from the prefix cache (not forwarded)
                                   // (the choices of a group share the prompt: each reports the same
                                   // prompt_tokens and cached_tokens, to be counted once)
  int64_t generated_tokens = 0;    // tokens sampled by this choice (a stop id included)
  std::vector<int32_t> tokens;     // the sampled ids
  double queue_s = 0;              // submit -> admitted
  double prefill_s = 0;            // admitted -> prompt fully in the cache (wall, shared steps)
  double ttft_s = 0;               // submit -> first token sampled
  double decode_s = 0;             // first token -> finish (wall, shared steps)
  double total_s = 0;              // submit -> finish
};

// One choice's callbacks.
struct RequestCallbacks {
  std::function<void(std::string_view text)> on_text;     // optional: streamed text
  std::function<void(const TokenEvent& ev)> on_token;     // optional: each sampled token
  std::function<void(const TokenEvent& ev)> on_prompt_token;  // optional: prompt_logprobs, in order
  std::function<void(const RequestReport& r)> on_finish;  // exactly once per choice
};

// Speculative decoding inside continuous batching (docs/speculative.md): each
// decoding session proposes up to draft_max tokens by prompt lookup over its
// own prompt and reply, and the step's one forward carries its verify rows
// (the pending token plus the draft) beside other sessions' decode rows and
// prefill chunks. Greedy output is token for token that of plain decoding;
// sampled output has the target's distribution (the rejection rule). A
// session whose drafts keep failing decodes plainly for a while
// (runtime/spec/throttle.h).
struct SchedulerSpec {
  bool ngram = false;     // prompt lookup on; false: no speculation
  int ngram_max = 3;      // the longest n-gram matched (1-16)
  int ngram_min = 1;      // the shortest (1 .. ngram_max)
  int64_t draft_max = 4;  // most draft tokens per verify step (1-256; also the prefill chunk - 1)
  int64_t draft_min = 0;  // a shorter draft is not verified (0 .. draft_max)
  // A draft model instead of prompt lookup (ngram false): its engine, its
  // tokenizer (the target's vocabulary, checked by the caller) and a batched
  // cache of its own holding max_decode_sequences sequences of
  // max_session_tokens (the caller's; sequence i is session slot i's). Each
  // session drafts greedily on its own sequence, stopping below draft_p_min.
  // All three outlive the scheduler. Draft forwards are per session, not
  // batched across sessions.
  Engine* draft_engine = nullptr;
  KvCache* draft_cache = nullptr;
  const Tokenizer* draft_tok = nullptr;
  double draft_p_min = 0.75;
  bool on() const { return ngram || draft_engine != nullptr; }
};

struct SchedulerOptions {
  // Defaults: engine_defaults (runtime/generation_limits.h), as og_engine_options'.
  int64_t max_session_tokens = engine_defaults::kMaxSessionTokens;  // prompt + max_new_tokens of one request must fit
  int max_decode_sequences = engine_defaults::kMaxSequences;        // sessions running at once
  int64_t step_tokens = engine_defaults::kStepTokens;               // rows per step (decode rows + prefill chunks)
  // Sessions whose prompt rows one step may carry (admission order); 0 = as
  // many as step_tokens holds. 1 serves waiting prompts one per step: the
  // first of a burst gets its first token after a short step instead of one
  // that carries every prompt, and clients that arrive together stop arriving
  // together (a closed loop of them would otherwise stay in lockstep, each
  // round's prompts all in one long step). The prompt rows are the same; they
  // land in steps that also carry other sessions' decode rows (their
  // inter-token time grows by what the TTFT saves), and a burst of k prompts
  // needs k steps (the last one's TTFT grows by k - 1 steps' fixed cost).
  int max_prefills_per_step = 0;
  // Requests that may wait beyond the free sessions: submit refuses when the
  // choices not finished (running + waiting, a burst not yet admitted
  // included; a request of n choices counts n) reach max_decode_sequences +
  // max_queue. 0 = unbounded.
  int max_queue = 0;
  int prefix_cache_entries = 0;       // 0 disables the prefix cache
  int64_t prefix_cache_bytes = 0;     // 0 = no byte bound beyond the cache's own
  int prefix_block_size = 16;         // tokens per hashed prefix-cache block (vLLM's --block-size)
  std::string prefix_hash_seed = "0"; // root of the block hash chain (vLLM's PYTHONHASHSEED)
  // Receives the prefix cache's KV events after each step that has some
  // (stepping thread; must not block). Empty: none are collected.
  KvEventSink kv_events;
  // The prefix cache's disk tier (docs/cache.md); dir "" = none. The model
  // fingerprint is filled in from the engine.
  PrefixDiskOptions prefix_disk;
  SchedulerSpec spec;
  // The model's hidden size: a request's image rows must be this wide, else
  // it is refused at submit (a wrong width would fail the whole step). 0: not
  // checked here (the forward still refuses it).
  int64_t image_width = 0;
};

// A consistent snapshot for metrics (thread-safe).
// waiting and running count choices (a request of n choices counts n: one
// session each once admitted); finished .. failed count requests, once each,
// when their last choice ends (by the first of their choices' reasons that is
// not a normal finish).
struct SchedulerSnapshot {
  int waiting = 0;                 // submitted, not admitted
  int running = 0;                 // admitted, not finished
  double kv_cache_usage = 0;       // 0..1: the block pool's blocks running requests hold (KvCache::block_usage)
  int64_t steps = 0, steps_decode_only = 0, steps_mixed = 0, steps_prefill_only = 0;
  int64_t rows = 0;                // rows forwarded over all steps
  int64_t decode_rows = 0;         // of which decode rows (one sampled token each)
  int64_t rows_decode_only = 0;    // rows of decode-only steps
  int64_t tokens_decode_only = 0;  // tokens sampled in decode-only steps (= their rows without speculation)
  double step_s_decode_only = 0, step_s_mixed = 0, step_s_prefill_only = 0;  // wall time in steps by kind
  int64_t prompt_tokens = 0, generated_tokens = 0;
  int64_t prefix_lookups = 0, prefix_hits = 0, prefix_hit_tokens = 0, prefix_evictions = 0;
  int64_t prefix_query_tokens = 0;  // prompt tokens of the lookups
  // The disk tier: lookups that read blocks from it and the positions read
  // (also in prefix_hits / prefix_hit_tokens), blocks written, bytes in its directory.
  int64_t prefix_disk_hits = 0, prefix_disk_hit_tokens = 0, prefix_disk_writes = 0, prefix_disk_bytes = 0;
  // The cache's configuration (vLLM's cache_config_info): positions per
  // block (batched-cell; 0 for a kind without blocks), the blocks of
  // max_sequences full sequences, the storage dtype.
  int64_t block_size = 0, num_blocks = 0;
  std::string cache_dtype;
  bool prefix_caching = false;  // prefix_cache_entries > 0
  int prefix_entries = 0;
  int64_t prefix_bytes = 0;
  int peak_running = 0;
  int64_t cache_bytes_allocated = 0, peak_cache_bytes = 0;
  uint64_t finished = 0, cancelled = 0, refused = 0, failed = 0;
  // Speculation (vLLM's spec_decode counters): verify steps, the draft tokens
  // they carried, those accepted, and accepted_per_pos[i] the verify steps
  // that accepted draft position i (so its sum is accepted_tokens); pauses:
  // times a session's fallback rule stopped its proposing.
  int64_t spec_drafts = 0, spec_draft_tokens = 0, spec_accepted_tokens = 0, spec_pauses = 0;
  std::vector<int64_t> spec_accepted_per_pos;
};

class Scheduler {
 public:
  // `engine` and `tok` must outlive the scheduler. `cache` is a batched kind
  // (batched-sequence or batched-cell) whose policy's max_capacity is at least
  // options.max_session_tokens; the scheduler owns it.
  Scheduler(Engine& engine, const Tokenizer& tok, std::unique_ptr<KvCache> cache, const SchedulerOptions& opts);
  ~Scheduler();  // stops the thread; every unfinished request finishes as cancelled
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Thread-safe. Returns the request's id (> 0). A request that can never run
  // (empty prompt, too long, queue full) gets on_finish(kRefused) before or
  // during the next step, never an exception.
  uint64_t submit(RequestOptions req, RequestCallbacks cb);
  // A request of choices.size() choices forked from one prefill (see the
  // file comment); choice i has choices[i]'s callbacks and samples with seed
  // req.sampler.seed + i. Refused (every choice's on_finish) when it has no
  // choice or more than max_decode_sequences, and as submit() refuses.
  uint64_t submit_group(RequestOptions req, std::vector<RequestCallbacks> choices);
  // Thread-safe; unknown or finished ids are ignored. Ends every choice.
  void cancel(uint64_t id);

  // Runs one step on the calling thread (admission, one forward, sampling,
  // callbacks). Returns false when there was nothing to do.
  bool step();
  // Steps until no request is waiting or running.
  void run_until_idle();

  // A background thread that steps while there is work and sleeps otherwise.
  void start();
  // Stops accepting work (later submits are refused), lets running requests
  // finish for up to grace_s seconds, cancels what is left, joins the thread.
  void shutdown(double grace_s);

  SchedulerSnapshot snapshot() const;
  const KvCache& cache() const;
  std::string describe() const;  // the cache's describe() lines

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace og
