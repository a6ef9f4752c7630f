// Ollama's response bodies (see ollama_response.h).
#include "server/ollama_response.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace og::server {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string rfc3339(int64_t seconds, int64_t nanos) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(nanos));
  return buf;
}

int64_t ns(double seconds) { return static_cast<int64_t>(std::llround(std::max(0.0, seconds) * 1e9)); }

json details(const ServedModel& m) {
  const ModelFacts& f = m.facts;
  return {{"parent_model", ""},
          {"format", f.format},
          {"family", f.family},
          {"families", f.family.empty() ? json(nullptr) : json::array({f.family})},
          {"parameter_size", f.parameters > 0 ? parameter_size_text(f.parameters) : ""},
          {"quantization_level", f.quantization}};
}

// The entry /api/tags and /api/ps share.
json model_entry(const ServedModel& m) {
  const std::string name = ollama_name(m);
  return {{"name", name}, {"model", name}, {"size", m.facts.size}, {"digest", m.facts.digest}, {"details", details(m)}};
}

// Ollama's `parameters` text: one "name value" line per setting, names padded to 30.
std::string parameters_text(const ServedModel& m) {
  std::string out;
  auto line = [&](const std::string& name, const std::string& value) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%-30s ", name.c_str());
    out += buf + value + "\n";
  };
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  line("temperature", num(m.sampler.temperature));
  if (m.sampler.top_k > 0) line("top_k", std::to_string(m.sampler.top_k));
  if (m.sampler.top_p < 1) line("top_p", num(m.sampler.top_p));
  if (m.sampler.min_p > 0) line("min_p", num(m.sampler.min_p));
  if (m.sampler.repeat_penalty != 1) line("repeat_penalty", num(m.sampler.repeat_penalty));
  line("num_ctx", std::to_string(m.max_session_tokens));
  for (int32_t id : m.stop_ids) line("stop", json(m.tok->token_bytes(id)).dump(-1, ' ', false, json::error_handler_t::replace));
  if (!out.empty()) out.pop_back();
  return out;
}

std::string template_text(const ServedModel& m) {
  if (m.tmpl && !m.tmpl->source().empty()) return m.tmpl->source();
  return m.tmpl ? "(the built-in '" + m.tmpl->name() + "' chat template)" : "";
}

}  // namespace

std::string ollama_time_now() {
  const auto d = std::chrono::system_clock::now().time_since_epoch();
  const int64_t total = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  return rfc3339(total / 1000000000, total % 1000000000);
}

std::string ollama_time(int64_t unix_seconds) { return rfc3339(unix_seconds, 0); }

std::string ollama_error_body(const std::string& message) { return dump(json{{"error", message}}); }

std::string ollama_name(const ServedModel& m) {
  return m.id.find(':') == std::string::npos ? m.id + ":latest" : m.id;
}

std::vector<std::string> ollama_capabilities(const ServedModel& m) {
  std::vector<std::string> c;
  if (m.generates) c.push_back("completion");
  if (m.generates && m.reply_format.tools != ToolCallFormat::kNone) c.push_back("tools");
  if (m.generates && m.parse_reasoning && m.reply_format.reasoning != ReasoningFormat::kNone) c.push_back("thinking");
  const SpecialTokens& s = m.tok->special();
  if (m.generates && s.fim_pre >= 0 && s.fim_suf >= 0 && s.fim_mid >= 0) c.push_back("insert");
  if (m.embedder) c.push_back("embedding");
  return c;
}

std::string ollama_version_body() { return dump(json{{"version", kOllamaApiVersion}}); }

std::string ollama_tags_body(const ServedModel& m) {
  json e = model_entry(m);
  // modified_at after model, as Ollama orders the fields.
  json out = {{"name", e["name"]}, {"model", e["model"]}, {"modified_at", ollama_time(m.facts.modified)},
              {"size", e["size"]}, {"digest", e["digest"]}, {"details", e["details"]}};
  return dump(json{{"models", json::array({out})}});
}

std::string ollama_ps_body(const ServedModel& m) {
  json e = model_entry(m);
  // Loaded for as long as the server runs (keep_alive is not applied): a far expiry.
  e["expires_at"] = "9999-12-31T23:59:59Z";
  e["size_vram"] = 0;  // weights in host memory
  e["context_length"] = m.max_session_tokens;
  return dump(json{{"models", json::array({e})}});
}

