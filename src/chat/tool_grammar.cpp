// Grammars of required tool calls and of strict tools under "auto" (tool_grammar.h).
#include "chat/tool_grammar.h"

#include <algorithm>
#include <cstdint>

#include "chat/reasoning_grammar.h"
#include "chat/request_error.h"
#include "grammar/compose.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace og {

namespace {

using json = nlohmann::ordered_json;
using grammar::grammar_literal;

grammar::JsonSyntax syntax_of(const ReplyFormat& f) {
  return f.tools == ToolCallFormat::kGemma4 ? grammar::JsonSyntax::kGemma4 : grammar::JsonSyntax::kJson;
}

// What the tools' schemas of one request may cost together: each tool
// compiled with the whole default budget let 512 tools multiply it (minutes of
// compile time, and a combined grammar past what the grammar parser takes).
struct SchemaBudget {
  int64_t work = grammar::JsonSchemaOptions{}.max_work;
  size_t bytes = grammar::JsonSchemaOptions{}.max_grammar_bytes;
};

// Rules `tN-root` for tool N's arguments; returns the rule text.
std::string arguments_rules(const json& tool, size_t n, grammar::JsonSyntax syntax, SchemaBudget& budget,
                            std::string* root) {
  const json& fn = tool["function"];
  // No parameters: the empty object. Arguments are strict (additionalProperties
  // defaults to false): a call's extra arguments would only fail the function,
  // and an open object lets a model write keys without end.
  const json params = fn.contains("parameters") ? fn["parameters"] : json::object({{"type", "object"}, {"properties", json::object()}});
  grammar::JsonSchemaOptions o;
  o.strict = true;
  o.syntax = syntax;
  int64_t spent = 0;
  const bool shared = budget.work < o.max_work || budget.bytes < o.max_grammar_bytes;
  o.max_work = budget.work;
  o.max_grammar_bytes = budget.bytes;
  o.work_spent = &spent;
  std::string text;
  const std::string field = "tools[" + std::to_string(n) + "].function.parameters";
  try {
    text = grammar::json_schema_to_grammar(params, o);
  } catch (const grammar::SchemaError& e) {
    throw ChatRequestError("'" + field + "': " + e.what() + " (tool_choice needs a schema it can enforce" +
                               (shared ? "; the tools' schemas share these limits" : "") + ")",
                           field, "unsupported_schema");
  }
  const std::string prefix = "t" + std::to_string(n) + "-";
  *root = prefix + "root";
  std::string rules = grammar::prefix_rules(text, prefix) + "\n";  // the prefixes add bytes: count them too
  budget.work -= spent;
  budget.bytes -= std::min(budget.bytes, rules.size());
  return rules;
}

// The whole call grammar within what the grammar parser takes: past it, a
// 400 naming the tools here, not a grammar that fails to compile (a 500) later.
std::string within_grammar_limit(std::string g) {
  const size_t limit = grammar::GrammarLimits{}.max_text_bytes;
  if (g.size() > limit)
    throw ChatRequestError("'tools': the grammar of these tools' calls is " + std::to_string(g.size()) +
                               " bytes, above the limit " + std::to_string(limit) + " (the tools' schemas share it)",
                           "tools", "unsupported_schema");
  return g;
}

// Any JSON object: the arguments of a tool that is not strict.
std::string any_object_rules(size_t n, grammar::JsonSyntax syntax, std::string* root) {
  grammar::JsonSchemaOptions o;
  o.syntax = syntax;
  const std::string prefix = "t" + std::to_string(n) + "-";
  *root = prefix + "root";
  return grammar::prefix_rules(grammar::json_schema_to_grammar(json::object({{"type", "object"}}), o), prefix) + "\n";
}

bool is_strict(const json& tool) {
  const json& fn = tool["function"];
  return fn.contains("strict") && fn["strict"].is_boolean() && fn["strict"].get<bool>();
}

}  // namespace

bool has_strict_tools(const ToolRequest& req) {
  for (const json& t : req.tools)
    if (is_strict(t)) return true;
  return false;
}

