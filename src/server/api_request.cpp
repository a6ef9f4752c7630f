// Strict parsers of the OpenAI request bodies into GenerationRequest and the
// tokenize/detokenize structs. Every field is read through one typed accessor
// that names the field in its error; a field we do not know is an error (a
// silently ignored setting would give an answer the client did not ask for),
// except for a few metadata fields that change nothing about the output.
#include "server/api_request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "server/api_error.h"

namespace og::server {

using nlohmann::json;

namespace {

// Fields that carry no generation setting (OpenAI metadata); accepted and ignored.
const std::set<std::string> kIgnoredFields = {"user", "store", "metadata", "service_tier", "parallel_tool_calls"};

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

// The body's fields, each read once; what is left at the end is unknown.
class Fields {
 public:
  explicit Fields(const json& obj) : obj_(obj) {}

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

  // lo_open: lo itself is not allowed.
  std::optional<double> number(const std::string& name, double lo, double hi, bool lo_open = false) {
    const json* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong_type(name, "a number", *v);
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
      bad_request("'" + name + "' is " + v->dump() + ", outside " + (lo_open ? "(" : "[") + fmt(lo) + ", " + fmt(hi) +
                      "]",
                  name);
    return x;
  }

  std::optional<std::string> string(const std::string& name) {
    const json* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong_type(name, "a string", *v);
    return v->get<std::string>();
  }

  // Every field not read (nor ignored) is an error.
  void reject_unknown() const {
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (seen_.count(it.key()) || kIgnoredFields.count(it.key())) continue;
      bad_request("unknown field " + client_text(it.key()), it.key(), "unknown_field");
    }
  }

  static int64_t int_value(const std::string& name, const json& v, int64_t lo, int64_t hi) {
    if (!v.is_number_integer()) wrong_type(name, "an integer", v);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad_request("'" + name + "' is " + v.dump() + ", above " + std::to_string(hi), name);
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      bad_request("'" + name + "' is " + std::to_string(x) + ", outside [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]",
                  name);
    return x;
  }

 private:
  static std::string fmt(double x) {
    json j = x;
    return j.dump();
  }
  const json& obj_;
  std::set<std::string> seen_;
};

// Message content: a string, or an array of {"type": "text", "text": ...} parts (joined).
std::string message_content(const json& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) wrong_type(where, "a string or an array of text parts", c);
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!c[i].is_object()) wrong_type(at, "an object", c[i]);
    Fields part(c[i]);
    const auto type = part.string("type");
    if (!type) bad_request("'" + at + ".type' is required", at + ".type");
    if (*type != "text") bad_request("'" + at + ".type' is " + client_text(*type) + ": only text parts are supported", at + ".type");
    const auto t = part.string("text");
    if (!t) bad_request("'" + at + ".text' is required", at + ".text");
    part.reject_unknown();
    text += *t;
  }
  return text;
}

std::vector<ChatMessage> parse_messages(Fields& f) {
  const json* m = f.get("messages");
  if (!m) bad_request("'messages' is required", "messages");
  if (!m->is_array()) wrong_type("messages", "an array", *m);
  if (m->empty()) bad_request("'messages' is empty: give at least one message", "messages");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < m->size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const json& msg = (*m)[i];
    if (!msg.is_object()) wrong_type(at, "an object", msg);
    Fields mf(msg);
    auto role = mf.string("role");
    if (!role) bad_request("'" + at + ".role' is required", at + ".role");
    if (*role == "developer") role = "system";  // OpenAI's newer name for the system role
    if (*role != "system" && *role != "user" && *role != "assistant")
      bad_request("'" + at + ".role' is " + client_text(*role) + ": expected system, developer, user or assistant",
                  at + ".role");
    const json* content = mf.get("content");
    if (!content) bad_request("'" + at + ".content' is required", at + ".content");
    mf.string("name");  // a participant's name: accepted, not rendered (no template we have uses it)
    mf.reject_unknown();
    out.push_back({*role, message_content(*content, at + ".content")});
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
    if (s->size() > kMaxStopStrings)
      bad_request("'stop' has " + std::to_string(s->size()) + " strings; at most " + std::to_string(kMaxStopStrings),
                  "stop");
    for (size_t i = 0; i < s->size(); ++i) {
      if (!(*s)[i].is_string()) wrong_type("stop[" + std::to_string(i) + "]", "a string", (*s)[i]);
      out.push_back((*s)[i].get<std::string>());
    }
  } else {
    wrong_type("stop", "a string or an array of strings", *s);
  }
  for (const auto& x : out)
    if (x.empty()) bad_request("'stop' holds an empty string", "stop");
  return out;
}

