// Ollama's request bodies rewritten as the OpenAI bodies that mean the same,
// then parsed by api_request.cpp (see ollama_request.h).
#include "server/ollama_request.h"

#include "runtime/token_ids.h"

#include <cctype>
#include <utility>

#include "chat/content_part.h"
#include "runtime/chat_images.h"

namespace og::server {
namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void wrong_type(const std::string& field, const std::string& want, const json& got) {
  bad_request("'" + field + "' must be " + want + ", got " + client_text(got.dump(-1, ' ', false, json::error_handler_t::replace), 40),
              field);
}

// The member when present and not null.
const json* member(const json& o, const char* key) {
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

std::optional<bool> boolean(const json& o, const char* key) {
  const json* v = member(o, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(key, "a boolean", *v);
  return v->get<bool>();
}

std::string text(const json& o, const char* key) {
  const json* v = member(o, key);
  if (!v) return "";
  if (!v->is_string()) wrong_type(key, "a string", *v);
  return v->get<std::string>();
}

// A Jinja template (it reads chat_template_kwargs and reasoning_content).
bool jinja(const ServedModel& m) { return m.tmpl && !m.tmpl->source().empty(); }
// A built-in that renders whole requests (harmony: it reads reasoning_effort and `thinking`).
bool builtin_request_renderer(const ServedModel& m) { return m.tmpl && m.tmpl->renders_requests() && !jinja(m); }

bool model_thinks(const ServedModel& m) { return m.parse_reasoning && m.reply_format.reasoning != ReasoningFormat::kNone; }

// options: the sampling settings the engine has, under OpenAI's names; the
// rest of Ollama's (num_thread, num_gpu, mirostat, ...) are runner settings
// with no meaning here: accepted and logged.
void put_options(const json& body, const ServedModel& m, json& oa, std::vector<std::string>& ignored) {
  const json* o = member(body, "options");
  if (!o) return;
  if (!o->is_object()) wrong_type("options", "an object", *o);
  for (const auto& [key, v] : o->items()) {
    if (v.is_null()) continue;
    const std::string at = "options." + key;
    if (key == "temperature" || key == "top_k" || key == "top_p" || key == "min_p" || key == "seed" ||
        key == "presence_penalty" || key == "frequency_penalty" || key == "stop") {
      oa[key] = v;
    } else if (key == "repeat_penalty") {
      oa["repetition_penalty"] = v;
    } else if (key == "max_reasoning_tokens") {
      // Ollama has no reasoning budget; this server's (structured output's
      // reasoning before the constrained part) travels in options.
      oa["max_reasoning_tokens"] = v;
    } else if (key == "num_predict") {
      if (!v.is_number_integer()) wrong_type(at, "an integer", v);
      const int64_t n = v.get<int64_t>();
      if (n >= 1) oa["max_tokens"] = n;
      else if (n != -1 && n != -2)
        bad_request("'options.num_predict' is " + std::to_string(n) +
                        ": expected -1 (no limit), -2 (up to the session limit) or a positive count",
                    at);
    } else if (key == "num_ctx") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) wrong_type(at, "a positive integer", v);
      if (v.get<int64_t>() > m.max_session_tokens)
        bad_request("'options.num_ctx' is " + std::to_string(v.get<int64_t>()) + ", more than this server's session limit of " +
                        std::to_string(m.max_session_tokens) + " tokens (set when it starts: --ctx-size)",
                    at);
    } else {
      ignored.push_back(at);
    }
  }
}

// format: "json" (any JSON object) or a JSON schema, through response_format.
void put_format(const json& body, json& oa) {
  const json* f = member(body, "format");
  if (!f) return;
  if (f->is_string()) {
    const std::string s = f->get<std::string>();
    if (s == "json") oa["response_format"] = {{"type", "json_object"}};
    else if (!s.empty()) bad_request("'format' is " + client_text(s) + ": expected \"json\" or a JSON schema (an object)", "format");
  } else if (f->is_object()) {
    oa["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", *f}}}};
  } else {
    wrong_type("format", "\"json\" or a JSON schema (an object)", *f);
  }
}

