// Where a parsed request meets the model and the scheduler: the model id and
// the prompt are checked against the served model (token ids in range, prompt
// + max_tokens within the session limit) and turned into RequestOptions; a
// RequestStream then carries the scheduler's callbacks (on its thread) to the
// HTTP thread that answers the client (whole or as SSE chunks). The callbacks
// only append under a mutex and notify: they never block the scheduler.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/scheduler.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/backend.h"
#include "server/metrics.h"

namespace og::server {

// A model field naming another model: ApiError 404 (code model_not_found).
void check_model(const std::string& requested, const ServedModel& m);

// The request as the served Jinja template reads it: under gpt-oss's
// (harmony replies) a tool without a description, or a null one, gets ""
// (OpenAI's is optional; that template adds it to text unguarded and would
// refuse the request), as the built-in harmony render gives it.
nlohmann::ordered_json jinja_request(const ServedModel& m, const nlohmann::ordered_json& template_request);

// A chat request's prompt segments. A format that renders whole requests
// (ChatFormat::renders_requests: the model's Jinja template, its tool_use
// variant when tools are given and it has one, or the built-in harmony,
// chat/harmony_chat.h) renders it with tools, tool calls and kwargs; what a
// built-in refuses (a ChatRequestError, such as builtin_tools) is an ApiError
// 400 naming the field. Else the built-in renders the messages (ApiError 400
// naming `needs_jinja` when the request holds what a built-in cannot render).
ChatSegments chat_segments(const ServedModel& m, const nlohmann::ordered_json& template_request,
                           const std::vector<ChatMessage>& messages, const std::string& needs_jinja, bool has_tools,
                           bool add_generation_prompt);
// A parsed chat request's prompt (its forms, its tools deciding the tool_use
// variant, its add_generation_prompt): the one render of /v1/chat/completions,
// /tokenize's messages and /apply-template's built-in path.
ChatSegments chat_segments(const ServedModel& m, const ChatRequest& chat, const ChatRenderForms& forms);
// A whole request as one text, as `offgraph template` prints it (a Jinja
// template's BOS text kept), by a format that renders requests
// (request_format's: the tool_use variant when has_tools); its refusals are
// the same 400s as chat_segments'.
std::string request_text(const ServedModel& m, const nlohmann::ordered_json& request, bool has_tools);

// The prompt's token ids: chat messages through the template (contents never
// parsed for control tokens), completion text encoded with the vocabulary's
// BOS, or the given ids (each checked against the vocabulary); with a suffix,
// the fill-in-the-middle prompt [BOS] <pre> prefix <suf> suffix <mid> (ApiError
// 400 when the vocabulary has no FIM tokens). ApiError 400 on a template that
// refuses the messages, an id out of range or an empty prompt.
// rendered (chat only, may be null): the rendered prompt text. index: which
// of a completion request's prompts.
// images: a chat request's images (docs/serving.md "Images"), each encoded
// through m.vision (one encode at a time in the process) and placed where
// the template put its marker, the ids there the placeholder; null: a
// request with images is a 400. A model without a tower, an image that does
// not decode, or a template that places another number of images: 400
// naming the field.
std::vector<int32_t> encode_prompt(const GenerationRequest& req, const ServedModel& m, std::string* rendered = nullptr,
                                   size_t index = 0, std::vector<RequestImage>* images = nullptr);

// How a chat reply is split into reasoning, content and tool calls (the
// rendered prompt tells whether the reply starts inside a reasoning block).
// Completions: nothing is parsed.
ReplyParserOptions reply_options(const GenerationRequest& req, const ServedModel& m, const std::string& rendered);
// Whether the reply's text must keep control tokens for the parser to see its markers.
bool reply_needs_special_text(const ReplyParserOptions& o);

// Structured output: the request's grammar (response_format, json_schema,
// grammar) or, for tool_choice required / a named function, the grammar of a
// call in the model's format; ApiError 400 when both are given or the call
// cannot be enforced. On chat, either comes after the reasoning the reply may
// hold (chat/reasoning_grammar.h), whose tokens are bounded by
// max_reasoning_tokens (default og::kChatDefaultMaxReasoningTokens) before its
// close marker is forced. Sets o.grammar (and keeps the stop ids, which end a
// complete reply, even with ignore_eos). The planning is the library's
// (chat/chat_request.h plan_constraint); this applies it to the served model.
void set_grammar(const GenerationRequest& req, const ServedModel& m, const ReplyParserOptions& reply,
                 RequestOptions& o);

// The scheduler request. ApiError 400 when the prompt cannot fit the session
// limit with at least one generated token, or prompt + max_tokens exceeds it,
// or n exceeds --max-n or the sequences decoded at once. (The choices are
// submitted with submit_group: choice i samples with seed sampler.seed + i.)
RequestOptions build_request_options(const GenerationRequest& req, const ServedModel& m, std::vector<int32_t> prompt);

// "stop" / "length" for the client; other reasons are not a finished reply.
std::string openai_finish_reason(FinishReason r);

// A piece of streamed text and the tokens that made it (when logprobs were asked).
struct Piece {
  std::string text;
  std::vector<TokenLogprobs> logprobs;
};

// What arrived for one choice since the last take().
struct StreamUpdate {
  int choice = 0;
  std::vector<Piece> pieces;
  std::optional<RequestReport> finished;  // set once, with the last update
  std::vector<TokenLogprobs> trailing;     // finished: logprobs of tokens that made no text
};

// The state one HTTP request shares with its scheduler callbacks: its n
// choices' text, logprobs and reports. The request's metrics are recorded
// once, when its last choice finishes.
class RequestStream {
 public:
  // metrics may be null. endpoint labels the request counter. n >= 1 choices.
  RequestStream(const ServedModel& m, ServerMetrics* metrics, Endpoint endpoint, bool logprobs, int n = 1);

