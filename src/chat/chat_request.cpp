// ChatRequest checked and turned into the forms the chat formats render, and
// planned as the server plans /v1/chat/completions (chat/chat_request.h).
#include "chat/chat_request.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <set>

#include "base/one_line.h"
#include "chat/request_error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace og {

namespace {

std::atomic<int64_t> g_grammar_compiles{0};

// Every grammar the planning compiles goes through here (counted for tests).
std::shared_ptr<const grammar::Grammar> compile(const std::string& text) {
  g_grammar_compiles.fetch_add(1, std::memory_order_relaxed);
  return grammar::Grammar::parse(text);
}

using json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 64;  // the server's limit on a request's nesting

[[noreturn]] void refuse(const std::string& field, const std::string& message, const std::string& code = "") {
  const char* sep = message.starts_with(":") ? "" : " ";
  throw ChatRequestError("'" + field + "'" + sep + message, field, code);
}

// A value for a message: quoted, cut after 80 bytes, control bytes escaped.
std::string value_text(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 80; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

// JSON text, nesting bounded as a request body's; a ChatRequestError naming `field`.
json parse_json(const std::string& text, const std::string& field) {
  bool too_deep = false;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) too_deep = true;
    return !too_deep;
  };
  json v = json::parse(text, cb, /*allow_exceptions=*/false);
  if (too_deep) refuse(field, "nests deeper than " + std::to_string(kMaxJsonDepth) + " levels", "json_too_complex");
  if (v.is_discarded()) refuse(field, "is not valid JSON: " + value_text(text));
  return v;
}

// A function name as OpenAI allows it (the server's rule).
void check_function_name(const std::string& name, const std::string& field) {
  bool ok = !name.empty() && name.size() <= 64;
  for (unsigned char c : name)
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':')) ok = false;
  if (!ok) refuse(field, "is " + value_text(name) + ": a function name is 1-64 letters, digits, _ - . :");
}

json tool_calls_json(const std::vector<ToolCall>& calls, const std::string& where) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const ToolCall& c = calls[i];
    json call = json::object();
    if (!c.id.empty()) call["id"] = c.id;
    call["type"] = "function";
    if (c.name.empty()) refuse(at + ".function.name", "is required");
    json f = json::object();
    f["name"] = c.name;
    f["arguments"] = c.arguments.empty() ? json::object() : parse_json(c.arguments, at + ".function.arguments");
    call["function"] = std::move(f);
    out.push_back(std::move(call));
  }
  return out;
}

const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};

// A message given as parts: with an image, a Jinja template gets the parts
// as a list ({"type": "image"} where each image goes), which only a Jinja
// template renders; text parts alone are joined, as the server joins them.
template <typename Needs>
void add_parts(const ChatRequestMessage& m, const std::string& at, json& n, Needs&& needs) {
  if (m.content) refuse(at + ".content", "and its parts are both given: give one");
  const size_t images = count_images(m.parts);
  if (images == 0) return;
  if (m.role != "user") refuse(at + ".content", "holds an image: images are taken in user messages only");
  json list = json::array();
  for (size_t j = 0; j < m.parts.size(); ++j) {
    const ChatContentPart& p = m.parts[j];
    if (p.is_image()) {
      if (p.image.empty()) refuse(at + ".content[" + std::to_string(j) + "]", "is an image with no bytes");
      needs(at + ".content[" + std::to_string(j) + "]");
      list.push_back(json{{"type", "image"}});
    } else {
      list.push_back(json{{"type", "text"}, {"text", p.text}});
    }
  }
  n["content"] = std::move(list);
}