// think: true / false / "low" / "medium" / "high". A template that reads
// enable_thinking (Qwen 3) gets it; an effort reaches templates that read
// reasoning_effort (gpt-oss). false on a model that thinks anyway: its
// reasoning is dropped from the reply.
void put_think(const json& body, const ServedModel& m, json& oa, OllamaGeneration& g) {
  const json* t = member(body, "think");
  if (!t) return;
  bool want = false;
  std::string effort;
  if (t->is_boolean()) {
    want = t->get<bool>();
  } else if (t->is_string() && (*t == "low" || *t == "medium" || *t == "high")) {
    want = true;
    effort = t->get<std::string>();
  } else {
    wrong_type("think", "true, false, \"low\", \"medium\" or \"high\"", *t);
  }
  if (want && !model_thinks(m))
    bad_request("'think': the model " + client_text(m.id) +
                    " does not support thinking (its chat template has no reasoning markers" +
                    (m.parse_reasoning ? "" : ", or the server runs with --reasoning-format none") + ")",
                "think");
  g.hide_thinking = !want;
  if (jinja(m)) oa["chat_template_kwargs"] = {{"enable_thinking", want}};
  if (!effort.empty() && (jinja(m) || builtin_request_renderer(m))) oa["reasoning_effort"] = effort;
}

// Ollama's tool calls ({function: {index?, name, arguments: {...}}}) in OpenAI's shape.
json tool_calls(const json& calls, const std::string& at) {
  if (!calls.is_array()) wrong_type(at, "an array", calls);
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = calls[i];
    if (!c.is_object()) wrong_type(at + "[" + std::to_string(i) + "]", "an object", c);
    if (c.contains("function") && c["function"].is_object()) c["function"].erase("index");
    c["type"] = "function";
    out.push_back(std::move(c));
  }
  return out;
}

// Ollama's images (base64 strings, no data: prefix) as OpenAI content parts:
// the images first, then the text, each image a data: URL (its media type is
// not read: the bytes' magic decides). `at` names the message in a 400 ("" for generate's body).
json with_images(const json& content, const json& images, const std::string& at, const ServedModel& m) {
  if (images.is_null() || (images.is_array() && images.empty())) return content;
  const std::string prefix = at.empty() ? "" : at + ".";
  if (!images.is_array()) wrong_type(prefix + "images", "an array of base64 strings", images);
  json parts = json::array();
  for (size_t j = 0; j < images.size(); ++j) {
    const std::string field = prefix + "images[" + std::to_string(j) + "]";
    if (!images[j].is_string()) wrong_type(field, "a base64 string", images[j]);
    std::string bytes;
    const std::string& b64 = images[j].get_ref<const std::string&>();
    if (b64.empty() || !decode_base64(b64, &bytes))
      bad_request("'" + field + "' is not valid base64 (an image's bytes, without a data: prefix)", field);
    parts.push_back({{"type", "image_url"}, {"image_url", {{"url", "data:image/*;base64," + b64}}}});
  }
  if (!m.vision)
    bad_request("'" + prefix + "images': " + kNoVisionTower, prefix + "images", "unsupported_parameter");
  if (!content.is_string()) wrong_type(prefix + "content", "a string", content);
  if (!content.get_ref<const std::string&>().empty()) parts.push_back({{"type", "text"}, {"text", content}});
  return parts;
}

json messages(const json& body, const ServedModel& m, std::vector<std::string>& ignored) {
  const json* ms = member(body, "messages");
  if (!ms) return json::array();  // as Ollama: no messages loads the model and answers done
  if (!ms->is_array()) wrong_type("messages", "an array", *ms);
  json out = json::array();
  for (size_t i = 0; i < ms->size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const json& msg = (*ms)[i];
    if (!msg.is_object()) wrong_type(at, "an object", msg);
    json n = json::object();
    const json* images = nullptr;
    for (const auto& [key, v] : msg.items()) {
      if (key == "role" || key == "content") {
        n[key] = v;
      } else if (key == "images") {
        images = &v;
      } else if (key == "tool_calls") {
        if (!v.is_null()) n["tool_calls"] = tool_calls(v, at + ".tool_calls");
      } else if (key == "thinking") {
        // The reasoning of an echoed reply: where the template can render it.
        if (v.is_string() && !v.get<std::string>().empty()) {
          if (jinja(m)) n["reasoning_content"] = v;
          else if (builtin_request_renderer(m)) n["thinking"] = v;
          else ignored.push_back(at + ".thinking");
        }
      } else if (key == "tool_name") {
        n["name"] = v;
      } else {
        ignored.push_back(at + "." + key);
      }
    }
    if (images) n["content"] = with_images(n.contains("content") ? n["content"] : json(""), *images, at, m);
    out.push_back(std::move(n));
  }
  return out;
}

