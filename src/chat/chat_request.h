// ChatRequest: one typed chat request (messages with tool calls, tool results
// and reasoning; tools; tool_choice; parallel_tool_calls; structured output;
// the reasoning budget; template variables), filled by a front end (the C
// API, Python through it) and checked here once, every mistake a
// ChatRequestError naming the field as OpenAI's `param` would
// ("messages[2].role", "tool_choice", "response_format.json_schema.schema").
//
// The chat formats render two forms of a request (chat/chat_template.h):
// role/content messages for the built-ins, and the request in the shape a
// Jinja template reads (`template_request`). render_forms() builds both, the
// same as the server's parser builds them from an HTTP body, so the formats
// are reused as they are. plan_chat() then does what the server does for
// /v1/chat/completions (server/generation.cpp): renders through the request's
// format, reads the reply parser's options from the rendered prompt, and
// builds the grammar of a required tool call or of the structured output
// after the reasoning the reply may hold (chat/reasoning_grammar.h), with the
// reasoning budget. Sampler settings are not here: they stay in their own
// structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat/reasoning_grammar.h"
#include "chat/reply_parser.h"
#include "chat/tool_grammar.h"

namespace og {

// One message. role: system, developer (OpenAI's newer name for system),
// user, assistant or tool. content: required but for an assistant turn of
// tool calls only. tool_calls (assistant only): each with its id, name and
// arguments as JSON text ("" = {}). tool_call_id: a tool result's call.
struct ChatRequestMessage {
  std::string role;
  std::optional<std::string> content;
  std::optional<std::string> reasoning_content;  // assistant: the reasoning that came before
  std::optional<std::string> name;
  std::vector<ToolCall> tool_calls;
  std::optional<std::string> tool_call_id;
};

// A function tool: parameters is its JSON schema as text ("" = none: it takes no arguments).
struct ChatTool {
  std::string name;  // 1-64 of [A-Za-z0-9_-.:], unique in the request
  std::optional<std::string> description;
  std::string parameters;
  bool strict = false;
};

// Structured output: at most one of a JSON object, a JSON schema or a GBNF grammar.
struct ResponseFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema, kGrammar };
  Kind kind = Kind::kText;
  std::string schema;  // kJsonSchema: the schema as JSON text
  bool strict = false;  // kJsonSchema: OpenAI's strict (additionalProperties defaults to false)
  std::string grammar;  // kGrammar: GBNF text
};

// The documented default budget of a constrained reply's reasoning (the
// server's kDefaultMaxReasoningTokens: the same number).
inline constexpr int64_t kChatDefaultMaxReasoningTokens = 1024;
// At most this many tools (the server's kMaxTools).
inline constexpr size_t kChatMaxTools = 512;

struct ChatRequest {
  std::vector<ChatRequestMessage> messages;  // not empty
  std::vector<ChatTool> tools;
  std::optional<ToolChoice> tool_choice;  // unset: auto with tools, none without
  bool parallel_tool_calls = true;
  ResponseFormat response_format;
  std::optional<int64_t> max_reasoning_tokens;  // >= 0; unset: kChatDefaultMaxReasoningTokens
  std::string chat_template_kwargs;             // a JSON object's text ("" = none): template variables
  std::optional<std::string> reasoning_effort;  // none, minimal, low, medium or high (a template variable)
  bool add_generation_prompt = true;
};

// The forms the chat formats render (see above): the built-ins' messages,
// the Jinja shape (messages, tools, chat_template_kwargs, key order fixed),
// and the first field only a request-rendering format can render ("" = none).
struct ChatRenderForms {
  std::vector<ChatMessage> messages;
  nlohmann::ordered_json template_request;
  std::string needs_jinja;
};

// Checks the request and builds its forms; a ChatRequestError naming the
// field of the first mistake.
ChatRenderForms render_forms(const ChatRequest& r);

// tool_choice as it applies (unset: auto with tools, none without).
ToolChoice tool_choice_of(const ChatRequest& r);

// The structured output's grammar text ("" for text) and the field it came
// from ("response_format" or "grammar"); a ChatRequestError naming the field
// when the schema is not JSON, is past what json_schema.h supports, or the
// grammar does not compile.
struct StructuredOutput {
  std::string text;
  std::string from;
};
StructuredOutput structured_output_of(const ChatRequest& r);

// What renders a model's chat: its format, the tool_use variant for requests
// with tools (null: none), what its replies hold, and whether reasoning is
// parsed out of them.
struct ChatSetup {
  const ChatFormat* format = nullptr;
  const ChatFormat* tool_use = nullptr;
  ReplyFormat reply_format;
  bool parse_reasoning = true;
};

// The reasoning block a constrained reply may hold before its constrained
// part (runtime/constraint.h ReasoningLimit's fields).
struct ChatReasoningLimit {
  bool active = false;
  std::string open, close;
  bool starts_open = false;
  int64_t max_tokens = -1;
};

// A chat generation as the server runs it.
struct ChatPlan {
  ChatSegments segments;  // the prompt (encode with encode_chat(tok, segments, true))
  std::string rendered;   // its text
  ReplyParserOptions reply;
  bool special_text = false;  // the reply's text keeps control tokens (its markers are some)
  // The grammar every token stays in ("" = none): a required tool call's, a
  // strict tool's, or the structured output after the reasoning.
  std::string grammar_text;
  std::string grammar_from;  // the field it came from, for an error naming it
  // The control-token texts the grammar writes (`markers`) and the tool-call
  // format's (`tool_markers`, chat/tool_grammar.h). The vocabulary admits, as
  // the server's does: tool_markers when markers are among them and the
  // tokenizer has any as control tokens; else markers when it has any of
  // those; else none (runtime/constraint.h grammar_vocab).
  std::vector<std::string> markers, tool_markers;
  ChatReasoningLimit reasoning;
};

// Renders and plans `r` on a model's chat setup; ChatRequestError naming the
// field for what the request cannot have (a built-in that cannot render it,
// a constraint the format cannot enforce, two constraints at once).
ChatPlan plan_chat(const ChatRequest& r, const ChatSetup& setup);

// OpenAI's finish_reason of a chat reply: "length" when a token budget or the
// cache ran out, "tool_calls" when it stopped with calls, else "stop".
const char* chat_finish_reason(bool length, bool has_tool_calls);

}  // namespace og
