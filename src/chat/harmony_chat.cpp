// The built-in harmony render of whole chat requests (harmony_chat.h): the
// functions namespace of the tools, written as gpt-oss's template's
// render_typescript_type and render_tool_namespace macros write it (their
// whitespace included: under trim_blocks and lstrip_blocks an expression tag
// that is not trimmed keeps the indentation before it), then the messages as
// its main loop renders them.
#include "chat/harmony_chat.h"

#include <string>
#include <string_view>

#include "base/error.h"
#include "chat/request_error.h"
#include "chat/jinja_chat.h"
#include "template/json_dump.h"

namespace og {
namespace {

using Json = nlohmann::ordered_json;

// What the built-in render refuses: the message opens with the request field
// it is about, which the error also carries as data.
template <class... A>
[[noreturn]] void refuse(const std::string& field, const A&... rest) {
  throw ChatRequestError(cat("harmony: ", field, rest...), field);
}

// Python's truth value of a JSON value as the template sees it.
bool truthy(const Json* v) {
  if (!v || v->is_null()) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number_integer() || v->is_number_unsigned()) return v->get<int64_t>() != 0;
  if (v->is_number_float()) return v->get<double>() != 0.0;
  if (v->is_string()) return !v->get_ref<const std::string&>().empty();
  return !v->empty();
}

// spec.key as Jinja's attribute lookup gives it: nullptr (undefined) unless
// spec is a mapping holding key.
const Json* field(const Json& spec, const char* key) {
  if (!spec.is_object()) return nullptr;
  auto it = spec.find(key);
  return it == spec.end() ? nullptr : &*it;
}

std::string tojson(const Json& v) { return jinja::to_json(jinja::value_from_json(v), jinja::JsonFormat{}); }

// A value as {{ }} or join prints it (Python's str): strings as they are,
// numbers as json.dumps writes them, None/True/False; containers print as
// Python reprs, which this render does not reproduce.
std::string py_str(const Json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number()) return tojson(v);
  refuse(where, " is ", v.is_array() ? "a list" : "an object",
         "; gpt-oss's template would print it as a Python value, which the built-in render does not reproduce");
}

// A text the template adds to a string with `+`: anything but a string is
// an error there (Python's TypeError, or an undefined value).
const std::string& str_of(const Json* v, const std::string& where) {
  if (!v) refuse(where, " is missing (gpt-oss's template needs it)");
  if (!v->is_string()) refuse(where, " is ", v->type_name(), ", not a string (gpt-oss's template adds it to text)");
  return v->get_ref<const std::string&>();
}

// `name not in (required or [])`.
bool optional_name(const std::string& name, const Json* required, const std::string& where) {
  if (!truthy(required)) return true;
  if (!required->is_array()) refuse(where + ".required", " is ", required->type_name(), ", not a list");
  for (const Json& r : *required)
    if (r.is_string() && r.get_ref<const std::string&>() == name) return false;
  return true;
}

