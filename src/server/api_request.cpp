// Parsers of the OpenAI request bodies into GenerationRequest and the
// tokenize/detokenize structs. Every field is read through one typed accessor
// that names the field in its error; a field we do not know is accepted and
// listed in `ignored` (the server logs each name once), as vLLM does.
#include "server/api_request.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <set>

#include "chat/content_part.h"
#include "chat/request_error.h"
#include "grammar/json_schema.h"
#include "runtime/generation_limits.h"
#include "server/api_error.h"
#include "server/image_url_fetch.h"
#include "server/json_body.h"

namespace og::server {

using json = nlohmann::ordered_json;

namespace {

// OpenAI fields that change nothing about the output (metadata, and an echoed
// assistant message's refusal/annotations): accepted without a log line.
const std::set<std::string> kQuietFields = {"user", "store", "metadata", "service_tier", "refusal", "annotations",
                                            "audio"};

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

[[noreturn]] void wrong_type(const std::string& field, const char* want, const json& v) {
  bad_request("'" + field + "' must be " + want + ", not " + type_name(v), field);
}

[[noreturn]] void out_of_range(const std::string& field, const json& v, int64_t lo, int64_t hi) {
  bad_request("'" + field + "' is " + v.dump() + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "]: it must be an integer in that range",
              field);
}

// The body's fields, each read once; what is left at the end is unknown.
class Fields {
 public:
  // prefix: where the object is ("messages[0]."), for the names of ignored fields.
  Fields(const json& obj, std::vector<std::string>* ignored, std::string prefix = "")
      : obj_(obj), ignored_(ignored), prefix_(std::move(prefix)) {}

  // The value of `name` when present and not null.
  const json* get(const std::string& name) {
    seen_.insert(name);
    auto it = obj_.find(name);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<bool> boolean(const std::string& name) {
    const json* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
    return v->get<bool>();
  }

  std::optional<int64_t> integer(const std::string& name, int64_t lo, int64_t hi) {
    const json* v = get(name);
    if (!v) return std::nullopt;
    return int_value(name, *v, lo, hi);
  }

  // A number of any value: its bound is check_generation_settings()'s.
  std::optional<double> real(const std::string& name) {
    const json* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong_type(name, "a number", *v);
    return v->get<double>();
  }

  // An integer of any 64-bit value, likewise. A whole number written as a
  // float past 32 bits (1e12: JSON has no other way past 2^64) is read as the
  // integer it is, so its bound reports it; a smaller one (2.0) is a type error.
  std::optional<int64_t> any_integer(const std::string& name) {
    const json* v = get(name);
    if (!v) return std::nullopt;
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) >= 0x1p31)
        return d >= 0x1p63 ? std::numeric_limits<int64_t>::max()
                           : d < -0x1p63 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(d);
    }
    return int_value(name, *v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  }

  std::optional<std::string> string(const std::string& name) {
    const json* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong_type(name, "a string", *v);
    return v->get<std::string>();
  }

  // Every field not read is listed as ignored (the quiet ones are not).
  void note_unknown() const {
    if (!ignored_) return;
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (seen_.count(it.key()) || kQuietFields.count(it.key())) continue;
      ignored_->push_back(prefix_ + it.key());
    }
  }

  static int64_t int_value(const std::string& name, const json& v, int64_t lo, int64_t hi) {
    if (v.is_number_float()) {
      // An integer past 64 bits (2^64 and up, below -2^63) is parsed as a
      // float: a whole number out of range is a range error; a fraction, or a
      // whole number in range written as a number (2.0, 1e3), a type error.
      const double d = v.get<double>();
      const bool whole = std::isfinite(d) && std::floor(d) == d;
      if (!whole || (d >= static_cast<double>(lo) && d <= static_cast<double>(hi) && std::fabs(d) < 0x1p63))
        wrong_type(name, "an integer", v);
      out_of_range(name, v, lo, hi);
    }
    if (!v.is_number_integer()) wrong_type(name, "an integer", v);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      out_of_range(name, v, lo, hi);
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) out_of_range(name, v, lo, hi);
    return x;
  }

 private:
  const json& obj_;
  std::vector<std::string>* ignored_;
  std::string prefix_;
  std::set<std::string> seen_;
};