// What every generation body shares: stream, keep_alive, options, format, think.
json common(const json& body, const ServedModel& m, OllamaGeneration& g) {
  json oa = json::object();
  oa["model"] = m.id;
  g.model = ollama_model(body, m);
  g.stream = boolean(body, "stream").value_or(true);
  if (const json* k = member(body, "keep_alive"); k && !k->is_string() && !k->is_number())
    wrong_type("keep_alive", "a duration (\"5m\") or a number of seconds", *k);
  put_options(body, m, oa, g.ignored);
  put_format(body, oa);
  put_think(body, m, oa, g);
  static const char* kKnown[] = {"model", "messages", "tools", "stream", "keep_alive", "options", "format", "think",
                                 "prompt", "suffix", "system", "template", "raw", "context", "images"};
  for (const auto& [key, v] : body.items()) {
    bool known = false;
    for (const char* k : kKnown) known = known || key == k;
    if (!known) g.ignored.push_back(key);
  }
  return oa;
}

GenerationRequest parse_openai(const json& oa, bool chat) {
  try {
    return chat ? parse_chat_request(oa) : parse_completion_request(oa);
  } catch (const ApiError& e) {
    throw ollama_field_names(e);
  }
}

void append(std::vector<std::string>& to, const std::vector<std::string>& from) { to.insert(to.end(), from.begin(), from.end()); }

}  // namespace

bool ollama_model_matches(std::string_view name, const std::string& served_id) {
  if (name == served_id) return true;
  // A tag after the served id's name (Ollama's name:tag); an id with its own tag must match whole.
  return served_id.find(':') == std::string::npos && name.size() > served_id.size() + 1 &&
         name.substr(0, served_id.size()) == served_id && name[served_id.size()] == ':';
}

std::string ollama_model(const nlohmann::ordered_json& body, const ServedModel& m) {
  const json* v = member(body, "model");
  if (!v) bad_request("'model' is required (this server serves " + client_text(m.id) + ")", "model");
  if (!v->is_string()) wrong_type("model", "a string", *v);
  const std::string name = v->get<std::string>();
  if (!ollama_model_matches(name, m.id))
    throw ApiError(404, "invalid_request_error", "model_not_found",
                   "model " + client_text(name) + " not found; this server serves " + client_text(m.id) +
                       " (models are files given to `offgraph serve`, not pulled)",
                   "model");
  return name;
}

OllamaGeneration parse_ollama_chat(const nlohmann::ordered_json& body, const ServedModel& m) {
  OllamaGeneration g;
  g.chat = true;
  json oa = common(body, m, g);
  oa["messages"] = messages(body, m, g.ignored);
  if (const json* t = member(body, "tools")) oa["tools"] = *t;
  if (oa["messages"].empty()) {
    g.empty = true;
    return g;
  }
  g.request = parse_openai(oa, true);
  append(g.ignored, g.request.ignored);
  return g;
}

