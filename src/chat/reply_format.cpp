// Which tool-call and reasoning markers a model's replies use, read from the
// markers its chat template writes for assistant turns in history.
#include <string_view>

#include "chat/reply_parser.h"

namespace og {

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3Json: return "llama3-json";
    case ToolCallFormat::kMistral: return "mistral";
    case ToolCallFormat::kGemma4: return "gemma4";
    case ToolCallFormat::kHarmony: return "harmony";
  }
  return "none";
}

const char* reasoning_format_name(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::kNone: return "none";
    case ReasoningFormat::kThink: return "think";
    case ReasoningFormat::kGemma4Channel: return "gemma4-channel";
    case ReasoningFormat::kMistralThink: return "mistral-think";
    case ReasoningFormat::kHarmony: return "harmony";
  }
  return "none";
}

// The first row whose marker the template contains decides (so Hermes 2 Pro,
// whose Llama-3 template says "parameters", is Hermes):
//
//   tools        template contains                                   e.g.
//   gemma4       <|tool_call>                                        Gemma 4
//   mistral      [TOOL_CALLS]                                        Nemo, Small 3.2, Devstral, Ministral 3
//   hermes       <tool_call>                                         Qwen 2.5/3, QwQ, Hermes 2/3, Granite 4
//   llama3-json  <|python_tag|>, or "parameters" and <|start_header_id|>  Llama 3.1/3.2/3.3
//   harmony      <|channel|>, <|start|> and <|call|>                  gpt-oss
//   none         anything else                                       DeepSeek R1 distills, Phi 3.5
//
//   reasoning       template contains  e.g.
//   harmony         <|channel|> and <|start|>  gpt-oss
//   gemma4-channel  <|channel>         Gemma 4 (gpt-oss's <|channel|> is another token)
//   mistral-think   [THINK]            Magistral, Ministral 3 Reasoning
//   think           <think>            Qwen 3, QwQ, DeepSeek R1 distills
//   none            anything else
ReplyFormat detect_reply_format(std::string_view t) {
  auto has = [&](std::string_view m) { return t.find(m) != std::string_view::npos; };
  ReplyFormat f;
  if (has("<|tool_call>")) f.tools = ToolCallFormat::kGemma4;
  else if (has("[TOOL_CALLS]")) {
    f.tools = ToolCallFormat::kMistral;
    f.mistral_args = has("[ARGS]");
    f.mistral_call_id = f.mistral_args && has("[CALL_ID]");
  }
  else if (has("<tool_call>")) f.tools = ToolCallFormat::kHermes;
  else if (has("<|python_tag|>") || (has("\"parameters\"") && has("<|start_header_id|>")))
    f.tools = ToolCallFormat::kLlama3Json;
  else if (has("<|channel|>") && has("<|start|>") && has("<|call|>")) f.tools = ToolCallFormat::kHarmony;

  if (has("<|channel|>") && has("<|start|>")) f.reasoning = ReasoningFormat::kHarmony;
  else if (has("<|channel>")) f.reasoning = ReasoningFormat::kGemma4Channel;
  else if (has("[THINK]")) f.reasoning = ReasoningFormat::kMistralThink;
  else if (has("<think>")) f.reasoning = ReasoningFormat::kThink;
  return f;
}

}  // namespace og