// The settings both endpoints share.
GenerationParams parse_params(Fields& f, Endpoint ep) {
  GenerationParams p;
  constexpr int64_t kI32 = std::numeric_limits<int32_t>::max();
  const auto max_tokens = f.integer("max_tokens", 1, kI32);
  const auto max_completion = ep == Endpoint::kChat ? f.integer("max_completion_tokens", 1, kI32) : std::nullopt;
  if (max_tokens && max_completion && *max_tokens != *max_completion)
    bad_request("'max_tokens' and 'max_completion_tokens' are the same setting and differ: give one",
                "max_completion_tokens");
  p.max_tokens = max_completion ? max_completion : max_tokens;
  p.temperature = f.number("temperature", 0, 2);
  p.top_p = f.number("top_p", 0, 1, /*lo_open=*/true);
  if (auto k = f.integer("top_k", -1, kI32)) p.top_k = *k < 0 ? 0 : *k;
  p.min_p = f.number("min_p", 0, 1);
  p.repetition_penalty = f.number("repetition_penalty", 0, 100, /*lo_open=*/true);
  if (const json* s = f.get("seed"))
    p.seed = static_cast<uint64_t>(Fields::int_value("seed", *s, std::numeric_limits<int64_t>::min(),
                                                     std::numeric_limits<int64_t>::max()));
  p.presence_penalty = f.number("presence_penalty", -2, 2);
  p.frequency_penalty = f.number("frequency_penalty", -2, 2);
  if (auto n = f.integer("n", 1, kI32); n && *n != 1)
    bad_request("'n' is " + std::to_string(*n) + ": this server generates one choice per request (n = 1)", "n",
                "unsupported_parameter");
  p.stop = parse_stop(f);
  p.ignore_eos = f.boolean("ignore_eos").value_or(false);
  p.stream = f.boolean("stream").value_or(false);
  if (const json* so = f.get("stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    if (!p.stream) bad_request("'stream_options' is only allowed with 'stream': true", "stream_options");
    Fields sf(*so);
    p.include_usage = sf.boolean("include_usage").value_or(false);
    sf.boolean("continuous_usage_stats");  // vLLM's: usage is only sent at the end; false is what we do
    sf.reject_unknown();
  }
  return p;
}

// Settings OpenAI has that this server cannot honour: an error unless absent or neutral.
void reject_unsupported(Fields& f) {
  for (const char* name : {"tools", "tool_choice", "functions", "function_call", "audio", "modalities", "prediction",
                           "suffix", "web_search_options", "reasoning_effort"})
    if (f.get(name)) bad_request(std::string("'") + name + "' is not supported by this server", name,
                                 "unsupported_parameter");
  if (const json* lb = f.get("logit_bias"); lb && !(lb->is_object() && lb->empty()))
    bad_request("'logit_bias' is not supported by this server", "logit_bias", "unsupported_parameter");
  if (const json* rf = f.get("response_format")) {
    if (!rf->is_object() || rf->value("type", json()) != "text" || rf->size() != 1)
      bad_request("'response_format' supports only {\"type\": \"text\"}", "response_format", "unsupported_parameter");
  }
}

std::vector<int64_t> token_list(const json& v, const std::string& name) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < v.size(); ++i)
    ids.push_back(Fields::int_value(name + "[" + std::to_string(i) + "]", v[i], 0, std::numeric_limits<int32_t>::max()));
  return ids;
}