void add_message(const ChatRequestMessage& m, size_t i, ChatRenderForms& out) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  auto needs = [&](const std::string& field) {
    if (out.needs_jinja.empty()) out.needs_jinja = field;
  };
  if (m.role.empty()) refuse(at + ".role", "is required");
  if (!kRoles.count(m.role))
    refuse(at + ".role", "is " + value_text(m.role) + ": expected system, developer, user, assistant or tool");
  const bool assistant = m.role == "assistant";
  if (!m.content && m.parts.empty() && !assistant) refuse(at + ".content", "is required");
  if (!assistant && !m.tool_calls.empty()) refuse(at + ".tool_calls", "is only for assistant messages");
  if (!assistant && m.reasoning_content) refuse(at + ".reasoning_content", "is only for assistant messages");
  if (!assistant && m.thinking) refuse(at + ".thinking", "is only for assistant messages");
  json n = json::object();
  n["role"] = m.role;
  // An assistant turn of calls only renders with "" (as the server gives templates).
  const std::string text = m.parts.empty() ? m.content.value_or("") : parts_text(m.parts);
  n["content"] = text;
  if (!m.parts.empty()) add_parts(m, at, n, needs);
  if (m.name) n["name"] = *m.name;
  if (m.role == "tool") {
    needs(at + ".role");
    if (m.tool_call_id) n["tool_call_id"] = *m.tool_call_id;
  }
  if (!m.tool_calls.empty() || m.tool_calls_listed) n["tool_calls"] = tool_calls_json(m.tool_calls, at + ".tool_calls");
  if (!m.tool_calls.empty()) needs(at + ".tool_calls");
  if (m.reasoning_content) {
    n["reasoning_content"] = *m.reasoning_content;
    needs(at + ".reasoning_content");
  }
  // gpt-oss's template reads the analysis before a call from `thinking`.
  if (m.thinking) {
    n["thinking"] = *m.thinking;
    needs(at + ".thinking");
  } else if (m.reasoning_content && text.empty() && !m.tool_calls.empty()) {
    n["thinking"] = *m.reasoning_content;
  }
  out.messages.push_back({m.role == "developer" ? "system" : m.role, text});
  out.template_request["messages"].push_back(std::move(n));
}

json tools_json(const std::vector<ChatTool>& tools) {
  if (tools.size() > kChatMaxTools)
    refuse("tools", "has " + std::to_string(tools.size()) + " tools; at most " + std::to_string(kChatMaxTools));
  json out = json::array();
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "].function";
    const ChatTool& t = tools[i];
    if (t.name.empty()) refuse(at + ".name", "is required");
    check_function_name(t.name, at + ".name");
    if (!names.insert(t.name).second) refuse(at + ".name", value_text(t.name) + " is given twice");
    json f = json::object();
    f["name"] = t.name;
    if (t.description) f["description"] = *t.description;
    if (!t.parameters.empty()) {
      json p = parse_json(t.parameters, at + ".parameters");
      if (!p.is_object()) refuse(at + ".parameters", "must be a JSON object (a JSON schema)");
      f["parameters"] = std::move(p);
    }
    if (t.strict) f["strict"] = true;
    if (!t.as_sent.empty()) {
      out.push_back(parse_json(t.as_sent, "tools[" + std::to_string(i) + "]"));
      continue;
    }
    out.push_back(json{{"type", "function"}, {"function", std::move(f)}});
  }
  return out;
}

json template_kwargs(const ChatRequest& r, std::string* source) {
  json kw = json::object();
  if (!r.chat_template_kwargs.empty()) {
    kw = parse_json(r.chat_template_kwargs, "chat_template_kwargs");
    if (!kw.is_object()) refuse("chat_template_kwargs", "must be a JSON object");
  }
  *source = kw.empty() ? "reasoning_effort" : "chat_template_kwargs";
  if (r.reasoning_effort) {
    static const std::set<std::string> kEfforts = {"none", "minimal", "low", "medium", "high"};
    if (!kEfforts.count(*r.reasoning_effort))
      refuse("reasoning_effort", "is " + value_text(*r.reasoning_effort) + ": expected none, minimal, low, medium or high");
    if (!kw.contains("reasoning_effort")) kw["reasoning_effort"] = *r.reasoning_effort;
  }
  return kw;
}

void check_tool_choice(const ChatRequest& r) {
  const ToolChoice c = tool_choice_of(r);
  const bool asks_call = c.kind == ToolChoice::Kind::kRequired || c.kind == ToolChoice::Kind::kFunction;
  if (asks_call && r.tools.empty()) refuse("tool_choice", "asks for a tool call but 'tools' is empty");
  if (c.kind != ToolChoice::Kind::kFunction) return;
  const bool known = std::any_of(r.tools.begin(), r.tools.end(), [&](const ChatTool& t) { return t.name == c.function; });
  if (!known) refuse("tool_choice", "names the function " + value_text(c.function) + ", which is not in 'tools'");
}

bool all_in(const std::vector<std::string>& these, const std::vector<std::string>& those) {
  return std::all_of(these.begin(), these.end(),
                     [&](const std::string& k) { return std::find(those.begin(), those.end(), k) != those.end(); });
}

}  // namespace

