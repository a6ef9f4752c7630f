// The native form of the OpenAI requests the server accepts, and the strict
// parsers that build them from a request body. Parsing checks every field's
// type and range, rejects unknown fields and settings the engine cannot honour
// (n != 1, non-zero presence/frequency penalties, tools), and throws ApiError
// (400) naming the field. Nothing here knows the model: the token-level checks
// (prompt length, token ids in range, the model id) are made where the request
// meets the model (generation.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/chat_template.h"

namespace og::server {

enum class Endpoint { kChat, kCompletion };

// Generation settings a request may choose; unset ones take the server's defaults.
struct GenerationParams {
  std::optional<int64_t> max_tokens;  // max_tokens / max_completion_tokens, >= 1
  std::optional<double> temperature;  // [0, 2]
  std::optional<double> top_p;        // (0, 1]
  std::optional<int64_t> top_k;       // >= 0 (-1 = off, as vLLM, is read as 0)
  std::optional<double> min_p;        // [0, 1]
  std::optional<double> repetition_penalty;  // (0, 100]
  std::optional<double> presence_penalty;    // [-2, 2], over the generated tokens
  std::optional<double> frequency_penalty;   // [-2, 2], over the generated tokens
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;  // each non-empty
  bool ignore_eos = false;  // vLLM / llama-server extension: only max_tokens and stop strings end the reply
  bool logprobs = false;
  int top_logprobs = 0;  // alternatives per token, with logprobs
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                  // "" = not given (the served model)
  std::vector<ChatMessage> messages;  // kChat: not empty
  // kCompletion: the prompt as text, or as token ids when prompt_is_ids.
  std::string prompt_text;
  std::vector<int64_t> prompt_ids;
  bool prompt_is_ids = false;
  GenerationParams params;
};

// POST /tokenize: text (with add_special) or chat messages (template applied).
struct TokenizeRequest {
  std::string model;
  std::string prompt;
  std::vector<ChatMessage> messages;
  bool use_messages = false;
  bool add_special = true;            // text: BOS/EOS as the vocabulary says
  bool add_generation_prompt = true;  // messages: end with the assistant header
};

// POST /detokenize.
struct DetokenizeRequest {
  std::string model;
  std::vector<int64_t> tokens;
};

// Limits the parsers enforce (not model dependent).
constexpr int kMaxJsonDepth = 64;
constexpr size_t kMaxStopStrings = 16;
constexpr int kMaxTopLogprobs = 20;      // chat top_logprobs
constexpr int kMaxCompletionLogprobs = 5;  // completions logprobs

// Parses a request body as one JSON object. Malformed JSON (invalid UTF-8 and
// lone surrogates included), nesting deeper than kMaxJsonDepth, or a body that
// is not an object: ApiError 400.
nlohmann::json parse_json_object(std::string_view body);

GenerationRequest parse_chat_request(const nlohmann::json& body);
GenerationRequest parse_completion_request(const nlohmann::json& body);
TokenizeRequest parse_tokenize_request(const nlohmann::json& body);
DetokenizeRequest parse_detokenize_request(const nlohmann::json& body);

}  // namespace og::server