OllamaGeneration parse_ollama_generate(const nlohmann::ordered_json& body, const ServedModel& m) {
  OllamaGeneration g;
  g.chat = false;
  json oa = common(body, m, g);
  const std::string prompt = text(body, "prompt");
  const std::string system = text(body, "system");
  if (!text(body, "template").empty())
    bad_request("'template': this server renders prompts with the model's own chat template and takes no template "
                "override (send \"raw\": true with a prompt already formatted)",
                "template", "unsupported_parameter");
  const json* images = member(body, "images");
  if (images && (images->is_null() || (images->is_array() && images->empty()))) images = nullptr;
  const bool raw = boolean(body, "raw").value_or(false);
  const json* suffix = member(body, "suffix");
  if (suffix && !suffix->is_string()) wrong_type("suffix", "a string", *suffix);
  const bool has_suffix = suffix && !suffix->get<std::string>().empty();
  if (const json* c = member(body, "context")) {
    if (!c->is_array()) wrong_type("context", "an array of token ids", *c);
    const int64_t n_vocab = m.tok->n_vocab();
    for (size_t i = 0; i < c->size(); ++i) {
      const json& id = (*c)[i];
      const std::string at = "'context[" + std::to_string(i) + "]'";
      if (!id.is_number_integer())
        bad_request(at + " is " + client_text(id.dump(), 24) + ": expected a token id", "context");
      const std::string wrong = token_id_error(id.get<int64_t>(), n_vocab);
      if (!wrong.empty()) bad_request(at + ": " + wrong, "context");
      // A context holds an earlier prompt's ids, an image's as its placeholders
      // only: read back as text they would stand for no image at all.
      if (m.vision && id.get<int64_t>() == m.vision->tokens.placeholder)
        bad_request(at + " is an image's placeholder token: a context cannot carry images; send the images again "
                    "(with /api/chat's messages, or in 'images' with the whole prompt)", "context");
      g.context.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  if (prompt.empty() && !has_suffix) {
    g.empty = true;
    return g;
  }
  if (images && (raw || has_suffix))
    bad_request("'images' with " + std::string(raw ? "raw" : "a suffix") +
                    ": images are placed by the model's chat template, which a raw or fill-in-the-middle prompt skips",
                "images", "unsupported_parameter");
  if (raw || has_suffix) {
    // The prompt as it is (with the suffix: the fill-in-the-middle prompt); no template, so no system.
    oa["prompt"] = prompt;
    if (has_suffix) oa["suffix"] = *suffix;
    if (!system.empty()) g.ignored.push_back("system");
    g.request = parse_openai(oa, false);
  } else {
    json msgs = json::array();
    if (!system.empty()) msgs.push_back({{"role", "system"}, {"content", system}});
    msgs.push_back({{"role", "user"}, {"content", images ? with_images(prompt, *images, "", m) : json(prompt)}});
    oa["messages"] = std::move(msgs);
    g.request = parse_openai(oa, true);
  }
  append(g.ignored, g.request.ignored);
  return g;
}

namespace {

OllamaEmbed embed_common(const json& body, const ServedModel& m) {
  OllamaEmbed e;
  e.model = ollama_model(body, m);
  e.truncate = boolean(body, "truncate").value_or(true);
  if (const json* d = member(body, "dimensions")) {
    if (!d->is_number_integer() || d->get<int64_t>() < 1) wrong_type("dimensions", "a positive integer", *d);
    e.dimensions = d->get<int64_t>();
  }
  return e;
}

}  // namespace

OllamaEmbed parse_ollama_embed(const nlohmann::ordered_json& body, const ServedModel& m) {
  OllamaEmbed e = embed_common(body, m);
  const json* in = member(body, "input");
  if (!in) return e;  // no input: no embeddings, as Ollama answers
  if (in->is_string()) {
    e.inputs.push_back(in->get<std::string>());
  } else if (in->is_array()) {
    for (size_t i = 0; i < in->size(); ++i) {
      if (!(*in)[i].is_string()) wrong_type("input[" + std::to_string(i) + "]", "a string", (*in)[i]);
      e.inputs.push_back((*in)[i].get<std::string>());
    }
  } else {
    wrong_type("input", "a string or an array of strings", *in);
  }
  for (size_t i = 0; i < e.inputs.size(); ++i)
    if (e.inputs[i].empty()) bad_request("'input[" + std::to_string(i) + "]' is an empty string", "input");
  return e;
}

OllamaEmbed parse_ollama_embeddings(const nlohmann::ordered_json& body, const ServedModel& m) {
  OllamaEmbed e = embed_common(body, m);
  const std::string prompt = text(body, "prompt");
  if (!prompt.empty()) e.inputs.push_back(prompt);
  return e;
}

ApiError ollama_field_names(const ApiError& e) {
  // Longest first: a name that begins another is replaced after it.
  static const std::pair<const char*, const char*> kNames[] = {
      {"response_format.json_schema.schema", "format"},
      {"response_format", "format"},
      {"max_reasoning_tokens", "options.max_reasoning_tokens"},
      {"max_tokens", "options.num_predict"},
      {"repetition_penalty", "options.repeat_penalty"},
      {"presence_penalty", "options.presence_penalty"},
      {"frequency_penalty", "options.frequency_penalty"},
      {"temperature", "options.temperature"},
      {"top_k", "options.top_k"},
      {"top_p", "options.top_p"},
      {"min_p", "options.min_p"},
      {"seed", "options.seed"},
      {"stop", "options.stop"},
      {"chat_template_kwargs", "think"},
      {"reasoning_effort", "think"},
  };
  std::string message = e.what(), param = e.param();
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const auto& [from, to] : kNames) {
    // Quoted ('stop', 'max_tokens'), or bare when the name cannot be an
    // ordinary word ("+ max_tokens (1000)").
    const std::string f = from;
    const bool bare_ok = f.find('_') != std::string::npos;
    for (size_t at = message.find(f); at != std::string::npos; at = message.find(f, at + 1)) {
      const char before = at > 0 ? message[at - 1] : ' ';
      const char next = at + f.size() < message.size() ? message[at + f.size()] : '\0';
      const bool quoted = before == '\'' && (next == '\'' || next == '.' || next == '[');
      const bool bare = bare_ok && !name_char(before) && before != '.' && !name_char(next);
      if (!quoted && !bare) continue;
      message.replace(at, f.size(), to);
      at += std::string(to).size() - 1;
    }
    const std::string p = from;
    if (param == p || param.rfind(p + ".", 0) == 0 || param.rfind(p + "[", 0) == 0) param = to + param.substr(p.size());
  }
  return ApiError(e.status(), e.type(), e.code(), message, param);
}

}  // namespace og::server
