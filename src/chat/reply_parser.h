// A model's reply split into what OpenAI clients expect: reasoning
// (`reasoning_content`), the answer (`content`) and tool calls (`tool_calls`),
// both as it streams (ReplyParser::feed) and whole (parse_reply).
//
// Which markers a reply may hold is read from the chat template's source
// (detect_reply_format; the rules are in docs/serving.md "Tool calls and
// reasoning"): Hermes / Qwen 2.5 / Qwen 3 `<tool_call>{json}</tool_call>`
// (or Qwen3-Coder's `<function=NAME><parameter=KEY>` body inside it),
// Llama 3.1-3.3 JSON (`{"name": ..., "parameters": ...}`, with or without
// `<|python_tag|>`), Mistral `[TOOL_CALLS]` (a JSON list, or name[ARGS]{json}),
// Gemma 4 `<|tool_call>call:NAME{...}<tool_call|>`, gpt-oss's harmony
// messages to a function (`<|channel|>commentary to=functions.NAME
// <|constrain|>json<|message|>{...}<|call|>`, after `<|start|>assistant`
// when an analysis message came first); reasoning as
// `<think>...</think>`, Gemma 4's `<|channel>thought\n...<channel|>`,
// Mistral's `[THINK]...[/THINK]` or gpt-oss's harmony analysis channel
// (`<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>`,
// the final channel's text being the content), only at the start of the reply.
//
// Never lost text: whatever is not a well-formed tool call or a reasoning
// block comes back as content, byte for byte, in place: a malformed call as
// soon as it is known to be one, an unterminated call at finish(). A
// reasoning block never closed is all reasoning. Trimmed: whitespace around
// the reasoning text and before the content after it, and whitespace just
// before a call and after the last one. Streaming holds back only the text
// that may still be the start of a marker, and a tool call's text until the
// call is complete (its closing marker, or the end of its JSON), so a call is
// sent once it is known to be well formed: first {index, id, name}, then its
// arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace og {

enum class ToolCallFormat { kNone, kHermes, kLlama3Json, kMistral, kGemma4, kHarmony };
// kMistralThink: [THINK]...[/THINK] (Magistral, Ministral 3 Reasoning).
// kHarmony: gpt-oss's analysis channel, closed by the final channel's header.
enum class ReasoningFormat { kNone, kThink, kGemma4Channel, kMistralThink, kHarmony };

const char* tool_call_format_name(ToolCallFormat f);   // "none", "hermes", "llama3-json", "mistral", "gemma4", "harmony"
const char* reasoning_format_name(ReasoningFormat f);  // "none", "think", "gemma4-channel", "mistral-think", "harmony"

struct ReplyFormat {
  ToolCallFormat tools = ToolCallFormat::kNone;
  ReasoningFormat reasoning = ReasoningFormat::kNone;
  // kMistral: the template writes each call as [TOOL_CALLS]name[ARGS]{...}
  // (Small 3.2, Devstral, Ministral 3), with [CALL_ID]id before [ARGS] when
  // mistral_call_id; otherwise one [TOOL_CALLS][{"name": ..., "arguments":
  // ...}, ...] list (Nemo). The parser reads both; a grammar of required calls
  // writes the template's own.
  bool mistral_args = false;
  bool mistral_call_id = false;
  bool operator==(const ReplyFormat&) const = default;
};

// The formats a chat template's replies use, from its source text.
ReplyFormat detect_reply_format(std::string_view template_source);

// A finished call: arguments is JSON text of an object (compact, as OpenAI sends it).
struct ToolCall {
  // "call_" + 24 letters and digits; for ToolCallFormat::kMistral 9 letters
  // and digits, the only ids Mistral's templates accept back in history.
  // Drawn, never taken from the reply; unique within a reply.
  std::string id;
  std::string name;
  std::string arguments;
  bool operator==(const ToolCall&) const = default;
};

// One streamed call's piece: the first piece of a call has id and name (and
// arguments ""), later pieces only arguments fragments.
struct ToolCallDelta {
  int index = 0;
  std::string id, name, arguments;
  bool operator==(const ToolCallDelta&) const = default;
};

// What a feed() or finish() releases, in reply order within each field.
struct ReplyDelta {
  std::string reasoning, content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

struct ReplyParserOptions {
  ReplyFormat format;
  bool parse_tools = true;       // false (no tools asked, or tool_choice none): calls stay content
  bool parse_reasoning = true;   // false (--reasoning-format none): reasoning stays content
  // The prompt ended inside a reasoning block (a template whose generation
  // prompt opens `<think>`): the reply starts as reasoning.
  bool starts_in_reasoning = false;
  // The prompt closed the reasoning block (Qwen 3 with enable_thinking false)
  // or the request turned thinking off: a grammar then lets no block open
  // before its constrained part (chat/reasoning_grammar.h). The parser reads
  // the reply as ever.
  bool thinking_off = false;
  // false (the request's parallel_tool_calls: false): only the first call is
  // returned; a later well-formed call is dropped, its text with it (neither
  // a call nor content), as vLLM keeps only the first. Other text stays content.
  bool parallel_tool_calls = true;
  uint64_t id_seed = 0;  // tool call ids: drawn from this seed (0 = from the clock)
};

class ReplyParser {
 public:
  explicit ReplyParser(ReplyParserOptions options);
  ~ReplyParser();
  ReplyParser(ReplyParser&&) noexcept;
  ReplyParser& operator=(ReplyParser&&) noexcept;

  // The reply's next text; returns what can be released now.
  ReplyDelta feed(std::string_view text);
  // The reply ended: everything held back is released (an unfinished call or
  // reasoning block as described above).
  ReplyDelta finish();

  // The whole reply so far (after finish(): all of it).
  const std::string& reasoning() const;
  const std::string& content() const;
  const std::vector<ToolCall>& tool_calls() const;

 private:
  struct Impl;
  Impl* impl_;
};

struct ParsedReply {
  std::string reasoning, content;
  std::vector<ToolCall> tool_calls;
};
// feed(text) + finish() in one call.
ParsedReply parse_reply(std::string_view text, const ReplyParserOptions& options);

// Whether the template's generation prompt (the render's tail after the
// last message) leaves the reply inside a reasoning block ("<think>\n" as
// DeepSeek-R1 distills and some Qwen 3 templates end it).
bool prompt_opens_reasoning(std::string_view rendered_prompt, ReasoningFormat f);

}  // namespace og
