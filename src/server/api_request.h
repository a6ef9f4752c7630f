// The native form of the OpenAI requests the server accepts, and the strict
// parsers that build them from a request body. Parsing checks the type and
// range of every field it knows, refuses settings the engine cannot honour
// (best_of > 1, a JSON response_format, images) with ApiError (400)
// naming the field, and accepts fields it does not know, listing them in
// `ignored` for the log (as vLLM does: clients send many extras). Nothing
// here knows the model: the token-level checks (prompt length, token ids in
// range, the model id) are made where the request meets the model
// (generation.h).
//
// A chat request is parsed into an og::ChatRequest (chat/chat_request.h),
// whose forms (render_forms: plain ChatMessages for the built-in templates,
// and the request in the shape Jinja chat templates read, key order kept)
// the parser builds once. Tokenize and apply-template requests keep the
// forms only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_request.h"
#include "chat/chat_template.h"
#include "chat/tool_grammar.h"  // ToolChoice
#include "grammar/grammar.h"

namespace og::server {

enum class Endpoint { kChat, kCompletion };

// Generation settings a request may choose; unset ones take the server's defaults.
struct GenerationParams {
  std::optional<int64_t> max_tokens;  // max_tokens / max_completion_tokens, >= 1 (0: echo only)
  bool max_zero = false;              // max_tokens is 0 (completions with echo)
  std::optional<double> temperature;  // [0, 2]
  std::optional<double> top_p;        // (0, 1]
  std::optional<int64_t> top_k;       // >= 0 (-1 = off, as vLLM, is read as 0)
  std::optional<double> min_p;        // [0, 1]
  std::optional<double> repetition_penalty;  // (0, 100]
  std::optional<double> presence_penalty;    // [-2, 2], over the generated tokens
  std::optional<double> frequency_penalty;   // [-2, 2], over the generated tokens
  std::optional<uint64_t> seed;
  int64_t n = 1;  // choices, >= 1 (at most the server's --max-n: checked against the model)
  // logit_bias: token id -> bias in [-100, 100] (ids checked against the
  // vocabulary where the request meets the model).
  std::vector<std::pair<int64_t, double>> logit_bias;
  std::vector<std::string> stop;  // each non-empty
  // Structured output: the grammar every reply must match (null = none),
  // from response_format (json_object, json_schema), llama-server's
  // json_schema or grammar (GBNF text) — `grammar_from` names which.
  std::shared_ptr<const grammar::Grammar> grammar;
  std::string grammar_from;
  std::string grammar_text;  // its text, for a chat format to put reasoning before it
  // max_reasoning_tokens (>= 0): tokens a constrained reply may reason before
  // its close marker is forced (unset: the server's default, generation.h).
  std::optional<int64_t> max_reasoning_tokens;
  // vLLM's cache_salt: the request shares prefix-cache KV only with requests
  // of the same salt (a non-empty string, at most 1024 bytes).
  std::string cache_salt;
  bool ignore_eos = false;  // vLLM / llama-server extension: only max_tokens and stop strings end the reply
  bool logprobs = false;
  int top_logprobs = 0;  // alternatives per token, with logprobs
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// One completion prompt: text, or token ids when is_ids.
struct CompletionPrompt {
  std::string text;
  std::vector<int64_t> ids;
  bool is_ids = false;
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                  // "" = not given (the served model)
  // kChat: the typed chat request (messages, tools, tool_choice — always set
  // —, parallel_tool_calls, template variables), the one the library fills
  // too (chat/chat_request.h); its structured output and reasoning budget are
  // in `params`.
  ChatRequest chat;
  // kChat: render_forms(chat), built once by the parser: the built-ins'
  // messages, the Jinja form {"messages", "tools"?, "chat_template_kwargs"?}
  // (reasoning_effort, when given, is one of the kwargs) and needs_jinja, the
  // first field only a Jinja template (or the built-in harmony's
  // whole-request render) can render, for the error the other built-ins give.
  ChatRenderForms forms;
  // kCompletion: the prompts (one, or a list: each gets n choices, choice
  // index = prompt index * n + i).
  std::vector<CompletionPrompt> prompts;
  // kCompletion: fill-in-the-middle — the text after the insertion point (the
  // prompt is the text before it); has_suffix even when it is empty.
  std::string suffix;
  bool has_suffix = false;
  // kCompletion: each choice's text starts with its prompt (and, with
  // logprobs, its logprobs start with the prompt tokens').
  bool echo = false;
  GenerationParams params;
  std::vector<std::string> ignored;  // fields accepted but not known ("messages[0].refusal", ...)
};

// POST /tokenize: text (with add_special) or chat messages (template applied).
// Messages are parsed as /v1/chat/completions parses them, into the same
// og::ChatRequest and forms, and rendered through the same chat_segments, so
// a message array means the same on every route.
struct TokenizeRequest {
  std::string model;
  std::string prompt;
  bool use_messages = false;
  bool add_special = true;  // text: BOS/EOS as the vocabulary says
  ChatRequest chat;         // messages: add_generation_prompt (default true) ends with the assistant header
  ChatRenderForms forms;    // render_forms(chat); its Jinja form holds "add_generation_prompt"
  std::vector<std::string> ignored;
};

// POST /apply-template (llama-server's route): a chat request rendered by
// the served model's template, returned as text; parsed and rendered as
// TokenizeRequest's messages (and `offgraph template`'s request file).
struct ApplyTemplateRequest {
  std::string model;
  ChatRequest chat;
  ChatRenderForms forms;  // its Jinja form holds "add_generation_prompt"
  std::vector<std::string> ignored;
};

// POST /detokenize.
struct DetokenizeRequest {
  std::string model;
  std::vector<int64_t> tokens;
};

// Limits the parsers enforce (not model dependent).
constexpr int kMaxJsonDepth = 64;
// (stop strings, top_logprobs and completions' logprobs are bounded in
// runtime/generation_limits.h, the one home of the generation bounds)

constexpr size_t kMaxTools = 512;
constexpr size_t kMaxPrompts = 128;  // completions: prompts in one request

// Parses a request body as one JSON object (key order kept). Malformed JSON
// (invalid UTF-8 and lone surrogates included), nesting deeper than
// kMaxJsonDepth, or a body that is not an object: ApiError 400.
nlohmann::ordered_json parse_json_object(std::string_view body);

GenerationRequest parse_chat_request(const nlohmann::ordered_json& body);
GenerationRequest parse_completion_request(const nlohmann::ordered_json& body);
TokenizeRequest parse_tokenize_request(const nlohmann::ordered_json& body);
DetokenizeRequest parse_detokenize_request(const nlohmann::ordered_json& body);
ApplyTemplateRequest parse_apply_template_request(const nlohmann::ordered_json& body);

}  // namespace og::server