// Message content: a string, or an array of {"type": "text", "text": ...} parts (joined).
std::string message_content(const json& c, const std::string& where, std::vector<std::string>* ignored) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) wrong_type(where, "a string or an array of text parts", c);
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!c[i].is_object()) wrong_type(at, "an object", c[i]);
    Fields part(c[i], ignored, at + ".");
    const auto type = part.string("type");
    if (!type) bad_request("'" + at + ".type' is required", at + ".type");
    if (*type != "text")
      bad_request("'" + at + ".type' is " + client_text(*type) + ": expected text, image_url or image", at + ".type",
                  "unsupported_parameter");
    const auto t = part.string("text");
    if (!t) bad_request("'" + at + ".text' is required", at + ".text");
    part.note_unknown();
    text += *t;
  }
  return text;
}

// Whether a content array holds an image part (then it is read as parts).
bool has_image_part(const json& c) {
  if (!c.is_array()) return false;
  for (const json& part : c) {
    const json* type = part.is_object() && part.contains("type") ? &part["type"] : nullptr;
    if (type && type->is_string() && (*type == "image_url" || *type == "image")) return true;
  }
  return false;
}

// An image part whose URL is http(s): fetched when serve allows it
// (--allow-image-urls, image_url_fetch.h), else refused saying how; nullopt
// for every other part (content_part_from_json reads it).
std::optional<ChatContentPart> fetched_part(const json& part, const std::string& where) {
  if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) return std::nullopt;
  const std::string type = part["type"].get<std::string>();
  if ((type != "image_url" && type != "image") || !part.contains(type)) return std::nullopt;
  const json& v = part[type];
  const json* u = v.is_string() ? &v : v.is_object() && v.contains("url") ? &v["url"] : nullptr;
  if (!u || !u->is_string()) return std::nullopt;
  const std::string url = u->get<std::string>();
  std::string scheme = url.substr(0, 8);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme.rfind("http://", 0) != 0 && scheme != "https://") return std::nullopt;
  const std::string field = where + "." + type + (v.is_string() ? "" : ".url");
  const ImageUrlFetch f = image_url_fetch();
  if (!f.allowed)
    bad_request("'" + field + "' is " + client_text(url.substr(0, 40)) +
                    ": image URLs are not fetched; send a data: URL or start serve with --allow-image-urls",
                field);
  try {
    return ChatContentPart::of_image(fetch_image_url(url, f));
  } catch (const og::Error& e) {
    bad_request("'" + field + "': " + e.what(), field);
  }
}

// A content array with images as the message's parts (chat/content_part.h:
// data: URLs decoded, http(s) refused), each refusal a 400 naming the field.
std::vector<ChatContentPart> content_parts(const json& c, const std::string& where) {
  std::vector<ChatContentPart> parts;
  try {
    for (size_t i = 0; i < c.size(); ++i) {
      const std::string at = where + "[" + std::to_string(i) + "]";
      if (std::optional<ChatContentPart> p = fetched_part(c[i], at)) parts.push_back(std::move(*p));
      else parts.push_back(content_part_from_json(c[i], at));
    }
  } catch (const ChatRequestError& e) {
    bad_request(e.what(), e.field(), e.code());
  }
  return parts;
}

// A function name as OpenAI allows it: 1-64 of [A-Za-z0-9_-] (dots and
// colons too, which some clients' namespaced tools use).
void check_function_name(const std::string& name, const std::string& where) {
  bool ok = !name.empty() && name.size() <= 64;
  for (unsigned char c : name)
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':')) ok = false;
  if (!ok)
    bad_request("'" + where + "' is " + client_text(name) + ": a function name is 1-64 letters, digits, _ - . :",
                where);
}

