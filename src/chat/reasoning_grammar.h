// Reasoning before a constrained answer: the rules that let a reply reason
// in its format's block (<think>...</think>, Mistral's [THINK]...[/THINK],
// Gemma 4's <|channel>...<channel|>, harmony's analysis message) and then
// match the constrained part (a response_format / json_schema / grammar, or a
// required tool call), or start the constrained part at once where the
// reply may not reason. The same rule for structured output and tool calls:
//
//   room       the reply                                      when
//   none       the constrained part at once                   no reasoning format, reasoning not parsed
//                                                             (--reasoning-format none), thinking off, or
//                                                             the prompt closed the block
//   optional   (opener body close)? then the constrained part  the model opens the block itself (Qwen 3,
//                                                             Magistral, Gemma 4 with thinking, gpt-oss)
//   open       body close, then the constrained part           the prompt opened it (QwQ, DeepSeek-R1:
//                                                             "<think>\n")
//
// The body is any text without the close marker; how long it may grow is the
// sampler's to bound (runtime/constraint.h ReasoningLimit forces the close
// marker after a budget of tokens). gpt-oss's answer is its final message:
// "<|channel|>final<|message|>" comes before a structured answer (a call is a
// message of its own, header included).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/reply_parser.h"

namespace og {

enum class ReasoningRoom { kNone, kOptional, kOpen };

// The room of a reply with these parser options (chat/reply_parser.h:
// parse_reasoning, starts_in_reasoning, thinking_off).
ReasoningRoom reasoning_room(const ReplyParserOptions& reply);

// The block as the grammars write it: what opens it, what closes it (harmony:
// the end of the analysis message and the next message's start), and what a
// structured answer starts with after it ("" but for harmony).
struct ReasoningBlock {
  std::string open, close, answer_header;
};
ReasoningBlock reasoning_block(ReasoningFormat f);

// Rules ending in `root ::= <reasoning the room allows> <answer_rule>`, where
// answer_rule is a rule of the caller's grammar; with_header: the answer is a
// structured one (harmony's final-message header before it).
std::string reasoning_then(ReasoningFormat f, ReasoningRoom room, std::string_view answer_rule, bool with_header);

// A structured-output grammar (answer: grammar text with its own `root`, a
// JSON schema's or a client's GBNF) after the reasoning the room allows. The
// answer's rules are renamed a-NAME; the text is returned as given when the
// format adds nothing (no room and no header).
std::string structured_output_grammar(std::string_view answer, ReasoningFormat f, ReasoningRoom room);

// The control tokens those grammars may write (to admit into the grammar's
// vocabulary, runtime/constraint.h grammar_vocab): the block's markers.
std::vector<std::string> reasoning_grammar_markers(ReasoningFormat f);

// Whether the rendered prompt ends with the block closed (Qwen 3 with
// enable_thinking false: "<think>\n\n</think>\n\n"; Gemma 4 without thinking:
// "<|channel>thought\n<channel|>"; gpt-oss's final header), so the reply
// may not reason.
bool prompt_closes_reasoning(std::string_view rendered_prompt, ReasoningFormat f);

// Whether the request turned thinking off in its template variables:
// enable_thinking or thinking false, or reasoning_effort "none".
bool kwargs_turn_thinking_off(const nlohmann::ordered_json& kwargs);

}  // namespace og