std::vector<std::string> tool_grammar_markers(const ReplyFormat& f) {
  if (f.tools == ToolCallFormat::kMistral) return {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"};
  // User-defined tokens in llama.cpp's GGUFs (no second vocabulary needed); an
  // HF tokenizer.json may call them special.
  if (f.tools == ToolCallFormat::kGemma4) return {"<|tool_call>", "<tool_call|>", "<|\"|>", "<|channel>", "<channel|>"};
  // gpt-oss: harmony's message markers are control tokens of its o200k vocabulary.
  if (f.tools == ToolCallFormat::kHarmony) return {"<|channel|>", "<|message|>", "<|constrain|>", "<|start|>", "<|end|>"};
  return {};
}

namespace {

bool enforceable(ToolCallFormat f) {
  return f == ToolCallFormat::kHermes || f == ToolCallFormat::kLlama3Json || f == ToolCallFormat::kMistral ||
         f == ToolCallFormat::kGemma4 || f == ToolCallFormat::kHarmony;
}

// One call of tool n (name, arguments rule args_rule) in the format's syntax.
std::string call_alternative(const ReplyFormat& f, const std::string& name, const std::string& args_rule) {
  const std::string name_json = json(name).dump();
  switch (f.tools) {
    case ToolCallFormat::kMistral:
      if (f.mistral_args) {
        // [TOOL_CALLS]name([CALL_ID]id)?[ARGS]{...}: ids are 9 letters and digits (the template checks).
        return "(" + grammar_literal("[TOOL_CALLS]" + name) +
               (f.mistral_call_id ? " \"[CALL_ID]\" [a-zA-Z0-9]{9}" : "") + " \"[ARGS]\" " + args_rule + ")";
      }
      return "(" + grammar_literal("{\"name\": " + name_json + ", \"arguments\": ") + " " + args_rule + " \"}\")";
    case ToolCallFormat::kGemma4:  // <|tool_call>call:name{key:value,...}<tool_call|>
      return "(" + grammar_literal("<|tool_call>call:" + name) + " " + args_rule + " \"<tool_call|>\")";
    case ToolCallFormat::kLlama3Json:
      return "(" + grammar_literal("{\"name\": " + name_json + ", \"parameters\": ") + " " + args_rule + " \"}\")";
    case ToolCallFormat::kHarmony:  // a commentary message to the function; <|call|> (a stop token) ends the turn
      return "(" + grammar_literal("<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>") +
             " " + args_rule + ")";
    default:
      return "(" + grammar_literal("{\"name\": " + name_json + ", \"arguments\": ") + " " + args_rule + " \"}\")";
  }
}

// `calls`: one call, or one or more when parallel, wrapped in the format's
// markers; the alternatives of one call are the rule `call-body`.
std::string calls_rules(const ReplyFormat& f, bool parallel) {
  std::string g;
  switch (f.tools) {
    case ToolCallFormat::kHermes:
      g += "call ::= \"<tool_call>\\n\" call-body \"\\n</tool_call>\"\n";
      g += std::string("calls ::= call") + (parallel ? " (\"\\n\" call)*" : "") + "\n";
      break;
    case ToolCallFormat::kGemma4:
      g += std::string("calls ::= call-body") + (parallel ? " call-body*" : "") + "\n";
      break;
    case ToolCallFormat::kHarmony:  // one call: its <|call|> ends the turn
      g += "calls ::= call-body\n";
      break;
    case ToolCallFormat::kMistral:
      if (f.mistral_args) {
        g += std::string("calls ::= call-body") + (parallel ? " call-body*" : "") + "\n";
      } else {
        g += std::string("calls ::= \"[TOOL_CALLS][\" call-body") + (parallel ? " (\", \" call-body)*" : "") +
             " \"]\"\n";
      }
      break;
    default:  // Llama 3: bare JSON calls
      g += std::string("calls ::= call-body") + (parallel ? " (\"; \" call-body)*" : "") + "\n";
      break;
  }
  return g;
}

// The marker a call starts with (free text before calls never holds it).
std::string call_marker(const ReplyFormat& f) {
  if (f.tools == ToolCallFormat::kGemma4) return "<|tool_call>";
  return f.tools == ToolCallFormat::kMistral ? "[TOOL_CALLS]" : "<tool_call>";
}

// gpt-oss (harmony) under "auto": after an optional analysis message, the
// final message (text holding neither of the parser's two ways into a call,
// so it reads none there; <|return|> ends it) or one call. The analysis text
// runs to its <|end|>; when the analysis is not parsed as reasoning the parser
// reads it as content, so it holds neither way in either.
std::string harmony_auto_rules(const ReplyParserOptions& reply) {
  const bool reasoning = reply.parse_reasoning && reply.format.reasoning == ReasoningFormat::kHarmony;
  const std::vector<std::string> ways_in = {"<|channel|>", "<|start|>assistant"};  // reply_parser.cpp call_open_marker*
  std::string g = calls_rules(reply.format, false);
  g += grammar::text_without_any_rules(ways_in, "free");
  g += reasoning ? grammar::text_without_rules("<|end|>", "think-body")
                 : grammar::text_without_any_rules({"<|end|>", ways_in[0], ways_in[1]}, "think-body");
  g += "reply ::= \"<|channel|>final<|message|>\" free | calls\n";
  g += reasoning && reply.starts_in_reasoning
           ? "root ::= think-body \"<|end|><|start|>assistant\" reply\n"
           : "root ::= (\"<|channel|>analysis<|message|>\" think-body \"<|end|><|start|>assistant\")? reply\n";
  return g;
}

// Llama 3 under "auto". The parser (reply_parser.cpp llama_start) takes a
// reply as calls when its first character after whitespace is '{' or it
// opens with <|python_tag|>, and as content otherwise. So: whitespace, then
// calls (as the required grammar writes them, no <|python_tag|>), or text
// that opens with neither, or nothing. A '{' reply that is not a call (a bare
// JSON answer) is content to the parser, but is not writable here: which
// objects the parser reads as calls is not a grammar's to tell.
std::string llama3_auto_rules(const ReplyFormat& f, bool parallel) {
  std::string g = calls_rules(f, parallel);
  g += "root ::= ws (calls | text)?\n";
  g += "ws ::= [ \\t\\n\\r\\f\\x0B]*\n";  // the parser's is_space
  // "<" and then not the rest of <|python_tag|>: stop within it, or leave it.
  const std::string_view tag = "<|python_tag|>";
  std::string not_tag;
  for (size_t k = 1; k < tag.size(); ++k) {
    const std::string done = k > 1 ? grammar::grammar_literal(tag.substr(1, k - 1)) : std::string("\"\"");
    not_tag += std::string(k > 1 ? " | " : "") + done + " | " + (k > 1 ? done + " " : "") + "[^" + tag[k] + "] .*";
  }
  g += "text ::= [^{< \\t\\n\\r\\f\\x0B] .* | \"<\" (" + not_tag + ")\n";
  return g;
}

}  // namespace

std::string strict_auto_grammar(const ToolRequest& req, const ReplyParserOptions& reply) {
  const ReplyFormat& f = reply.format;
  if (!enforceable(f.tools)) return "";
  const json& tools = req.tools;
  std::string rules, alts;
  SchemaBudget budget;
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string args;
    rules += is_strict(tools[i]) ? arguments_rules(tools[i], i, syntax_of(f), budget, &args)
                                 : any_object_rules(i, syntax_of(f), &args);
    alts += std::string(alts.empty() ? "" : " | ") +
            call_alternative(f, tools[i]["function"]["name"].get<std::string>(), args);
  }
  std::string g = "call-body ::= " + alts + "\n";
  if (f.tools == ToolCallFormat::kHarmony) return within_grammar_limit(g + harmony_auto_rules(reply) + rules);
  if (f.tools == ToolCallFormat::kLlama3Json)
    return within_grammar_limit(g + llama3_auto_rules(f, req.parallel_tool_calls) + rules);
  g += calls_rules(f, req.parallel_tool_calls);
  // Text (reasoning included) never holding the marker, then calls or nothing.
  g += f.tools == ToolCallFormat::kHermes ? "root ::= free (calls [\\n]?)?\n" : "root ::= free calls?\n";
  g += grammar::text_without_rules(call_marker(f), "free");
  return within_grammar_limit(g + rules);
}