// An assistant message's tool_calls, with each call's arguments (a JSON string
// as OpenAI sends it, or already an object) checked and kept as JSON text
// (render_forms gives the template the mapping).
std::vector<ToolCall> parse_tool_calls(const json& calls, const std::string& where, std::vector<std::string>* ignored) {
  if (!calls.is_array()) wrong_type(where, "an array", calls);
  std::vector<ToolCall> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!calls[i].is_object()) wrong_type(at, "an object", calls[i]);
    Fields cf(calls[i], ignored, at + ".");
    ToolCall call;
    if (auto id = cf.string("id")) call.id = *id;
    const auto type = cf.string("type").value_or("function");
    if (type != "function")
      bad_request("'" + at + ".type' is " + client_text(type) + ": only function calls are supported", at + ".type");
    const json* fn = cf.get("function");
    if (!fn) bad_request("'" + at + ".function' is required", at + ".function");
    if (!fn->is_object()) wrong_type(at + ".function", "an object", *fn);
    Fields ff(*fn, ignored, at + ".function.");
    const auto name = ff.string("name");
    if (!name) bad_request("'" + at + ".function.name' is required", at + ".function.name");
    call.name = *name;
    const json* args = ff.get("arguments");
    if (!args) {
      call.arguments = "";  // {}
    } else if (args->is_string()) {
      // Client JSON inside a string: bounded as the body is.
      JsonParse parsed = parse_json_bounded(args->get<std::string>());
      if (parsed.limit)
        bad_request("'" + at + ".function.arguments' " + parsed.error, at + ".function.arguments", "json_too_complex");
      if (!parsed.error.empty())
        bad_request("'" + at + ".function.arguments' is not valid JSON: " + client_text(args->get<std::string>(), 80),
                    at + ".function.arguments");
      call.arguments = parsed.value.dump();
    } else if (args->is_object()) {
      call.arguments = args->dump();
    } else {
      wrong_type(at + ".function.arguments", "a JSON string or an object", *args);
    }
    ff.note_unknown();
    cf.note_unknown();
    out.push_back(std::move(call));
  }
  return out;
}