std::vector<const std::string*> chat_images(const ChatRequest& r) {
  std::vector<const std::string*> out;
  for (const ChatRequestMessage& m : r.messages)
    for (const ChatContentPart& p : m.parts)
      if (p.is_image()) out.push_back(&p.image);
  return out;
}

ToolChoice tool_choice_of(const ChatRequest& r) {
  if (r.tool_choice) return *r.tool_choice;
  ToolChoice c;
  c.kind = r.tools.empty() ? ToolChoice::Kind::kNone : ToolChoice::Kind::kAuto;
  return c;
}

ChatRenderForms render_forms(const ChatRequest& r) {
  ChatRenderForms out;
  if (r.messages.empty()) refuse("messages", "is empty: give at least one message");
  out.template_request = json::object();
  out.template_request["messages"] = json::array();
  for (size_t i = 0; i < r.messages.size(); ++i) add_message(r.messages[i], i, out);
  if (const size_t n = chat_images(r).size(); n > kMaxImagesPerRequest)
    refuse("messages", "hold " + std::to_string(n) + " images; at most " + std::to_string(kMaxImagesPerRequest));
  if (!r.tools.empty()) {
    out.template_request["tools"] = tools_json(r.tools);
    if (out.needs_jinja.empty()) out.needs_jinja = "tools";
  }
  std::string kw_field;
  const json kw = template_kwargs(r, &kw_field);
  if (!kw.empty()) {
    out.template_request["chat_template_kwargs"] = kw;
    if (out.needs_jinja.empty()) out.needs_jinja = kw_field;
  }
  check_tool_choice(r);
  if (r.max_reasoning_tokens && *r.max_reasoning_tokens < 0)
    refuse("max_reasoning_tokens", "is " + std::to_string(*r.max_reasoning_tokens) + ": it must be 0 or more");
  return out;
}

StructuredOutput structured_output_of(const ChatRequest& r) {
  StructuredOutput s;
  const ResponseFormat& f = r.response_format;
  switch (f.kind) {
    case ResponseFormat::Kind::kText: return s;
    case ResponseFormat::Kind::kJsonObject:
      s.text = grammar::json_object_grammar();
      s.from = "response_format";
      break;
    case ResponseFormat::Kind::kJsonSchema: {
      const std::string field = "response_format.json_schema.schema";
      const json schema = f.schema.empty() ? json::object() : parse_json(f.schema, field);
      if (!schema.is_object() && !schema.is_boolean()) refuse(field, "must be a JSON object (a JSON schema)");
      grammar::JsonSchemaOptions o;
      o.strict = f.strict;
      try {
        s.text = grammar::json_schema_to_grammar(schema, o);
      } catch (const grammar::SchemaError& e) {
        refuse(field, std::string(": ") + e.what(), "unsupported_schema");
      }
      s.from = "response_format";
      break;
    }
    case ResponseFormat::Kind::kGrammar:
      if (f.grammar.empty()) refuse("grammar", "is empty");
      s.text = f.grammar;
      s.from = "grammar";
      break;
  }
  try {
    s.grammar = compile(s.text);
  } catch (const Error& e) {
    refuse(s.from, std::string(": ") + e.what(), "invalid_grammar");
  }
  return s;
}

namespace {

// An error's text as one line: control bytes escaped, cut at a UTF-8
// boundary after 400 bytes (a template's refusal may quote the client).
std::string one_line_cut(std::string_view s) {
  size_t n = std::min<size_t>(s.size(), 400);
  if (n < s.size())
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  std::string out;
  append_one_line(out, s.substr(0, n));
  if (n < s.size()) out += " ...";
  return out;
}

const ChatFormat& format_of(const ChatPlanInput& in, const ChatSetup& setup) {
  if (!setup.format) throw Error("plan_chat: no chat format");
  return in.has_tools && setup.tool_use ? *setup.tool_use : *setup.format;
}

ChatReasoningLimit reasoning_limit(const ChatPlanInput& in, const ReplyParserOptions& reply) {
  ChatReasoningLimit l;
  const ReasoningRoom room = reasoning_room(reply);
  if (room == ReasoningRoom::kNone) return l;
  const ReasoningBlock b = reasoning_block(reply.format.reasoning);
  l.active = true;
  l.open = b.open;
  l.close = b.close;
  l.starts_open = room == ReasoningRoom::kOpen;
  l.max_tokens = reply.thinking_off ? 0 : in.max_reasoning_tokens.value_or(kChatDefaultMaxReasoningTokens);
  return l;
}

}  // namespace

