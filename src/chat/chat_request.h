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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "chat/content_part.h"
#include "chat/reasoning_grammar.h"
#include "chat/reply_parser.h"
#include "chat/request_error.h"
#include "chat/tool_grammar.h"
#include "grammar/grammar.h"

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
  // The front end was given a tool_calls list, an empty one too: the
  // template sees the list ([] included) as the client sent it.
  bool tool_calls_listed = false;
  // assistant: gpt-oss's name for the analysis before a call (its template
  // and the built-in harmony read it); unset, an assistant turn of calls only
  // passes its reasoning_content as it.
  std::optional<std::string> thinking = std::nullopt;
  // user: the content as parts, text and images in order (chat/content_part.h);
  // when not empty it is the content, and `content` stays unset. A message
  // with an image part renders only through a Jinja template, which is given
  // the parts as a list.
  std::vector<ChatContentPart> parts = {};
};

// A function tool: parameters is its JSON schema as text ("" = none: it takes no arguments).
struct ChatTool {
  std::string name;  // 1-64 of [A-Za-z0-9_-.:], unique in the request
  std::optional<std::string> description;
  std::string parameters;
  bool strict = false;
  // The tool object as the front end received it (JSON text, "" = none): the
  // template is given it as is, key order and extra fields kept (the server
  // passes a client's tools so), where the fields above are its checked reading.
  std::string as_sent = {};
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
// library's and the server's: docs/serving.md max_reasoning_tokens).
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

// The image parts' bytes in the order of the messages and their parts (the
// order a template writes their markers in).
std::vector<const std::string*> chat_images(const ChatRequest& r);

// tool_choice as it applies (unset: auto with tools, none without).
ToolChoice tool_choice_of(const ChatRequest& r);

// The structured output's grammar text ("" for text) and the field it came
// from ("response_format" or "grammar"); a ChatRequestError naming the field
// when the schema is not JSON, is past what json_schema.h supports, or the
// grammar does not compile.
// `grammar` is `text` compiled (the check compiles it; the plan hands it on,
// so a request's grammar is compiled once).
struct StructuredOutput {
  std::string text;
  std::string from;
  std::shared_ptr<const grammar::Grammar> grammar = nullptr;
};
StructuredOutput structured_output_of(const ChatRequest& r);

// How many grammars the chat planning has compiled in this process (the
// structured output's check, a grammar after the reasoning, a tool grammar):
// tests hold a request to one compile of each grammar it needs.
int64_t chat_grammar_compiles();

// What renders a model's chat: its format, the tool_use variant for requests
// with tools (null: none), what its replies hold, and whether reasoning is
// parsed out of them. `renderer` and `jinja_hint` word the refusal of a
// request only a Jinja template renders for the front end ("'tools' needs a
// Jinja chat template, and <renderer> renders with the built-in 'chatml'
// template (<jinja_hint>)").
struct ChatSetup {
  const ChatFormat* format = nullptr;
  const ChatFormat* tool_use = nullptr;
  ReplyFormat reply_format;
  bool parse_reasoning = true;
  std::string renderer = "this model";
  std::string jinja_hint = "open it with chat_template \"auto\" when it ships one";
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
  // grammar_text compiled (set exactly when grammar_text is): the front end
  // constrains with it and never compiles the text again.
  std::shared_ptr<const grammar::Grammar> grammar = nullptr;
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

// The planning's steps, for a front end that keeps a checked request's forms
// itself (the server's parser builds them from the HTTP body and checks the
// structured output there) and reports each step's refusal where it comes
// in its own order. plan_chat is these steps on render_forms' output.
struct ChatPlanInput {
  const std::vector<ChatMessage>* messages = nullptr;         // the built-ins' form
  const nlohmann::ordered_json* template_request = nullptr;  // the Jinja form (its "tools" are the tools)
  std::string needs_jinja;
  bool has_tools = false;
  ToolChoice choice;  // as it applies (tool_choice_of)
  bool parallel_tool_calls = true;
  StructuredOutput structured;  // checked; text "" = none
  std::optional<int64_t> max_reasoning_tokens;
  bool add_generation_prompt = true;
};

// The request in the shape the Jinja template reads: under harmony replies
// (gpt-oss's template adds a tool's description to text unguarded) a tool
// without a description, or a null one, gets "", as the built-in harmony
// render gives it.
nlohmann::ordered_json template_request_for(const ChatSetup& setup, nlohmann::ordered_json request);

// The prompt's segments: a format that renders whole requests (the Jinja
// template, its tool_use variant with tools, the built-in harmony) renders
// the request; else the built-in renders the messages. ChatRequestError for
// what the format refuses (its message one line, cut after 400 bytes) or a
// request only a Jinja template renders; other og::Errors (a template's
// raise_exception) pass through for the front end to word.
ChatSegments render_chat(const ChatPlanInput& in, const ChatSetup& setup);
// A format's refusal of a whole-request render as render_chat words it.
ChatRequestError render_refusal(const ChatFormat& f, const ChatRequestError& e);

// How the reply is parsed, read from the rendered prompt (does it open or
// close a reasoning block) and the template variables (thinking off).
ReplyParserOptions chat_reply_options(const ChatPlanInput& in, const ChatSetup& setup, const std::string& rendered);

// Whether the reply's text must keep control tokens for the parser to see
// its markers (these families' markers are control tokens).
bool reply_keeps_special_text(const ReplyParserOptions& o);

// The reply's constraint (ChatPlan's fields of the same names): a required
// or named tool call's grammar (with the reasoning budget), strict tools'
// grammar under "auto", or the structured output after the reasoning the
// reply may hold. `grammar` is grammar_text compiled (set exactly when
// grammar_text is): the structured output's own (in.structured.grammar, the
// check's) when nothing comes before it, else compiled here once. A tool
// grammar that does not compile is the planning's fault: an og::Error, not a
// ChatRequestError.
struct ChatConstraint {
  std::string grammar_text, grammar_from;
  std::shared_ptr<const grammar::Grammar> grammar;
  std::vector<std::string> markers, tool_markers;
  ChatReasoningLimit reasoning;
};
ChatConstraint plan_constraint(const ChatPlanInput& in, const ReplyParserOptions& reply);

// OpenAI's finish_reason of a chat reply: "length" when a token budget or the
// cache ran out, "tool_calls" when it stopped with calls, else "stop".
const char* chat_finish_reason(bool length, bool has_tool_calls);

}  // namespace og