std::string ollama_show_body(const ServedModel& m) {
  const ModelFacts& f = m.facts;
  json info = json::object();
  info["general.architecture"] = f.family;
  info["general.parameter_count"] = f.parameters;
  if (!f.family.empty()) {
    if (f.context_length > 0) info[f.family + ".context_length"] = f.context_length;
    if (f.embedding_length > 0) info[f.family + ".embedding_length"] = f.embedding_length;
    if (f.block_count > 0) info[f.family + ".block_count"] = f.block_count;
  }
  const std::string params = parameters_text(m);
  std::string modelfile = "# Modelfile of the model offgraph serves (informational: models are files given to "
                          "`offgraph serve`)\nFROM " + f.path + "\n";
  size_t at = 0;
  while (at < params.size()) {
    const size_t end = std::min(params.find('\n', at), params.size());
    modelfile += "PARAMETER " + params.substr(at, end - at) + "\n";
    at = end + 1;
  }
  return dump(json{{"modelfile", modelfile},
                   {"parameters", params},
                   {"template", template_text(m)},
                   {"details", details(m)},
                   {"model_info", info},
                   {"capabilities", ollama_capabilities(m)},
                   {"modified_at", ollama_time(f.modified)}});
}

OllamaTimings ollama_timings(const RequestReport& r, double total_s) {
  OllamaTimings t;
  t.total_ns = ns(total_s);
  t.load_ns = 0;  // the model was loaded when the server started
  t.prompt_eval_count = r.prompt_tokens;
  t.prompt_eval_ns = ns(r.queue_s + r.prefill_s);
  t.eval_count = r.generated_tokens;
  t.eval_ns = ns(r.decode_s);
  return t;
}

nlohmann::ordered_json ollama_reply(const OllamaReply& r) {
  json j = {{"model", r.model}, {"created_at", ollama_time_now()}};
  if (r.chat) {
    json msg = {{"role", "assistant"}, {"content", r.content}};
    if (!r.thinking.empty()) msg["thinking"] = r.thinking;
    if (!r.tool_calls.empty()) {
      json calls = json::array();
      for (size_t i = 0; i < r.tool_calls.size(); ++i) {
        json args = json::parse(r.tool_calls[i].arguments, nullptr, false);
        if (args.is_discarded()) args = json::object();  // the parser only releases well-formed calls
        calls.push_back({{"function", {{"index", i}, {"name", r.tool_calls[i].name}, {"arguments", args}}}});
      }
      msg["tool_calls"] = std::move(calls);
    }
    j["message"] = std::move(msg);
  } else {
    j["response"] = r.content;
    if (!r.thinking.empty()) j["thinking"] = r.thinking;
  }
  if (!r.timings) {
    j["done"] = false;
    return j;
  }
  j["done_reason"] = r.done_reason;
  j["done"] = true;
  if (r.context) j["context"] = *r.context;
  if (r.done_reason == "load") return j;
  j["total_duration"] = r.timings->total_ns;
  j["load_duration"] = r.timings->load_ns;
  j["prompt_eval_count"] = r.timings->prompt_eval_count;
  j["prompt_eval_duration"] = r.timings->prompt_eval_ns;
  j["eval_count"] = r.timings->eval_count;
  j["eval_duration"] = r.timings->eval_ns;
  return j;
}

std::string ollama_line(const nlohmann::ordered_json& j) { return dump(j) + "\n"; }

std::string ollama_embed_body(const std::string& model, const std::vector<std::vector<float>>& vectors,
                              int64_t prompt_tokens, int64_t total_ns) {
  json e = json::array();
  for (const auto& v : vectors) e.push_back(v);
  return dump(json{{"model", model},
                   {"embeddings", std::move(e)},
                   {"total_duration", total_ns},
                   {"load_duration", 0},
                   {"prompt_eval_count", prompt_tokens}});
}

std::string ollama_embedding_body(const std::vector<float>& vector) { return dump(json{{"embedding", vector}}); }

}  // namespace og::server