// prompt: a string, an array of token ids, or an array holding one of those.
void parse_prompt(Fields& f, GenerationRequest* r) {
  const json* p = f.get("prompt");
  if (!p) bad_request("'prompt' is required", "prompt");
  const json* v = p;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) v = &(*p)[0];
  if (v->is_string()) {
    r->prompt_text = v->get<std::string>();
    return;
  }
  if (!v->is_array()) wrong_type("prompt", "a string or an array of token ids", *v);
  if (!v->empty() && !(*v)[0].is_number())
    bad_request("'prompt' holds several prompts: this server takes one per request", "prompt",
                "unsupported_parameter");
  r->prompt_ids = token_list(*v, "prompt");
  r->prompt_is_ids = true;
  if (r->prompt_ids.empty()) bad_request("'prompt' is an empty list of token ids", "prompt");
}

}  // namespace

json parse_json_object(std::string_view body) {
  if (body.empty()) bad_request("the request body is empty: expected a JSON object");
  json j;
  try {
    // The callback bounds nesting: a deep body must not exhaust the stack or memory.
    j = json::parse(body, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth) throw ApiError(400, "invalid_request_error", "", "the JSON body nests deeper than " +
                                                                                   std::to_string(kMaxJsonDepth) +
                                                                                   " levels");
      return true;
    });
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number past double's range
    // The parser's message ends with the text it last read, which may be long.
    std::string what = e.what();
    if (what.size() > 240) what = what.substr(0, utf8_prefix(what, 240)) + "...";
    bad_request("the request body is not valid JSON: " + what, "", "invalid_json");
  }
  if (!j.is_object()) bad_request(std::string("the request body must be a JSON object, not ") + type_name(j));
  return j;
}

GenerationRequest parse_chat_request(const json& body) {
  Fields f(body);
  GenerationRequest r;
  r.endpoint = Endpoint::kChat;
  r.model = f.string("model").value_or("");
  r.messages = parse_messages(f);
  r.params = parse_params(f, Endpoint::kChat);
  r.params.logprobs = f.boolean("logprobs").value_or(false);
  if (auto t = f.integer("top_logprobs", 0, kMaxTopLogprobs)) {
    if (!r.params.logprobs && *t > 0) bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    r.params.top_logprobs = static_cast<int>(*t);
  }
  reject_unsupported(f);
  f.reject_unknown();
  return r;
}

GenerationRequest parse_completion_request(const json& body) {
  Fields f(body);
  GenerationRequest r;
  r.endpoint = Endpoint::kCompletion;
  r.model = f.string("model").value_or("");
  parse_prompt(f, &r);
  r.params = parse_params(f, Endpoint::kCompletion);
  if (auto lp = f.integer("logprobs", 0, kMaxCompletionLogprobs)) {
    r.params.logprobs = true;
    r.params.top_logprobs = static_cast<int>(*lp);
  }
  if (f.boolean("echo").value_or(false)) bad_request("'echo' is not supported by this server", "echo",
                                                     "unsupported_parameter");
  if (auto b = f.integer("best_of", 1, std::numeric_limits<int32_t>::max()); b && *b != 1)
    bad_request("'best_of' must be 1: this server generates one choice per request", "best_of",
                "unsupported_parameter");
  reject_unsupported(f);
  f.reject_unknown();
  return r;
}

TokenizeRequest parse_tokenize_request(const json& body) {
  Fields f(body);
  TokenizeRequest r;
  r.model = f.string("model").value_or("");
  r.add_special = f.boolean("add_special_tokens").value_or(true);
  const bool has_prompt = body.contains("prompt") && !body["prompt"].is_null();
  const bool has_messages = body.contains("messages") && !body["messages"].is_null();
  if (has_prompt == has_messages) bad_request("give exactly one of 'prompt' (text) or 'messages' (chat)", "prompt");
  if (has_prompt) {
    r.prompt = *f.string("prompt");
  } else {
    r.messages = parse_messages(f);
    r.use_messages = true;
  }
  r.add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  f.reject_unknown();
  return r;
}

DetokenizeRequest parse_detokenize_request(const json& body) {
  Fields f(body);
  DetokenizeRequest r;
  r.model = f.string("model").value_or("");
  const json* t = f.get("tokens");
  if (!t) bad_request("'tokens' is required", "tokens");
  if (!t->is_array()) wrong_type("tokens", "an array of token ids", *t);
  r.tokens = token_list(*t, "tokens");
  f.reject_unknown();
  return r;
}

}  // namespace og::server