// The messages, checked (render_forms builds their forms, and what of them
// only a Jinja template renders, from these).
std::vector<ChatRequestMessage> parse_messages(Fields& f, std::vector<std::string>* ignored) {
  const json* m = f.get("messages");
  if (!m) bad_request("'messages' is required", "messages");
  if (!m->is_array()) wrong_type("messages", "an array", *m);
  if (m->empty()) bad_request("'messages' is empty: give at least one message", "messages");
  std::vector<ChatRequestMessage> out;
  for (size_t i = 0; i < m->size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const json& msg = (*m)[i];
    if (!msg.is_object()) wrong_type(at, "an object", msg);
    Fields mf(msg, ignored, at + ".");
    auto role = mf.string("role");
    if (!role) bad_request("'" + at + ".role' is required", at + ".role");
    if (*role != "system" && *role != "developer" && *role != "user" && *role != "assistant" && *role != "tool")
      bad_request("'" + at + ".role' is " + client_text(*role) + ": expected system, developer, user, assistant or tool",
                  at + ".role");
    ChatRequestMessage n;
    n.role = *role;
    const json* content = mf.get("content");
    const json* calls = *role == "assistant" ? mf.get("tool_calls") : nullptr;
    if (!content && *role != "assistant")
      bad_request("'" + at + ".content' is required", at + ".content");
    // An assistant turn of tool calls only renders with content "" as vLLM
    // gives templates (many call string methods on content; with null 11 of
    // the 56 real templates we test raise, and 5 print "None" into the prompt).
    if (content && has_image_part(*content)) n.parts = content_parts(*content, at + ".content");
    else if (content) n.content = message_content(*content, at + ".content", ignored);
    n.name = mf.string("name");
    if (*role == "tool") n.tool_call_id = mf.string("tool_call_id");
    if (calls) {
      n.tool_calls = parse_tool_calls(*calls, at + ".tool_calls", ignored);
      n.tool_calls_listed = true;
    }
    if (*role == "assistant") {
      n.reasoning_content = mf.string("reasoning_content");
      // gpt-oss's template (and the built-in harmony) read the analysis that
      // led to a call from `thinking`: a client may send it so, and an echoed
      // reply's reasoning_content before its calls is passed as it too (as
      // llama.cpp's server does, render_forms), so the next turn sees why the
      // call was made.
      n.thinking = mf.string("thinking");
    }
    mf.note_unknown();
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<std::string> parse_stop(Fields& f) {
  const json* s = f.get("stop");
  if (!s) return {};
  std::vector<std::string> out;
  if (s->is_string()) {
    out.push_back(s->get<std::string>());
  } else if (s->is_array()) {
    for (size_t i = 0; i < s->size(); ++i) {
      if (!(*s)[i].is_string()) wrong_type("stop[" + std::to_string(i) + "]", "a string", (*s)[i]);
      out.push_back((*s)[i].get<std::string>());
    }
  } else {
    wrong_type("stop", "a string or an array of strings", *s);
  }
  return out;
}


// The first mistake check_generation_settings() finds, as a 400 naming the
// JSON field: the bounds and the words are the ones every edge uses.
void enforce_limits(const GenerationSettings& s, const std::string& max_tokens_field = "max_tokens",
                    bool stop_is_string = false) {
  const auto found = check_generation_settings(s);
  if (found.empty()) return;
  const LimitViolation& v = found.front();
  const std::string field = v.field == LimitField::kMaxTokens ? max_tokens_field : limit_field_name(v.field);
  std::string shown = field;
  if (v.index >= 0 && !(v.field == LimitField::kStop && stop_is_string)) shown += "[" + std::to_string(v.index) + "]";
  bad_request(describe_violation(v, "'" + shown + "'"), field);
}

void parse_structured_output(Fields& f, GenerationParams& p);

// The settings both endpoints share.
GenerationParams parse_params(Fields& f, Endpoint ep, std::vector<std::string>* ignored) {
  GenerationParams p;
  GenerationSettings lim;  // checked at once below, against the bounds every edge shares
  const auto max_tokens = f.any_integer("max_tokens");
  lim.max_tokens = max_tokens;
  enforce_limits(lim);
  const auto max_completion = ep == Endpoint::kChat ? f.any_integer("max_completion_tokens") : std::nullopt;
  lim.max_tokens = max_completion;
  enforce_limits(lim, "max_completion_tokens");
  // Completions may ask for 0 tokens with echo (the prompt's logprobs only).
  p.max_zero = max_tokens && *max_tokens == 0;
  if (ep == Endpoint::kChat && ((max_tokens && *max_tokens == 0) || (max_completion && *max_completion == 0)))
    bad_request(std::string("'") + (max_completion ? "max_completion_tokens" : "max_tokens") +
                    "' is 0: a chat reply needs at least 1 token",
                max_completion ? "max_completion_tokens" : "max_tokens");
  if (max_tokens && max_completion && *max_tokens != *max_completion)
    bad_request("'max_tokens' and 'max_completion_tokens' are the same setting and differ: give one",
                "max_completion_tokens");
  p.max_tokens = max_completion ? max_completion : max_tokens;
  lim.max_tokens.reset();
  p.temperature = lim.temperature = f.real("temperature");
  p.top_p = lim.top_p = f.real("top_p");
  lim.top_k = f.any_integer("top_k");
  if (lim.top_k) p.top_k = *lim.top_k < 0 ? 0 : *lim.top_k;  // -1 = off, as vLLM
  p.min_p = lim.min_p = f.real("min_p");
  p.repetition_penalty = lim.repeat_penalty = f.real("repetition_penalty");
  if (const json* s = f.get("seed"))
    p.seed = static_cast<uint64_t>(Fields::int_value("seed", *s, std::numeric_limits<int64_t>::min(),
                                                     std::numeric_limits<int64_t>::max()));
  if (auto salt = f.string("cache_salt")) {
    if (salt->empty()) bad_request("'cache_salt' must be a non-empty string when given", "cache_salt");
    if (salt->size() > 1024)
      bad_request("'cache_salt' is " + std::to_string(salt->size()) + " bytes; at most 1024", "cache_salt");
    p.cache_salt = std::move(*salt);
  }
  p.presence_penalty = lim.presence_penalty = f.real("presence_penalty");
  p.frequency_penalty = lim.frequency_penalty = f.real("frequency_penalty");
  // Checked against the server's --max-n where the request meets the model.
  lim.n = f.any_integer("n");
  if (lim.n) p.n = *lim.n;
  if (const json* lb = f.get("logit_bias")) {
    if (!lb->is_object()) wrong_type("logit_bias", "an object of token id -> bias", *lb);
    if (lb->size() > limits::kLogitBiasEntries) {
      lim.logit_bias.resize(lb->size());  // the count alone is the mistake: its message
      enforce_limits(lim);
    }
    for (auto it = lb->begin(); it != lb->end(); ++it) {
      const std::string& key = it.key();
      // An integer key: its range is the vocabulary's (runtime/token_ids.h, at generation).
      int64_t id = -1;
      const size_t from = key.starts_with('-') ? 1 : 0;
      bool digits = key.size() > from && key.size() - from <= 10;
      for (size_t i = from; i < key.size(); ++i) digits = digits && key[i] >= '0' && key[i] <= '9';
      if (digits) id = std::stoll(key);
      if (!digits || id > std::numeric_limits<int32_t>::max() || id < std::numeric_limits<int32_t>::min())
        bad_request("'logit_bias' key " + client_text(key) + " is not a token id", "logit_bias");
      if (!it->is_number()) wrong_type("logit_bias[" + key + "]", "a number", *it);
      p.logit_bias.emplace_back(id, it->get<double>());
    }
    lim.logit_bias = p.logit_bias;
  }
  p.stop = lim.stop = parse_stop(f);
  const json* stop = f.get("stop");
  enforce_limits(lim, "max_tokens", stop && stop->is_string());
  parse_structured_output(f, p);
  p.ignore_eos = f.boolean("ignore_eos").value_or(false);
  p.stream = f.boolean("stream").value_or(false);
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    if (!p.stream) bad_request("'stream_options' is only allowed with 'stream': true", "stream_options");
    Fields sf(*so, ignored, "stream_options.");
    p.include_usage = sf.boolean("include_usage").value_or(false);
    sf.boolean("continuous_usage_stats");  // vLLM's: usage is only sent at the end; false is what we do
    sf.note_unknown();
  }
  return p;
}

// Settings OpenAI has that this server cannot honour: an error unless absent or neutral.
void reject_unsupported(Fields& f) {
  for (const char* name : {"functions", "function_call", "modalities", "prediction", "web_search_options"})
    if (f.get(name))
      bad_request(std::string("'") + name + "' is not supported by this server" +
                      (name[0] == 'f' ? " (send 'tools' and 'tool_choice', which replace it)" : ""),
                  name, "unsupported_parameter");
}

// A grammar from JSON-schema text, or a 400 naming the field and the keyword.
std::string schema_grammar(const json& schema, bool strict, const std::string& field) {
  if (!schema.is_object() && !schema.is_boolean()) wrong_type(field, "an object (a JSON schema)", schema);
  grammar::JsonSchemaOptions o;
  o.strict = strict;
  try {
    return grammar::json_schema_to_grammar(schema, o);
  } catch (const grammar::SchemaError& e) {
    bad_request("'" + field + "': " + e.what(), field, "unsupported_schema");
  }
}

std::shared_ptr<const grammar::Grammar> compile_grammar(const std::string& text, const std::string& field) {
  try {
    return grammar::Grammar::parse(text);
  } catch (const og::Error& e) {
    bad_request("'" + field + "': " + e.what(), field, "invalid_grammar");
  }
}

// response_format, llama-server's json_schema and grammar: at most one.
void parse_structured_output(Fields& f, GenerationParams& p) {
  std::string text, from;
  auto take = [&](std::string t, const std::string& field) {
    if (!from.empty())
      bad_request("'" + field + "' and '" + from + "' both constrain the reply: give one", field);
    text = std::move(t);
    from = field;
  };
  if (const json* rf = f.get("response_format")) {
    if (!rf->is_object()) wrong_type("response_format", "an object", *rf);
    const json type = rf->value("type", json());
    if (type == "json_object") {
      take(grammar::json_object_grammar(), "response_format");
    } else if (type == "json_schema") {
      const json js = rf->value("json_schema", json());
      if (!js.is_object())
        bad_request("'response_format.json_schema' must be an object with a 'schema'", "response_format.json_schema");
      const json strict = js.value("strict", json(false));
      if (!strict.is_boolean() && !strict.is_null()) wrong_type("response_format.json_schema.strict", "a boolean", strict);
      const json schema = js.contains("schema") ? js["schema"] : json::object();
      take(schema_grammar(schema, strict.is_boolean() && strict.get<bool>(), "response_format.json_schema.schema"),
           "response_format");
    } else if (type != "text") {
      bad_request("'response_format.type' must be text, json_object or json_schema", "response_format.type");
    }
  }
  if (const json* s = f.get("json_schema")) take(schema_grammar(*s, false, "json_schema"), "json_schema");
  if (const json* g = f.get("grammar")) {
    if (!g->is_string()) wrong_type("grammar", "a string (a GBNF grammar)", *g);
    take(g->get<std::string>(), "grammar");
  }
  // The reasoning budget of a constrained reply (structured output or a forced tool call).
  if (const auto r = f.any_integer("max_reasoning_tokens")) {
    GenerationSettings lim;
    lim.max_reasoning_tokens = r;
    enforce_limits(lim);
    p.max_reasoning_tokens = *r;
  }
  if (from.empty()) return;
  p.grammar = compile_grammar(text, from);
  p.grammar_from = from;
  p.grammar_text = std::move(text);
}

// tools: [{"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}],
// each passed to the template as sent (ChatTool::as_sent).
std::vector<ChatTool> parse_tools(Fields& f, std::vector<std::string>* ignored) {
  const json* t = f.get("tools");
  if (!t) return {};
  if (!t->is_array()) wrong_type("tools", "an array", *t);
  if (t->size() > kMaxTools)
    bad_request("'tools' has " + std::to_string(t->size()) + " tools; at most " + std::to_string(kMaxTools), "tools");
  std::set<std::string> names;
  std::vector<ChatTool> out;
  for (size_t i = 0; i < t->size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const json& tool = (*t)[i];
    if (!tool.is_object()) wrong_type(at, "an object", tool);
    Fields tf(tool, ignored, at + ".");
    const auto type = tf.string("type");
    if (!type) bad_request("'" + at + ".type' is required", at + ".type");
    if (*type != "function")
      bad_request("'" + at + ".type' is " + client_text(*type) + ": only function tools are supported", at + ".type",
                  "unsupported_parameter");
    const json* fn = tf.get("function");
    if (!fn) bad_request("'" + at + ".function' is required", at + ".function");
    if (!fn->is_object()) wrong_type(at + ".function", "an object", *fn);
    Fields ff(*fn, ignored, at + ".function.");
    const auto name = ff.string("name");
    if (!name) bad_request("'" + at + ".function.name' is required", at + ".function.name");
    check_function_name(*name, at + ".function.name");
    if (!names.insert(*name).second)
      bad_request("'" + at + ".function.name' " + client_text(*name) + " is given twice", at + ".function.name");
    ChatTool ct;
    ct.name = *name;
    ct.description = ff.string("description");
    if (const json* params = ff.get("parameters")) {
      if (!params->is_object()) wrong_type(at + ".function.parameters", "an object (a JSON schema)", *params);
      ct.parameters = params->dump();
    }
    ct.strict = ff.boolean("strict").value_or(false);
    ff.note_unknown();
    tf.note_unknown();
    ct.as_sent = tool.dump();
    out.push_back(std::move(ct));
  }
  return out;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name"}}.
ToolChoice parse_tool_choice(Fields& f, const std::vector<ChatTool>& tools, std::vector<std::string>* ignored) {
  ToolChoice c;
  const json* v = f.get("tool_choice");
  if (!v) {
    if (tools.empty()) c.kind = ToolChoice::Kind::kNone;
    return c;
  }
  if (v->is_string()) {
    const std::string s = v->get<std::string>();
    if (s == "none") c.kind = ToolChoice::Kind::kNone;
    else if (s == "auto") c.kind = ToolChoice::Kind::kAuto;
    else if (s == "required") c.kind = ToolChoice::Kind::kRequired;
    else bad_request("'tool_choice' is " + client_text(s) + ": expected none, auto, required or a function", "tool_choice");
  } else if (v->is_object()) {
    Fields cf(*v, ignored, "tool_choice.");
    const auto type = cf.string("type");
    if (type != "function")
      bad_request("'tool_choice.type' must be 'function'", "tool_choice.type");
    const json* fn = cf.get("function");
    if (!fn || !fn->is_object()) bad_request("'tool_choice.function' must be an object with a name", "tool_choice.function");
    Fields ff(*fn, ignored, "tool_choice.function.");
    const auto name = ff.string("name");
    if (!name) bad_request("'tool_choice.function.name' is required", "tool_choice.function.name");
    ff.note_unknown();
    cf.note_unknown();
    c.kind = ToolChoice::Kind::kFunction;
    c.function = *name;
    bool known = false;
    for (const ChatTool& t : tools) known = known || t.name == *name;
    if (!known)
      bad_request("'tool_choice' names the function " + client_text(*name) + ", which is not in 'tools'",
                  "tool_choice.function.name");
  } else {
    wrong_type("tool_choice", "a string or an object", *v);
  }
  if (tools.empty() && (c.kind == ToolChoice::Kind::kRequired || c.kind == ToolChoice::Kind::kFunction))
    bad_request("'tool_choice' asks for a tool call but 'tools' is empty or missing", "tool_choice");
  return c;
}

// chat_template_kwargs (an object; its keys become template variables) and
// reasoning_effort (a template variable too, as gpt-oss's template reads it):
// render_forms joins them (the effort unless the kwargs set it) and names the
// field they came from for the 400 of a template that cannot take them.
void parse_template_kwargs(Fields& f, ChatRequest& chat) {
  if (const json* k = f.get("chat_template_kwargs")) {
    if (!k->is_object()) wrong_type("chat_template_kwargs", "an object", *k);
    chat.chat_template_kwargs = k->dump();
  }
  if (auto e = f.string("reasoning_effort")) {
    if (*e != "minimal" && *e != "low" && *e != "medium" && *e != "high" && *e != "none")
      bad_request("'reasoning_effort' is " + client_text(*e) + ": expected none, minimal, low, medium or high",
                  "reasoning_effort");
    chat.reasoning_effort = *e;
  }
}

// The chat part every chat-shaped request shares: messages, tools and kwargs,
// with their forms.
struct ChatPart {
  ChatRequest chat;
  ChatRenderForms forms;
};

ChatPart parse_chat_part(Fields& f, std::vector<std::string>* ignored) {
  ChatPart c;
  c.chat.messages = parse_messages(f, ignored);
  c.chat.tools = parse_tools(f, ignored);
  parse_template_kwargs(f, c.chat);
  try {
    c.forms = render_forms(c.chat);
  } catch (const ChatRequestError& e) {
    bad_request(e.what(), e.field(), e.code());
  }
  return c;
}

// Integers of any value: an id's range is the vocabulary's, checked where the
// model is known with runtime/token_ids.h's one message.
std::vector<int64_t> token_list(const json& v, const std::string& name) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < v.size(); ++i)
    ids.push_back(Fields::int_value(name + "[" + std::to_string(i) + "]", v[i], std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max()));
  return ids;
}