  // The callbacks to submit with, choice i's at [i]; they keep `self` alive
  // until their on_finish.
  static std::vector<RequestCallbacks> callbacks(const std::shared_ptr<RequestStream>& self);
  // Choices per prompt (a completion request's prompt list: choice c answers
  // prompt c / per_prompt); usage and metrics count each prompt once.
  void set_per_prompt(int per_prompt) { per_prompt_ = std::max(1, per_prompt); }
  // Choice c's prompt-token logprobs so far (RequestOptions::prompt_logprobs;
  // the lead choice of a prompt receives them, before any token of its prompt's choices).
  std::vector<TokenLogprobs> prompt_logprobs(int c) const;

  int choices() const { return static_cast<int>(choices_.size()); }
  // Waits up to `wait` for something new (or a finish) and takes it: one
  // update per choice that has news, in choice order.
  std::vector<StreamUpdate> take(std::chrono::milliseconds wait);
  bool finished() const;  // every choice

 private:
  struct Choice {
    std::vector<Piece> pieces;
    std::vector<TokenLogprobs> prompt_lp;  // prompt tokens after the first
    std::vector<TokenLogprobs> pending_lp;  // tokens whose text has not arrived yet
    std::optional<RequestReport> report;
    bool report_taken = false;
    std::chrono::steady_clock::time_point last_token;
    bool any_token = false;
  };
  void on_text(int c, std::string_view text);
  void on_token(int c, const TokenEvent& ev);
  void on_prompt_token(int c, const TokenEvent& ev);
  void on_finish(int c, const RequestReport& r);
  void record_metrics(const std::vector<RequestReport>& reports) const;
  TokenLogprobs to_logprobs(const TokenEvent& ev) const;
  bool news() const;  // under mu_

  const ServedModel& model_;
  ServerMetrics* metrics_;
  const Endpoint endpoint_;
  const bool logprobs_;
  int per_prompt_ = 0;  // 0: all choices answer one prompt

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Choice> choices_;
  int unfinished_ = 0;
};

// The whole result of a finished request (non-streamed answer); a chat reply
// is split by `parse` (reasoning, content, tool calls; finish_reason
// "tool_calls" when it called any).
CompletionResult collect_result(const std::vector<Piece>& pieces, const StreamUpdate& last, bool logprobs,
                                const ReplyParserOptions* parse = nullptr);

// Usage of a finished request: of one choice, or of all of a request's
// choices (the prompt and its cached tokens once, the completions summed).
Usage usage_of(const RequestReport& r);
Usage usage_of(const std::vector<RequestReport>& choices);
// ... of a prompt list's choices, per_prompt per prompt (each prompt once).
Usage usage_of(const std::vector<RequestReport>& choices, int per_prompt);

}  // namespace og::server
