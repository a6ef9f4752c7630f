// The grammar that makes a reply a tool call, for tool_choice "required" or a
// named function: the call in the model's own format (Hermes / Qwen
// <tool_call>, Llama 3 JSON, Mistral's [TOOL_CALLS] in the template's own
// form, Gemma 4's <|tool_call>call:name{...}<tool_call|> with its argument
// syntax, gpt-oss's harmony message to functions.NAME) with arguments valid for the tool's `parameters` schema
// (src/grammar/json_schema.h; strict: additionalProperties defaults to false,
// and a tool without parameters takes {}), after an optional reasoning block
// when the template has one. Markers that are control tokens (Mistral's, harmony's) are
// matched over a vocabulary that admits them (tool_grammar_markers).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_request.h"
#include "server/reply_parser.h"

namespace og::server {

// The grammar text for req's tool_choice (required: any of the tools; a
// function: that one), one call, or one or more when parallel_tool_calls.
std::string tool_call_grammar(const GenerationRequest& req, const ReplyParserOptions& reply);

// The texts of the control tokens that the format's tool grammars write and
// so must be admitted into the grammar's vocabulary (runtime/constraint.h
// grammar_vocab(tok, admitted)); empty when the format needs none.
std::vector<std::string> tool_grammar_markers(const ReplyFormat& format);

// True when one of the request's tools says "strict": true.
bool has_strict_tools(const GenerationRequest& req);

// tool_choice "auto" with strict tools: any text without the call marker,
// then (or not) calls whose arguments are valid for strict tools' schemas
// (any object for the others). Hermes / Qwen, Mistral and Gemma 4 formats;
// "" for Llama 3's bare JSON (its calls are parsed, not enforced).
std::string strict_auto_grammar(const GenerationRequest& req, const ReplyParserOptions& reply);

}  // namespace og::server