// prompt: a string, an array of token ids, or a list of either (at most kMaxPrompts).
void parse_prompts(Fields& f, GenerationRequest* r) {
  const json* p = f.get("prompt");
  if (!p) bad_request("'prompt' is required", "prompt");
  auto one = [&](const json& v, const std::string& name) {
    CompletionPrompt cp;
    if (v.is_string()) {
      cp.text = v.get<std::string>();
      return cp;
    }
    if (!v.is_array()) wrong_type(name, "a string or an array of token ids", v);
    cp.ids = token_list(v, name);
    cp.is_ids = true;
    if (cp.ids.empty()) bad_request("'" + name + "' is an empty list of token ids", name);
    return cp;
  };
  if (!p->is_array() || p->empty() || (*p)[0].is_number()) {
    r->prompts.push_back(one(*p, "prompt"));
    return;
  }
  if (p->size() > kMaxPrompts)
    bad_request("'prompt' holds " + std::to_string(p->size()) + " prompts; at most " + std::to_string(kMaxPrompts) +
                    " per request",
                "prompt");
  for (size_t i = 0; i < p->size(); ++i) {
    const json& v = (*p)[i];
    const std::string name = "prompt[" + std::to_string(i) + "]";
    if (!v.is_string() && !v.is_array()) wrong_type(name, "a string or an array of token ids", v);
    r->prompts.push_back(one(v, name));
  }
}

}  // namespace

