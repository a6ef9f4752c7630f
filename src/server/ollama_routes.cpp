// Ollama's REST API beside the OpenAI one (docs/serving.md "Ollama's API"):
// the routes that need no generation — version, tags, ps (answered by the
// event loop), show, embed, embeddings and the model-store routes (on a
// worker) — and the rewrite of every /api/ error into Ollama's
// {"error": "text"}. Chat and generate are in ollama_generation.cpp. The
// routes share the OpenAI routes' key check, CORS, access log, metrics and
// limits: they are rows of the same route table (http_server.cpp).
#include <chrono>

#include "server/embeddings.h"
#include "server/http_internal.h"
#include "server/ollama_request.h"
#include "server/ollama_response.h"

namespace og::server {
namespace {

using json = nlohmann::ordered_json;

HttpResponse ndjson_response(std::string body) {
  HttpResponse r = json_response(std::move(body));
  r.content_type = "application/x-ndjson";
  return r;
}

// Older clients name the model "name" (show, pull, delete); newer ones "model".
json with_model_field(json body) {
  if (!body.contains("model") && body.contains("name")) body["model"] = body["name"];
  return body;
}

// The token ids of each input, cut to the model's context when truncate
// (else a longer one is a 400, as Ollama answers it).
std::vector<std::vector<int32_t>> embed_inputs(const ServedModel& m, const OllamaEmbed& e, const char* field) {
  const int64_t max = m.embedder ? m.embedder->max_tokens() : 0;
  std::vector<std::vector<int32_t>> inputs;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const std::string at = e.inputs.size() > 1 ? std::string(field) + "[" + std::to_string(i) + "]" : field;
    std::vector<int32_t> ids;
    try {
      ids = m.tok->encode(e.inputs[i], /*add_special=*/true, /*parse_special=*/false);
    } catch (const og::Error& err) {
      bad_request("cannot tokenize '" + at + "': " + err.what(), field);
    }
    if (max > 0 && static_cast<int64_t>(ids.size()) > max) {
      if (!e.truncate)
        bad_request("'" + at + "' is " + std::to_string(ids.size()) + " tokens, more than the model's context of " +
                        std::to_string(max) + " (send \"truncate\": true to cut it)",
                    field);
      ids.resize(static_cast<size_t>(max));
    }
    inputs.push_back(std::move(ids));
  }
  return inputs;
}

int64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

HttpResponse handle_embed(const ServedModel& m, const json& body, bool legacy) {
  const auto t0 = std::chrono::steady_clock::now();
  const OllamaEmbed e = legacy ? parse_ollama_embeddings(body, m) : parse_ollama_embed(body, m);
  if (m.embedder == nullptr) embed_for(m, {}, 0);  // the model's refusal (400), whatever the input
  if (e.inputs.empty())
    return json_response(legacy ? ollama_embedding_body({}) : ollama_embed_body(e.model, {}, 0, ns_since(t0)));
  const EmbedResult r = embed_for(m, embed_inputs(m, e, legacy ? "prompt" : "input"), e.dimensions);
  if (legacy) return json_response(ollama_embedding_body(r.vectors.at(0)));
  return json_response(ollama_embed_body(e.model, r.vectors, r.prompt_tokens, ns_since(t0)));
}

// pull of the served model succeeds (it is there); everything else that
// would change the model store is refused: the server serves one file.
HttpResponse handle_store(const std::string& path, const ServedModel& m, const json& body) {
  const std::string why = "models are files given to `offgraph serve` (it serves " + client_text(m.id) + ")";
  if (path == "/api/pull") {
    const json b = with_model_field(body);
    const std::string name = b.contains("model") && b["model"].is_string() ? b["model"].get<std::string>() : "";
    if (!ollama_model_matches(name, m.id))
      throw ApiError(404, "invalid_request_error", "model_not_found",
                     "cannot pull " + client_text(name) + ": this server does not download models; " + why, "model");
    const bool stream = !body.contains("stream") || !body["stream"].is_boolean() || body["stream"].get<bool>();
    const std::string ok = "{\"status\":\"success\"}";
    return stream ? ndjson_response(ok + "\n") : json_response(ok);
  }
  const std::string verb = path == "/api/push" ? "push" : path == "/api/create" ? "create" : path == "/api/copy" ? "copy" : "delete";
  bad_request("cannot " + verb + " models here: " + why, "model", "unsupported_parameter");
}

}  // namespace

bool is_ollama_path(const std::string& path) { return path.rfind("/api/", 0) == 0; }

std::optional<HttpResponse> HttpServer::Impl::ollama_answer_now(const HttpRequest& req) {
  if (req.path == "/api/version") return json_response(ollama_version_body());
  if (req.path == "/api/tags") return json_response(ollama_tags_body(*model.load()));
  if (req.path == "/api/ps") return json_response(ollama_ps_body(*model.load()));
  return std::nullopt;
}

void HttpServer::Impl::handle_ollama(const HttpRequest& req, ResponseWriter& w) {
  const std::string& p = req.path;
  if (p == "/api/chat" || p == "/api/generate") return handle_ollama_generation(p == "/api/chat", req, w);
  const ServedModel& m = *model.load();
  const json body = parse_json_object(req.body);
  if (p == "/api/show") {
    ollama_model(with_model_field(body), m);
    return (void)w.send(json_response(ollama_show_body(m)));
  }
  if (p == "/api/embed" || p == "/api/embeddings") return (void)w.send(handle_embed(m, body, p == "/api/embeddings"));
  w.send(handle_store(p, m, body));
}

void ollama_error_shape(const HttpRequest& req, HttpResponse& r) {
  if (r.status < 400 || !is_ollama_path(req.path)) return;
  const json j = json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return;
  const json& e = j["error"];
  const std::string message = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>()
                                                                                  : "HTTP " + std::to_string(r.status);
  r.body = ollama_error_body(message);
  r.content_type = "application/json";
}

}  // namespace og::server