// Characters (code points) in s, as Jinja's `length` counts them.
size_t n_chars(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string ts_type(const Json& spec, const std::string& where, int depth);

std::string ts_array(const Json& spec, const std::string& where, int depth) {
  std::string s;
  const Json* items = field(spec, "items");
  if (truthy(items)) {
    const Json* t = field(*items, "type");
    const std::string it = t && t->is_string() ? t->get<std::string>() : std::string();
    if (it == "string") s = "string[]";
    else if (it == "number" || it == "integer") s = "number[]";
    else if (it == "boolean") s = "boolean[]";
    else {
      const std::string inner = ts_type(*items, where + ".items", depth + 1);
      s = inner == "object | object" || n_chars(inner) > 50 ? "any[]" : inner + "[]";
    }
  } else {
    s = "any[]";
  }
  if (truthy(field(spec, "nullable"))) s += " | null";
  return s;
}

// oneOf: each variant's type, its description and default after it, joined
// by " | " and a new line. (The template's "any" for several object variants
// never applies: its flag is set inside the loop, a scope of its own.)
std::string ts_one_of(const Json& variants, const std::string& where, int depth) {
  if (!variants.is_array()) refuse(where + ".oneOf", " is ", variants.type_name(), ", not a list");
  std::string s;
  for (size_t i = 0; i < variants.size(); ++i) {
    const Json& v = variants[i];
    const std::string at = where + ".oneOf[" + std::to_string(i) + "]";
    s += ts_type(v, at, depth + 1);
    if (const Json* d = field(v, "description"); truthy(d)) s += "// " + str_of(d, at + ".description");
    if (const Json* d = field(v, "default")) s += std::string(20, ' ') + "// default: " + tojson(*d);
    if (i + 1 < variants.size()) s += " | \n";
  }
  return s;
}

// {\nNAME?: \n                TYPE, ...}: an object's properties (the
// template leaves the line break and indentation before each type).
std::string ts_object(const Json& spec, const std::string& where, int depth) {
  const Json* props = field(spec, "properties");
  if (!truthy(props)) return "object";
  if (!props->is_object()) refuse(where + ".properties", " is ", props->type_name(), ", not a mapping");
  const Json* required = field(spec, "required");
  std::string s = "{\n";
  bool first = true;
  for (auto it = props->begin(); it != props->end(); ++it) {
    if (!first) s += ", ";
    first = false;
    s += it.key();
    if (optional_name(it.key(), required, where)) s += "?";
    s += ": \n" + std::string(16, ' ') + ts_type(it.value(), where + ".properties." + it.key(), depth + 1);
  }
  return s + "}";
}

// render_typescript_type: a schema as a TypeScript type.
std::string ts_type(const Json& spec, const std::string& where, int depth) {
  if (depth >= 64) refuse(where, " nests schemas more than 64 deep");
  const Json* type = field(spec, "type");
  if (type && type->is_string() && type->get_ref<const std::string&>() == "array") return ts_array(spec, where, depth);
  if (type && type->is_array() && !type->empty()) {
    std::string s;
    for (size_t i = 0; i < type->size(); ++i)
      s += (i ? " | " : "") + py_str((*type)[i], where + ".type[" + std::to_string(i) + "]");
    return s;
  }
  if (const Json* one_of = field(spec, "oneOf"); truthy(one_of)) return ts_one_of(*one_of, where, depth);
  const std::string t = type && type->is_string() ? type->get<std::string>() : std::string();
  if (t == "string") {
    const Json* e = field(spec, "enum");
    if (truthy(e)) {
      if (!e->is_array()) refuse(where + ".enum", " is ", e->type_name(), ", not a list");
      std::string s = "\"";
      for (size_t i = 0; i < e->size(); ++i)
        s += (i ? "\" | \"" : "") + py_str((*e)[i], where + ".enum[" + std::to_string(i) + "]");
      return s + "\"";
    }
    return truthy(field(spec, "nullable")) ? "string | null" : "string";
  }
  if (t == "number" || t == "integer") return "number";
  if (t == "boolean") return "boolean";
  if (t == "object") return ts_object(spec, where, depth);
  return "any";
}

// One tool: "// DESCRIPTION\ntype NAME = (_: {\n...}) => any;\n\n".
std::string ts_tool(const Json& tool, const std::string& where) {
  const Json* fn = field(tool, "function");
  if (!fn || !fn->is_object()) refuse(where, " has no \"function\" object");
  const std::string at = where + ".function";
  // A tool without a description (OpenAI's is optional): an empty one, as
  // the server gives gpt-oss's template (server/generation.cpp).
  const Json* d = field(*fn, "description");
  std::string s = "// " + (d && !d->is_null() ? str_of(d, at + ".description") : std::string()) + "\n";
  s += "type " + str_of(field(*fn, "name"), at + ".name") + " = ";
  const Json* params = field(*fn, "parameters");
  const Json* props = params ? field(*params, "properties") : nullptr;
  if (!truthy(params) || !truthy(props)) return s + "() => any;\n\n";
  if (!props->is_object()) refuse(at + ".parameters.properties", " is ", props->type_name(), ", not a mapping");
  const Json* required = field(*params, "required");
  s += "(_: {\n";
  for (auto it = props->begin(); it != props->end(); ++it) {
    const Json& spec = it.value();
    const std::string p = at + ".parameters.properties." + it.key();
    if (const Json* d = field(spec, "description"); truthy(d)) s += "// " + str_of(d, p + ".description") + "\n";
    s += it.key();
    if (optional_name(it.key(), required, at + ".parameters")) s += "?";
    s += ": " + ts_type(spec, p, 0);
    if (const Json* d = field(spec, "default")) {
      if (truthy(field(spec, "enum"))) s += ", // default: " + str_of(d, p + ".default (with an enum)");
      else if (truthy(field(spec, "oneOf"))) s += "// default: " + str_of(d, p + ".default (with oneOf)");
      else s += ", // default: " + tojson(*d);
    }
    s += ",\n";
  }
  return s + "}) => any;\n\n";
}

// Builds segments: t() the template's own text, c() text from the request.
class Out {
 public:
  Out& t(std::string_view s) { return add(s, true); }
  Out& c(std::string_view s) { return add(s, false); }
  ChatSegments take() { return std::move(segs_); }

 private:
  Out& add(std::string_view s, bool is_template) {
    if (s.empty()) return *this;
    if (!segs_.empty() && segs_.back().is_template == is_template) segs_.back().text += s;
    else segs_.push_back({std::string(s), is_template});
    return *this;
  }
  ChatSegments segs_;
};

// The variables the request sets, as JinjaChatTemplate::request_vars reads them.
struct Request {
  Json messages, tools;
  bool add_generation_prompt = true;
  std::string identity = std::string(kHarmonyIdentity), effort = "medium";
};

Request read_request(const Json& request) {
  OG_CHECK(request.is_object(), "the request must be a JSON object");
  OG_CHECK(request.contains("messages"), "the request has no \"messages\"");
  Request r;
  r.messages = normalize_chat_messages(request["messages"]);
  if (r.messages.empty())
    throw ChatRequestError("harmony: \"messages\" is empty (gpt-oss's template reads the first message)", "messages");
  if (const Json* g = field(request, "add_generation_prompt")) {
    OG_CHECK(g->is_boolean(), "\"add_generation_prompt\" must be true or false");
    r.add_generation_prompt = g->get<bool>();
  }
  if (const Json* t = field(request, "tools"); t && !t->is_null()) {
    if (!t->is_array()) throw ChatRequestError(cat("harmony: \"tools\" is ", t->type_name(), ", not a list"), "tools");
    r.tools = *t;
  }
  if (const Json* kw = field(request, "chat_template_kwargs")) {
    OG_CHECK(kw->is_object(), "\"chat_template_kwargs\" must be an object");
    for (const char* key : {"messages", "tools", "add_generation_prompt"})
      if (kw->contains(key))
        refuse(std::string("chat_template_kwargs.") + key,
               " would replace the request's own; the built-in render does not take it");
    if (const Json* b = field(*kw, "builtin_tools"); truthy(b))
      refuse("chat_template_kwargs.builtin_tools",
             " (gpt-oss's browser and python tools) needs the model's Jinja template; the built-in render has only "
             "function tools");
    if (const Json* i = field(*kw, "model_identity")) r.identity = str_of(i, "chat_template_kwargs.model_identity");
    if (const Json* e = field(*kw, "reasoning_effort")) r.effort = str_of(e, "chat_template_kwargs.reasoning_effort");
  }
  return r;
}

// A message's role ("" when it has none or not a string).
std::string role_of(const Json& msg) {
  const Json* r = field(msg, "role");
  return r && r->is_string() ? r->get<std::string>() : std::string();
}

// The text of a content-like field the template prints with {{ }}: a string,
// or nothing when missing or null.
std::string text_or_empty(const Json& msg, const char* key, const std::string& where) {
  const Json* v = field(msg, key);
  if (!v || v->is_null()) return {};
  return str_of(v, where + "." + key);
}

// The template's refusal of channel markup inside an assistant message's text.
void check_no_channels(const Json& msg, const char* key, const std::string& where) {
  const Json* v = field(msg, key);
  if (!v) return;
  const std::string& s = str_of(v, where + "." + key);
  if (s.find("<|channel|>analysis<|message|>") != std::string::npos ||
      s.find("<|channel|>final<|message|>") != std::string::npos)
    refuse(where + "." + key,
           " holds <|channel|> tags; pass analysis text in 'thinking' and final text in 'content' (as gpt-oss's "
           "template requires)");
}

// An assistant message with tool calls: its analysis message unless a later
// assistant message without calls holds the final answer, then the first call.
// Returns the call's function name.
std::string render_call(Out& out, const Json& msgs, size_t i, const std::string& where) {
  const Json& msg = msgs[i];
  const Json& calls = msg["tool_calls"];
  if (!calls.is_array() || calls.empty())
    refuse(where + ".tool_calls", " is ", calls.is_array() ? "empty" : calls.type_name(),
           " (gpt-oss's template renders its first call)");
  bool final_later = false;
  for (size_t k = i + 1; k < msgs.size(); ++k)
    final_later |= role_of(msgs[k]) == "assistant" && !msgs[k].contains("tool_calls");
  const Json* call = &calls[0];
  if (const Json* fn = field(*call, "function"); truthy(fn)) call = fn;
  const std::string content = text_or_empty(msg, "content", where), thinking = text_or_empty(msg, "thinking", where);
  if (!content.empty() && !thinking.empty())
    refuse(where, " has both content and thinking with tool calls (gpt-oss's template takes the analysis in one of "
                  "them)");
  const std::string& analysis = content.empty() ? thinking : content;
  if (!analysis.empty() && !final_later)
    out.t("<|start|>assistant<|channel|>analysis<|message|>").c(analysis).t("<|end|>");
  const std::string& name = str_of(field(*call, "name"), where + ".tool_calls[0].function.name");
  const Json* type = field(*call, "content_type");
  const Json* args = field(*call, "arguments");
  if (!args) refuse(where + ".tool_calls[0].function.arguments", " is missing");
  out.t("<|start|>assistant to=functions.").c(name).t("<|channel|>commentary ");
  if (type) out.c(py_str(*type, where + ".tool_calls[0].function.content_type"));
  else out.t("json");
  out.t("<|message|>").c(tojson(*args)).t("<|call|>");
  return name;
}

// messages[first...]: the conversation after the developer's instructions.
void render_messages(Out& out, const Request& r, size_t first) {
  const Json& msgs = r.messages;
  std::string last_call;  // the function of the latest tool call; "" after a final answer or before any call
  for (size_t i = first; i < msgs.size(); ++i) {
    const Json& msg = msgs[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    const std::string role = role_of(msg);
    if (role == "assistant") {
      check_no_channels(msg, "content", where);
      check_no_channels(msg, "thinking", where);
      if (msg.contains("tool_calls")) {
        last_call = render_call(out, msgs, i, where);
      } else if (i + 1 == msgs.size() && !r.add_generation_prompt) {
        if (const Json* th = field(msg, "thinking"))
          out.t("<|start|>assistant<|channel|>analysis<|message|>").c(str_of(th, where + ".thinking")).t("<|end|>");
        out.t("<|start|>assistant<|channel|>final<|message|>").c(str_of(field(msg, "content"), where + ".content"));
        out.t("<|return|>");
      } else {
        out.t("<|start|>assistant<|channel|>final<|message|>").c(str_of(field(msg, "content"), where + ".content"));
        out.t("<|end|>");
        last_call.clear();
      }
    } else if (role == "tool") {
      if (last_call.empty())
        refuse(where, " has the tool role, but no earlier assistant message has a tool call (gpt-oss's template "
                      "names the result after that call)");
      const Json* content = field(msg, "content");
      if (!content) refuse(where + ".content", " is missing");
      out.t("<|start|>functions.").c(last_call).t(" to=assistant<|channel|>commentary<|message|>");
      if (content->is_string()) {
        const std::string q = tojson(*content);  // the quotes are the template's, the escaped text the result's
        out.t("\"").c(std::string_view(q).substr(1, q.size() - 2)).t("\"");
      } else {
        out.c(tojson(*content));
      }
      out.t("<|end|>");
    } else if (role == "user") {
      out.t("<|start|>user<|message|>").c(str_of(field(msg, "content"), where + ".content")).t("<|end|>");
    } else if (role == "system" || role == "developer") {
      refuse(where, " is a ", role, " message; this format takes one, as the first message (gpt-oss's template "
                    "drops later ones)");
    } else {
      refuse(where, " has role '", role, "' (expected system, developer, user, assistant or tool)");
    }
  }
}

}  // namespace

std::string harmony_functions_namespace(const Json& tools) {
  if (!tools.is_array()) throw ChatRequestError(cat("harmony: \"tools\" is ", tools.type_name(), ", not a list"), "tools");
  std::string s = "## functions\n\nnamespace functions {\n\n";
  for (size_t i = 0; i < tools.size(); ++i) s += ts_tool(tools[i], "tools[" + std::to_string(i) + "]");
  return s + "} // namespace functions";
}

ChatSegments render_harmony_request(const Json& request, int64_t now_unix) {
  const Request r = read_request(request);
  const bool has_tools = !r.tools.empty();
  Out out;
  // The system message with the request's model_identity and reasoning_effort
  // (chat_template_kwargs) as text: they are the request's, not the template's
  // (the defaults, the same text, stay template text as the built-in render has them).
  const std::string system = harmony_system_message("", utc_date(now_unix), "", has_tools);
  const size_t effort_at = system.find("\n\nReasoning: ") + 13;
  auto field = [&](const std::string& text, std::string_view default_text) {
    if (text == default_text) out.t(text);
    else out.c(text);
  };
  out.t("<|start|>system<|message|>");
  field(r.identity, kHarmonyIdentity);
  out.t(system.substr(0, effort_at));
  field(r.effort, "medium");
  out.t(system.substr(effort_at) + "<|end|>");
  // The first message, when system or developer, is the developer's instructions.
  const std::string role0 = role_of(r.messages[0]);
  const bool developer = role0 == "system" || role0 == "developer";
  const std::string instructions = developer ? text_or_empty(r.messages[0], "content", "messages[0]") : "";
  if (!instructions.empty() || has_tools) {
    out.t("<|start|>developer<|message|>");
    if (!instructions.empty()) out.t("# Instructions\n\n").c(instructions).t("\n\n");
    if (has_tools) out.t("# Tools\n\n").c(harmony_functions_namespace(r.tools));
    out.t("<|end|>");
  }
  render_messages(out, r, developer ? 1 : 0);
  if (r.add_generation_prompt) out.t("<|start|>assistant");
  return out.take();
}

}  // namespace og