json parse_json_object(std::string_view body) {
  if (body.empty()) bad_request("the request body is empty: expected a JSON object");
  JsonParse p = parse_json_bounded(body);
  if (!p.error.empty())
    bad_request("the request body " + p.error, p.where, p.limit ? "json_too_complex" : "invalid_json");
  if (!p.value.is_object())
    bad_request(std::string("the request body must be a JSON object, not ") + type_name(p.value));
  return std::move(p.value);
}

GenerationRequest parse_chat_request(const json& body) {
  GenerationRequest r;
  Fields f(body, &r.ignored);
  r.endpoint = Endpoint::kChat;
  r.model = f.string("model").value_or("");
  ChatPart chat = parse_chat_part(f, &r.ignored);
  r.chat = std::move(chat.chat);
  r.forms = std::move(chat.forms);
  r.chat.tool_choice = parse_tool_choice(f, r.chat.tools, &r.ignored);
  r.chat.parallel_tool_calls = f.boolean("parallel_tool_calls").value_or(true);
  r.params = parse_params(f, Endpoint::kChat, &r.ignored);
  r.params.logprobs = f.boolean("logprobs").value_or(false);
  if (auto t = f.any_integer("top_logprobs")) {
    GenerationSettings lim;
    lim.top_logprobs = t;
    enforce_limits(lim);
    if (!r.params.logprobs && *t > 0) bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    r.params.top_logprobs = static_cast<int>(*t);
  }
  reject_unsupported(f);
  f.note_unknown();
  return r;
}