json template_request_for(const ChatSetup& setup, json r) {
  if (setup.reply_format.tools != ToolCallFormat::kHarmony || !r.contains("tools") || !r["tools"].is_array()) return r;
  for (auto& tool : r["tools"]) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    auto& fn = tool["function"];
    if (!fn.contains("description") || fn["description"].is_null()) fn["description"] = "";
  }
  return r;
}

ChatRequestError render_refusal(const ChatFormat& f, const ChatRequestError& e) {
  std::string_view what = e.what();
  if (const std::string prefix = f.name() + ": "; what.starts_with(prefix)) what.remove_prefix(prefix.size());
  return ChatRequestError("the built-in '" + f.name() + "' chat template cannot render this request: " +
                              one_line_cut(what),
                          e.field(), e.code());
}

ChatSegments render_chat(const ChatPlanInput& in, const ChatSetup& setup) {
  const ChatFormat& f = format_of(in, setup);
  if (f.renders_requests()) {
    json req = template_request_for(setup, in.template_request ? *in.template_request : json::object());
    req["add_generation_prompt"] = in.add_generation_prompt;
    try {
      return f.render_request_segments(req);
    } catch (const ChatRequestError& e) {
      throw render_refusal(f, e);
    }
  }
  if (!in.needs_jinja.empty()) {
    // reasoning_effort reaches the model only as a template variable (gpt-oss's reads it).
    const std::string why = in.needs_jinja == "reasoning_effort"
                                ? " has no effect on this model: a Jinja chat template that reads it (as gpt-oss's "
                                  "does) is needed"
                                : " needs a Jinja chat template";
    throw ChatRequestError("'" + in.needs_jinja + "'" + why + ", and " + setup.renderer + " renders with the built-in '" +
                               setup.format->name() + "' template (" + setup.jinja_hint + ")",
                           in.needs_jinja, "unsupported_parameter");
  }
  static const std::vector<ChatMessage> kNone;
  return setup.format->render_segments(in.messages ? *in.messages : kNone, in.add_generation_prompt);
}

ReplyParserOptions chat_reply_options(const ChatPlanInput& in, const ChatSetup& setup, const std::string& rendered) {
  ReplyParserOptions o;
  o.format = setup.reply_format;
  o.parse_tools = in.has_tools && in.choice.kind != ToolChoice::Kind::kNone && o.format.tools != ToolCallFormat::kNone;
  o.parse_reasoning = setup.parse_reasoning && o.format.reasoning != ReasoningFormat::kNone;
  o.starts_in_reasoning = o.parse_reasoning && prompt_opens_reasoning(rendered, o.format.reasoning);
  bool kwargs_off = false;
  if (in.template_request) {
    const auto kw = in.template_request->find("chat_template_kwargs");
    kwargs_off = kw != in.template_request->end() && kwargs_turn_thinking_off(*kw);
  }
  o.thinking_off = prompt_closes_reasoning(rendered, o.format.reasoning) || kwargs_off;
  o.parallel_tool_calls = in.parallel_tool_calls;
  return o;
}

bool reply_keeps_special_text(const ReplyParserOptions& o) {
  const bool tools = o.parse_tools && (o.format.tools == ToolCallFormat::kLlama3Json ||
                                       o.format.tools == ToolCallFormat::kMistral ||
                                       o.format.tools == ToolCallFormat::kGemma4 ||
                                       o.format.tools == ToolCallFormat::kHarmony);
  const bool reasoning = o.parse_reasoning && (o.format.reasoning == ReasoningFormat::kGemma4Channel ||
                                               o.format.reasoning == ReasoningFormat::kMistralThink ||
                                               o.format.reasoning == ReasoningFormat::kHarmony);
  return tools || reasoning;
}

