// Grammars of required tool calls (tool_grammar.h).
#include "server/tool_grammar.h"

#include "grammar/compose.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"

namespace og::server {

namespace {

using json = nlohmann::ordered_json;
using grammar::grammar_literal;

// Rules `tN-root` for tool N's arguments; returns the rule text.
std::string arguments_rules(const json& tool, size_t n, std::string* root) {
  const json& fn = tool["function"];
  // No parameters: the empty object. Arguments are strict (additionalProperties
  // defaults to false): a call's extra arguments would only fail the function,
  // and an open object lets a model write keys without end.
  const json params = fn.contains("parameters") ? fn["parameters"] : json::object({{"type", "object"}, {"properties", json::object()}});
  grammar::JsonSchemaOptions o;
  o.strict = true;
  std::string text;
  const std::string field = "tools[" + std::to_string(n) + "].function.parameters";
  try {
    text = grammar::json_schema_to_grammar(params, o);
  } catch (const grammar::SchemaError& e) {
    bad_request("'" + field + "': " + e.what() + " (tool_choice needs a schema it can enforce)", field,
                "unsupported_schema");
  }
  const std::string prefix = "t" + std::to_string(n) + "-";
  *root = prefix + "root";
  return grammar::prefix_rules(text, prefix) + "\n";
}

// Any JSON object: the arguments of a tool that is not strict.
std::string any_object_rules(size_t n, std::string* root) {
  grammar::JsonSchemaOptions o;
  const std::string prefix = "t" + std::to_string(n) + "-";
  *root = prefix + "root";
  return grammar::prefix_rules(grammar::json_schema_to_grammar(json::object({{"type", "object"}}), o), prefix) + "\n";
}

bool is_strict(const json& tool) {
  const json& fn = tool["function"];
  return fn.contains("strict") && fn["strict"].is_boolean() && fn["strict"].get<bool>();
}

}  // namespace

bool has_strict_tools(const GenerationRequest& req) {
  if (!req.template_request.contains("tools")) return false;
  for (const json& t : req.template_request["tools"])
    if (is_strict(t)) return true;
  return false;
}

std::string strict_auto_grammar(const GenerationRequest& req, const ReplyParserOptions& reply) {
  if (reply.format.tools != ToolCallFormat::kHermes) return "";
  const json& tools = req.template_request["tools"];
  std::string rules, alts;
  for (size_t i = 0; i < tools.size(); ++i) {
    std::string args;
    rules += is_strict(tools[i]) ? arguments_rules(tools[i], i, &args) : any_object_rules(i, &args);
    const std::string head = "{\"name\": " + json(tools[i]["function"]["name"].get<std::string>()).dump() + ", \"arguments\": ";
    alts += std::string(alts.empty() ? "" : " | ") + "(" + grammar_literal(head) + " " + args + " \"}\")";
  }
  std::string g = "call-body ::= " + alts + "\n";
  g += "call ::= \"<tool_call>\\n\" call-body \"\\n</tool_call>\"\n";
  g += std::string("calls ::= call") + (req.parallel_tool_calls ? " (\"\\n\" call)*" : "") + "\n";
  // Text (reasoning included) never holding the marker, then calls or nothing.
  g += "root ::= free (calls [\\n]?)?\n";
  g += grammar::text_without_rules("<tool_call>", "free");
  return g + rules;
}

std::string tool_call_grammar(const GenerationRequest& req, const ReplyParserOptions& reply) {
  const json& tools = req.template_request["tools"];
  const ToolCallFormat f = reply.format.tools;
  if (f != ToolCallFormat::kHermes && f != ToolCallFormat::kLlama3Json)
    bad_request(std::string("'tool_choice' ") +
                    (req.tool_choice.kind == ToolChoice::Kind::kRequired ? "required" : "naming a function") +
                    " cannot be enforced for this model's tool-call format (" + tool_call_format_name(f) +
                    ": its markers are control tokens); use \"auto\"",
                "tool_choice", "unsupported_parameter");
  std::string rules, alts;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string name = tools[i]["function"]["name"].get<std::string>();
    if (req.tool_choice.kind == ToolChoice::Kind::kFunction && name != req.tool_choice.function) continue;
    std::string args;
    rules += arguments_rules(tools[i], i, &args);
    const std::string name_json = json(name).dump();
    const std::string head = f == ToolCallFormat::kHermes ? "{\"name\": " + name_json + ", \"arguments\": "
                                                           : "{\"name\": " + name_json + ", \"parameters\": ";
    alts += std::string(alts.empty() ? "" : " | ") + "(" + grammar_literal(head) + " " + args + " \"}\")";
  }
  std::string g = "call-body ::= " + alts + "\n";
  if (f == ToolCallFormat::kHermes) {
    g += "call ::= \"<tool_call>\\n\" call-body \"\\n</tool_call>\"\n";
    g += std::string("calls ::= call") + (req.parallel_tool_calls ? " (\"\\n\" call)*" : "") + "\n";
  } else {
    g += std::string("calls ::= call-body") + (req.parallel_tool_calls ? " (\"; \" call-body)*" : "") + "\n";
  }
  // A reasoning block may come first (the model thinks, then calls).
  if (reply.parse_reasoning && reply.format.reasoning == ReasoningFormat::kThink) {
    g += "think-body ::= ([^<] | \"<\" [^/] | \"</\" [^t])*\n";
    g += reply.starts_in_reasoning ? "root ::= think-body \"</think>\" [\\n]{0,2} calls\n"
                                   : "root ::= (\"<think>\" think-body \"</think>\" [\\n]{0,2})? calls\n";
  } else {
    g += "root ::= calls\n";
  }
  return g + rules;
}

}  // namespace og::server