GenerationRequest parse_completion_request(const json& body) {
  GenerationRequest r;
  Fields f(body, &r.ignored);
  r.endpoint = Endpoint::kCompletion;
  r.model = f.string("model").value_or("");
  parse_prompts(f, &r);
  r.params = parse_params(f, Endpoint::kCompletion, &r.ignored);
  if (auto lp = f.integer("logprobs", 0, limits::kCompletionLogprobsMax)) {
    r.params.logprobs = true;
    r.params.top_logprobs = static_cast<int>(*lp);
  }
  r.echo = f.boolean("echo").value_or(false);
  if (const json* sfx = f.get("suffix")) {
    if (!sfx->is_string()) wrong_type("suffix", "a string", *sfx);
    r.suffix = sfx->get<std::string>();
    r.has_suffix = true;
    if (r.echo) bad_request("'echo' and 'suffix' cannot be combined", "echo");
  }
  if (r.params.max_zero && !r.echo)
    bad_request("'max_tokens' is 0: only an 'echo' request may generate nothing", "max_tokens");
  if (auto b = f.integer("best_of", 1, std::numeric_limits<int32_t>::max()); b && *b != 1)
    bad_request("'best_of' must be 1: this server does not generate extra completions to return only the most "
                "likely ones (ask for several choices with 'n', and rank them by their logprobs yourself)",
                "best_of", "unsupported_parameter");
  reject_unsupported(f);
  f.note_unknown();
  return r;
}