std::string tool_call_grammar(const ToolRequest& req, const ReplyParserOptions& reply) {
  const json& tools = req.tools;
  const ReplyFormat& f = reply.format;
  if (!enforceable(f.tools))
    throw ChatRequestError(std::string("'tool_choice' ") +
                               (req.choice.kind == ToolChoice::Kind::kRequired ? "required" : "naming a function") +
                               " cannot be enforced for this model's tool-call format (" +
                               tool_call_format_name(f.tools) + "); use \"auto\"",
                           "tool_choice", "unsupported_parameter");
  std::string rules, alts;
  SchemaBudget budget;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string name = tools[i]["function"]["name"].get<std::string>();
    if (req.choice.kind == ToolChoice::Kind::kFunction && name != req.choice.function) continue;
    std::string args;
    rules += arguments_rules(tools[i], i, syntax_of(f), budget, &args);
    alts += std::string(alts.empty() ? "" : " | ") + call_alternative(f, name, args);
  }
  std::string g = "call-body ::= " + alts + "\n" + calls_rules(f, req.parallel_tool_calls);
  // A reasoning block may come first (the model thinks, then calls), unless
  // thinking is off or the prompt closed it: the same rule as structured output.
  g += reasoning_then(f.reasoning, reasoning_room(reply), "calls", false);
  return within_grammar_limit(g + rules);
}

}  // namespace og