ChatConstraint plan_constraint(const ChatPlanInput& in, const ReplyParserOptions& reply) {
  ChatConstraint c;
  const StructuredOutput& so = in.structured;
  ToolRequest tr;
  if (in.template_request && in.template_request->contains("tools")) tr.tools = (*in.template_request)["tools"];
  tr.choice = in.choice;
  tr.parallel_tool_calls = in.parallel_tool_calls;
  const bool call_required = in.has_tools && (in.choice.kind == ToolChoice::Kind::kRequired ||
                                              in.choice.kind == ToolChoice::Kind::kFunction);
  std::string text;
  if (call_required) {
    if (!so.text.empty()) refuse("tool_choice", "and '" + so.from + "' both constrain the reply: give one");
    text = tool_call_grammar(tr, reply);
    c.grammar_from = "tool_choice";
  }
  // Strict tools under "auto": the reply may say anything, but a call it
  // makes is valid (the formats strict_auto_grammar names; "" for the others,
  // whose calls are parsed, not enforced).
  const bool strict_auto = !call_required && so.text.empty() && in.has_tools &&
                           in.choice.kind == ToolChoice::Kind::kAuto && reply.parse_tools && has_strict_tools(tr);
  if (strict_auto) {
    text = strict_auto_grammar(tr, reply);
    if (!text.empty()) c.grammar_from = "tools";
  }
  c.tool_markers = tool_grammar_markers(reply.format);
  if (!text.empty()) {
    c.grammar_text = std::move(text);
    try {
      c.grammar = compile(c.grammar_text);
    } catch (const Error& e) {
      const char* what = c.grammar_from == "tools" ? "the strict tools' grammar" : "the tool-call grammar";
      throw Error(std::string(what) + " does not compile: " + e.what());
    }
    c.markers = c.tool_markers;
    if (call_required) c.reasoning = reasoning_limit(in, reply);
  } else if (!so.text.empty()) {
    c.grammar_from = so.from;
    c.grammar_text = structured_output_grammar(so.text, reply.format.reasoning, reasoning_room(reply));
    if (c.grammar_text != so.text) {  // a reasoning block before the answer: a new grammar, its budget set
      try {
        c.grammar = compile(c.grammar_text);
      } catch (const Error& e) {
        refuse(so.from, std::string("with the reasoning before it: ") + e.what(), "invalid_grammar");
      }
      c.reasoning = reasoning_limit(in, reply);
      c.markers = reasoning_grammar_markers(reply.format.reasoning);
    } else {
      // The check's compile (a front end that checked it itself may pass none).
      c.grammar = so.grammar ? so.grammar : compile(c.grammar_text);
    }
  }
  // The tool-call format's markers are admitted only when they include the grammar's.
  if (!all_in(c.markers, c.tool_markers)) c.tool_markers.clear();
  return c;
}

ChatPlan plan_chat(const ChatRequest& r, const ChatSetup& setup) {
  if (!setup.format) throw Error("plan_chat: no chat format");
  const ChatRenderForms forms = render_forms(r);
  ChatPlanInput in;
  in.messages = &forms.messages;
  in.template_request = &forms.template_request;
  in.needs_jinja = forms.needs_jinja;
  in.has_tools = !r.tools.empty();
  in.choice = tool_choice_of(r);
  in.parallel_tool_calls = r.parallel_tool_calls;
  in.structured = structured_output_of(r);
  in.max_reasoning_tokens = r.max_reasoning_tokens;
  in.add_generation_prompt = r.add_generation_prompt;
  ChatPlan p;
  try {
    p.segments = render_chat(in, setup);
  } catch (const ChatRequestError&) {
    throw;
  } catch (const Error& e) {
    throw ChatRequestError(std::string("the prompt cannot be rendered: ") + e.what(), "messages");
  }
  p.rendered = chat_text(p.segments);
  p.reply = chat_reply_options(in, setup, p.rendered);
  p.special_text = reply_keeps_special_text(p.reply);
  ChatConstraint c = plan_constraint(in, p.reply);
  p.grammar_text = std::move(c.grammar_text);
  p.grammar_from = std::move(c.grammar_from);
  p.grammar = std::move(c.grammar);
  p.markers = std::move(c.markers);
  p.tool_markers = std::move(c.tool_markers);
  p.reasoning = std::move(c.reasoning);
  return p;
}

int64_t chat_grammar_compiles() { return g_grammar_compiles.load(std::memory_order_relaxed); }

const char* chat_finish_reason(bool length, bool has_tool_calls) {
  if (length) return "length";
  return has_tool_calls ? "tool_calls" : "stop";
}

}  // namespace og