TokenizeRequest parse_tokenize_request(const json& body) {
  TokenizeRequest r;
  Fields f(body, &r.ignored);
  r.model = f.string("model").value_or("");
  r.add_special = f.boolean("add_special_tokens").value_or(true);
  const bool has_prompt = body.contains("prompt") && !body["prompt"].is_null();
  const bool has_messages = body.contains("messages") && !body["messages"].is_null();
  if (has_prompt == has_messages) bad_request("give exactly one of 'prompt' (text) or 'messages' (chat)", "prompt");
  if (has_prompt) {
    r.prompt = *f.string("prompt");
  } else {
    ChatPart chat = parse_chat_part(f, &r.ignored);
    r.chat = std::move(chat.chat);
    r.forms = std::move(chat.forms);
    r.use_messages = true;
  }
  r.chat.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  if (r.use_messages) r.forms.template_request["add_generation_prompt"] = r.chat.add_generation_prompt;
  f.note_unknown();
  return r;
}

DetokenizeRequest parse_detokenize_request(const json& body) {
  DetokenizeRequest r;
  Fields f(body, nullptr);
  r.model = f.string("model").value_or("");
  const json* t = f.get("tokens");
  if (!t) bad_request("'tokens' is required", "tokens");
  if (!t->is_array()) wrong_type("tokens", "an array of token ids", *t);
  r.tokens = token_list(*t, "tokens");
  return r;
}

ApplyTemplateRequest parse_apply_template_request(const json& body) {
  ApplyTemplateRequest r;
  Fields f(body, &r.ignored);
  r.model = f.string("model").value_or("");
  ChatPart chat = parse_chat_part(f, &r.ignored);
  r.chat = std::move(chat.chat);
  r.forms = std::move(chat.forms);
  r.chat.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  r.forms.template_request["add_generation_prompt"] = r.chat.add_generation_prompt;
  f.note_unknown();
  return r;
}

}  // namespace og::server
