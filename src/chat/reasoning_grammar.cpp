// Reasoning before a constrained answer (reasoning_grammar.h).
#include "chat/reasoning_grammar.h"

#include "grammar/compose.h"

namespace og {

ReasoningRoom reasoning_room(const ReplyParserOptions& reply) {
  if (!reply.parse_reasoning || reply.format.reasoning == ReasoningFormat::kNone) return ReasoningRoom::kNone;
  // A block the prompt opened stays: the reply must close it (at once, with
  // thinking off: the caller's budget is then 0).
  if (reply.starts_in_reasoning) return ReasoningRoom::kOpen;
  return reply.thinking_off ? ReasoningRoom::kNone : ReasoningRoom::kOptional;
}

ReasoningBlock reasoning_block(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::kThink: return {"<think>", "</think>", ""};
    case ReasoningFormat::kGemma4Channel: return {"<|channel>", "<channel|>", ""};
    case ReasoningFormat::kMistralThink: return {"[THINK]", "[/THINK]", ""};
    case ReasoningFormat::kHarmony:
      return {"<|channel|>analysis<|message|>", "<|end|><|start|>assistant", "<|channel|>final<|message|>"};
    case ReasoningFormat::kNone: break;
  }
  return {};
}

std::string reasoning_then(ReasoningFormat f, ReasoningRoom room, std::string_view answer_rule, bool with_header) {
  const ReasoningBlock b = reasoning_block(f);
  std::string answer(answer_rule);
  if (with_header && !b.answer_header.empty()) answer = grammar::grammar_literal(b.answer_header) + " " + answer;
  if (room == ReasoningRoom::kNone || b.close.empty()) return "root ::= " + answer + "\n";
  // The body runs to the close marker's first word (harmony: <|end|>, then
  // the next message's start).
  const std::string first = f == ReasoningFormat::kHarmony ? "<|end|>" : b.close;
  std::string g = grammar::text_without_rules(first, "think-body");
  // Qwen and DeepSeek write a blank line or two between </think> and the answer.
  const std::string gap = f == ReasoningFormat::kThink ? " [\\n]{0,2}" : "";
  const std::string block = "think-body " + grammar::grammar_literal(b.close) + gap;
  g += room == ReasoningRoom::kOpen ? "root ::= " + block + " " + answer + "\n"
                                    : "root ::= (" + grammar::grammar_literal(b.open) + " " + block + ")? " + answer + "\n";
  return g;
}

std::string structured_output_grammar(std::string_view answer, ReasoningFormat f, ReasoningRoom room) {
  const ReasoningBlock b = reasoning_block(f);
  if ((room == ReasoningRoom::kNone || b.close.empty()) && b.answer_header.empty()) return std::string(answer);
  return grammar::prefix_rules(answer, "a-") + "\n" + reasoning_then(f, room, "a-root", true);
}

std::vector<std::string> reasoning_grammar_markers(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::kThink: return {"<think>", "</think>"};
    case ReasoningFormat::kGemma4Channel: return {"<|channel>", "<channel|>"};
    case ReasoningFormat::kMistralThink: return {"[THINK]", "[/THINK]"};
    case ReasoningFormat::kHarmony: return {"<|channel|>", "<|message|>", "<|start|>", "<|end|>"};
    case ReasoningFormat::kNone: break;
  }
  return {};
}

namespace {

std::string_view trim_end(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool prompt_closes_reasoning(std::string_view rendered_prompt, ReasoningFormat f) {
  std::string_view close;
  switch (f) {
    case ReasoningFormat::kThink: close = "</think>"; break;
    case ReasoningFormat::kGemma4Channel: close = "<channel|>"; break;
    case ReasoningFormat::kMistralThink: close = "[/THINK]"; break;
    case ReasoningFormat::kHarmony: close = "<|channel|>final<|message|>"; break;
    case ReasoningFormat::kNone: return false;
  }
  return trim_end(rendered_prompt).ends_with(close);
}

bool kwargs_turn_thinking_off(const nlohmann::ordered_json& kwargs) {
  if (!kwargs.is_object()) return false;
  for (const char* key : {"enable_thinking", "thinking"}) {
    auto it = kwargs.find(key);
    if (it != kwargs.end() && it->is_boolean() && !it->get<bool>()) return true;
  }
  auto effort = kwargs.find("reasoning_effort");
  return effort != kwargs.end() && effort->is_string() && effort->get<std::string>() == "none";
}

}  // namespace og
