// OpenAI's response shapes, built from native results: chat completions and
// text completions (whole and as stream chunks), usage, logprobs, errors,
// the model list, tokenize/detokenize, and Server-Sent Events framing.
// Every string that reaches JSON here may hold invalid UTF-8 (a byte-level
// token alone, a prompt echoed in an error): it is written with U+FFFD in
// place of the bad bytes, never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/reply_parser.h"
#include "server/api_error.h"
#include "server/api_request.h"

namespace og::server {

// What every response or chunk of one request repeats.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;       // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;    // the served model id
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};

struct TokenAlternative {
  std::string token;  // the token's bytes
  double logprob = 0;
};

// One sampled token with its log-probability and the most likely alternatives.
struct TokenLogprobs {
  std::string token;
  double logprob = 0;
  std::vector<TokenAlternative> top;
  bool known = true;  // false: an echoed prompt's first token (logprob and top null)
};

// A whole (non-streamed) result.
struct CompletionResult {
  std::string text;       // chat: the message's content
  std::string reasoning;  // chat: reasoning_content ("" = none)
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;  // "stop" or "length"
  Usage usage;
  bool with_logprobs = false;
  std::vector<TokenLogprobs> logprobs;
};

// Serialises with invalid UTF-8 replaced by U+FFFD (never throws on text).
std::string dump_json(const nlohmann::json& j);

// A fresh id with the endpoint's prefix and 24 random hex digits.
std::string new_response_id(Endpoint ep);

nlohmann::json usage_json(const Usage& u);
// choices[0].logprobs for the endpoint (chat: {"content": [...]}, completions:
// {"tokens", "token_logprobs", "top_logprobs", "text_offset"}); text_offset
// counts bytes from `offset0`.
nlohmann::json logprobs_json(Endpoint ep, const std::vector<TokenLogprobs>& lp, int64_t offset0 = 0);

std::string completion_body(const ResponseMeta& m, const CompletionResult& r);
// A reply of several choices (OpenAI's n): choices[i] is choice i (its usage
// is not read); `usage` covers the request (the prompt counted once).
std::string completion_body(const ResponseMeta& m, const std::vector<CompletionResult>& choices, const Usage& usage);

// Stream chunks (the JSON of one SSE event). The chat stream opens with a
// role chunk; text chunks carry a piece of text (and the logprobs of the
// tokens that made it when asked); the final chunk carries finish_reason;
// with include_usage each chunk has "usage": null and a last chunk with empty
// choices carries the usage. Each chunk carries one choice, `index` (a reply
// of n choices interleaves their chunks: a role chunk and a finish chunk for
// each, one usage chunk for the request).
std::string chunk_role(const ResponseMeta& m, bool include_usage, int index = 0);
std::string chunk_text(const ResponseMeta& m, std::string_view text, const std::vector<TokenLogprobs>* lp,
                       bool include_usage, int64_t text_offset = 0, int index = 0);
// A chat stream's reasoning piece (delta.reasoning_content) and a tool call's
// piece (delta.tool_calls: [{index, id, type, function: {name, arguments}}],
// id/type/name only in a call's first piece). lp: logprobs of the tokens that
// made them (may be null).
std::string chunk_reasoning(const ResponseMeta& m, std::string_view text, const std::vector<TokenLogprobs>* lp,
                            bool include_usage, int index = 0);
std::string chunk_tool_call(const ResponseMeta& m, const ToolCallDelta& d, const std::vector<TokenLogprobs>* lp,
                            bool include_usage, int index = 0);
std::string chunk_finish(const ResponseMeta& m, const std::string& finish_reason, bool include_usage, int index = 0);
std::string chunk_usage(const ResponseMeta& m, const Usage& u);

// {"error": {"message", "type", "param", "code"}}.
std::string error_body(const ApiError& e);
std::string error_body(int status, const std::string& message);  // type and code from the status

std::string models_body(const std::string& id, int64_t created, int64_t max_model_len);
// GET /v1/models/{id}: the one model object of that list.
std::string model_body(const std::string& id, int64_t created, int64_t max_model_len);

// Server-Sent Events: one event whose data is `payload` (split into one
// "data:" line per line of it), ended by a blank line.
std::string sse_event(std::string_view payload);
// The event that ends an OpenAI stream: "data: [DONE]\n\n".
std::string sse_done();

}  // namespace og::server
