// Internal to reply_parser.cpp: reading one tool call (or one Mistral list of
// calls) in each format's own syntax, from the first byte of its marker, as
// the reply grows. The markers, and what each format's body looks like, are
// the inverse of what the chat templates write for tool calls in history
// (tests/template/data/templates/*.jinja).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "chat/reply_parser.h"

namespace og::detail {

inline constexpr std::string_view kHermesOpen = "<tool_call>";
inline constexpr std::string_view kHermesClose = "</tool_call>";
inline constexpr std::string_view kPythonTag = "<|python_tag|>";
inline constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
inline constexpr std::string_view kMistralArgs = "[ARGS]";
inline constexpr std::string_view kMistralCallId = "[CALL_ID]";
inline constexpr std::string_view kGemmaOpen = "<|tool_call>";
inline constexpr std::string_view kGemmaClose = "<tool_call|>";
inline constexpr std::string_view kGemmaQuote = "<|\"|>";
// gpt-oss (harmony): a call is a message addressed to a function,
// [<|start|>assistant[ to=functions.NAME]]<|channel|>commentary[ to=functions.NAME]
// [ <|constrain|>json| json]<|message|>{...}<|call|>; the first message of a
// reply has no <|start|>assistant (the generation prompt ends with it).
inline constexpr std::string_view kHarmonyStart = "<|start|>assistant";
inline constexpr std::string_view kHarmonyChannel = "<|channel|>";
inline constexpr std::string_view kHarmonyMessage = "<|message|>";
inline constexpr std::string_view kHarmonyCall = "<|call|>";
inline constexpr std::string_view kHarmonyEnd = "<|end|>";
inline constexpr std::string_view kHarmonyRecipient = "to=functions.";

// Deeper JSON (or Gemma) nesting than this in a call is malformed: the
// parsers recurse, and no real tool's arguments nest this deep.
inline constexpr int kMaxNesting = 128;

bool is_space(char c);  // ASCII space, \t, \n, \r, \f, \v

// A call read from the reply: arguments is a compact JSON object.
struct ParsedCall {
  std::string name;
  std::string arguments;
};

// Finds, across calls as the text grows, where one JSON value that starts with
// '{' or '[' ends: brackets outside strings are counted (both kinds alike; a
// mismatch makes the value fail to parse later, not here).
class JsonEnd {
 public:
  void reset(size_t start);
  // One past the bracket that closes the value, or npos if text ends first.
  size_t scan(std::string_view text);

 private:
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_string_ = false, escape_ = false;
};

enum class CallStatus {
  kNeedMore,   // the text so far may still grow into a well-formed call
  kDone,       // calls hold one (Mistral's list: one or more) well-formed call
  kMalformed,  // cannot be a call: the caller turns the open marker into content
};

struct CallRead {
  CallStatus status = CallStatus::kNeedMore;
  size_t end = 0;  // kDone: bytes the call takes, marker included
  std::vector<ParsedCall> calls;
};

// Reads one call of a format from text that starts at the call's first byte:
// its open marker, or for Llama 3 '{' or <|python_tag|>. The text only grows
// between calls of read() until reset(); read() keeps scan positions so that a
// long call is not rescanned from its start on every token.
class CallReader {
 public:
  explicit CallReader(ToolCallFormat format) : format_(format) {}
  void reset();
  // final: the reply has ended, so kNeedMore becomes kMalformed.
  CallRead read(std::string_view text, bool final);
  // harmony: a message header longer than this without <|message|> is no call.
  static constexpr size_t kMaxHarmonyHeader = 512;

 private:
  CallRead read_hermes(std::string_view text);
  CallRead read_llama(std::string_view text);
  CallRead read_mistral(std::string_view text);
  CallRead read_gemma(std::string_view text);
  CallRead read_harmony(std::string_view text, bool final);

  ToolCallFormat format_;
  size_t scanned_ = 0;  // Hermes, Gemma: where the search for the close marker goes on; harmony: the JSON's end
  bool in_string_ = false;  // Gemma: inside <|"|> ... <|"|> at scanned_
  size_t json_start_ = std::string::npos;  // Llama, Mistral, harmony: where the JSON value starts
  std::string harmony_name_;               // harmony: the header's function name
  JsonEnd json_end_;
  bool mistral_list_ = false;  // Mistral: [TOOL_CALLS][{...}, ...] (else name[ARGS]{...})
  std::string mistral_name_;
};

// {"name": "f", "arguments": {...}} (or "parameters", Llama 3's key). A
// string holding a JSON object is accepted as the arguments too: the
// templates of Mistral Nemo and Llama 3.x render OpenAI's string arguments
// that way in history. allow_missing_arguments: a call with only a name
// means no arguments (inside explicit markers; a bare Llama reply must say
// "parameters" to be a call).
bool call_from_json_text(std::string_view text, bool allow_missing_arguments, ParsedCall* out);
// The body between <tool_call> and </tool_call>: the JSON object, or
// Qwen3-Coder's <function=NAME><parameter=KEY>VALUE</parameter></function>.
bool parse_hermes_body(std::string_view body, ParsedCall* out);
// The body between <|tool_call> and <tool_call|>: call:NAME{key:value,...}.
bool parse_gemma4_body(std::string_view body, ParsedCall* out);

}  // namespace og::detail
