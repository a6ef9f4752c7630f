// What the HTTP layer needs from the engine, and nothing more: the
// scheduler's submit / cancel / snapshot (SchedulerPort), and the model's text
// side (tokenizer, chat template, stop ids, limits and defaults: ServedModel).
// The port is an interface so that the routes are tested against a scripted
// scheduler; SchedulerAdapter forwards it to og::Scheduler.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat/reply_parser.h"
#include "server/model_facts.h"
#include "runtime/constraint.h"
#include "runtime/embedder.h"
#include "runtime/sampler.h"
#include "runtime/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace og {
struct VisionModel;  // runtime/vision_model.h
}  // namespace og

namespace og::server {

// The scheduler's contract as the server uses it (see runtime/scheduler.h):
// submit/cancel thread-safe, exactly one on_finish per choice, callbacks on
// the scheduler's thread and never blocking. submit_group: a request of
// choices.size() choices (OpenAI's n) decoded from one prefill, choice i with
// choices[i]'s callbacks (its reports carry choice = i) and sampler seed
// req.sampler.seed + i; cancel(id) ends every choice.
class SchedulerPort {
 public:
  virtual ~SchedulerPort() = default;
  virtual uint64_t submit(RequestOptions req, RequestCallbacks cb) = 0;
  virtual uint64_t submit_group(RequestOptions req, std::vector<RequestCallbacks> choices) = 0;
  virtual void cancel(uint64_t id) = 0;
  virtual SchedulerSnapshot snapshot() const = 0;
};

// Forwards to a scheduler that outlives the adapter (og::Scheduler or any
// type with the same three calls).
template <class S>
class SchedulerAdapter : public SchedulerPort {
 public:
  explicit SchedulerAdapter(S& s) : s_(s) {}
  uint64_t submit(RequestOptions req, RequestCallbacks cb) override { return s_.submit(std::move(req), std::move(cb)); }
  uint64_t submit_group(RequestOptions req, std::vector<RequestCallbacks> choices) override {
    return s_.submit_group(std::move(req), std::move(choices));
  }
  void cancel(uint64_t id) override { s_.cancel(id); }
  SchedulerSnapshot snapshot() const override { return s_.snapshot(); }

 private:
  S& s_;
};

// The served model's text side and the server-wide generation settings.
// The pointers must outlive the server.
struct ServedModel {
  std::string id;  // the model id clients name (--alias, else the file's name)
  const Tokenizer* tok = nullptr;
  const ChatFormat* tmpl = nullptr;  // the served chat format (chat/chat_template.h)
  // The model's "tool_use" template variant, rendered instead of tmpl for
  // requests with tools (transformers' rule); null when there is none.
  const ChatFormat* tool_use = nullptr;
  // What replies hold (tool-call and reasoning markers), from the template;
  // parse_reasoning false: --reasoning-format none (reasoning stays content).
  ReplyFormat reply_format;
  bool parse_reasoning = true;
  // The vocabulary index of structured output (runtime/constraint.h), built
  // once; null: built for each request that needs one.
  std::shared_ptr<const grammar::TokenVocab> grammar_vocab;
  // The same with the tool-call format's control-token markers admitted
  // (chat/tool_grammar.h tool_grammar_markers), for grammars of tool calls;
  // null: grammar_vocab serves them (or, when the markers are control tokens,
  // one is built for each request that needs it).
  std::shared_ptr<const grammar::TokenVocab> tool_grammar_vocab;
  std::vector<int32_t> stop_ids;   // ids that end a reply (the model's and the template's)
  int64_t max_session_tokens = 0;  // prompt + generated tokens of one request
  int64_t default_max_tokens = 0;  // chat without max_tokens; 0 = up to the session limit
  int64_t default_completion_max_tokens = 16;  // /v1/completions without max_tokens (OpenAI's default)
  // OpenAI's n: choices per request at most (--max-n), and the sequences the
  // scheduler decodes at once (--parallel; 0 = no bound here), which the
  // choices of one request must fit side by side.
  int64_t max_n = 8;
  int64_t max_sequences = 0;
  SamplerConfig sampler;  // defaults for what a request leaves unset
  bool random_seed = true;  // requests without a seed draw one (else sampler.seed)
  bool use_prefix_cache = true;
  int64_t created = 0;  // unix seconds (the /v1/models "created")
  // /v1/embeddings (server/embeddings.h): null when the model declares no pooling.
  const Embedder* embedder = nullptr;
  // false: the model only embeds (bidirectional attention), so the generation
  // routes answer 400 saying so.
  bool generates = true;
  // The file's facts for Ollama's /api/tags, /api/ps and /api/show.
  ModelFacts facts;
  // The vision tower (--mmproj, or the HF directory's own): chat requests'
  // images go through it (one encode at a time, on the request's worker
  // thread). Null: a request with an image is a 400.
  const VisionModel* vision = nullptr;
};

}  // namespace og::server
