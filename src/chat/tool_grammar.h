// The grammar that makes a reply a tool call, for tool_choice "required" or a
// named function: the call in the model's own format (Hermes / Qwen
// <tool_call>, Llama 3 JSON, Mistral's [TOOL_CALLS] in the template's own
// form, Gemma 4's <|tool_call>call:name{...}<tool_call|> with its argument
// syntax, gpt-oss's harmony message to functions.NAME) with arguments valid for the tool's `parameters` schema
// (src/grammar/json_schema.h; strict: additionalProperties defaults to false,
// and a tool without parameters takes {}), after the reasoning the reply may
// hold (chat/reasoning_grammar.h: a block when the template has one, none with
// thinking off or a prompt that closed it). Markers that are control tokens (Mistral's, harmony's) are
// matched over a vocabulary that admits them (tool_grammar_markers).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/reply_parser.h"

namespace og {

// tool_choice: "auto" (the default with tools), "none", "required", or one
// named function.
struct ToolChoice {
  enum class Kind { kAuto, kNone, kRequired, kFunction };
  Kind kind = Kind::kAuto;
  std::string function;  // kFunction: its name (one of the request's tools)
};

// What a tool grammar is built from: the request's tools (OpenAI's list of
// {"type": "function", "function": {name, parameters?, strict?}}, validated
// where the request was parsed), the choice, and whether several calls may
// follow one another. A tool grammar the request cannot have (a schema past
// the limits, a format whose calls cannot be enforced) is a ChatRequestError
// (chat/request_error.h) naming the field.
struct ToolRequest {
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoice choice;
  bool parallel_tool_calls = true;
};

// The grammar text for req's tool_choice (required: any of the tools; a
// function: that one), one call, or one or more when parallel_tool_calls.
std::string tool_call_grammar(const ToolRequest& req, const ReplyParserOptions& reply);

// The texts of the control tokens that the format's tool grammars write and
// so must be admitted into the grammar's vocabulary (runtime/constraint.h
// grammar_vocab(tok, admitted)); empty when the format needs none.
std::vector<std::string> tool_grammar_markers(const ReplyFormat& format);

// True when one of the request's tools says "strict": true.
bool has_strict_tools(const ToolRequest& req);

// tool_choice "auto" with strict tools: the reply may be text, but any call
// in it is to a listed tool, with arguments valid for a strict tool's schema
// (any object for the others). Every format tool_call_grammar enforces ("" for
// the others: their calls are parsed, not enforced):
// - Hermes / Qwen, Mistral, Gemma 4: text without the call marker, then (or
//   not) calls;
// - gpt-oss (harmony): an optional analysis message, then the final message
//   (text holding neither <|channel|> nor <|start|>assistant, the parser's
//   ways into a call) or one call;
// - Llama 3 bare JSON: whitespace, then calls, or text whose first character
//   is not '{' and that does not open with <|python_tag|> (what the parser
//   reads as content), or nothing. A reply that opens with '{' is a call: a
//   bare JSON object that is not one cannot be written.
std::string strict_auto_grammar(const ToolRequest& req, const ReplyParserOptions& reply);

}  // namespace og
