// Ollama's request shapes (/api/chat, /api/generate, /api/embed,
// /api/embeddings, /api/show and the model-store routes) read into what the
// OpenAI routes already use: a chat or generate body is rewritten as the
// OpenAI body that means the same (messages, tools, response_format,
// sampling fields, chat_template_kwargs) and parsed by api_request.h's strict
// parsers, so both APIs share every check and every limit. An error those
// parsers raise names the Ollama field ("options.repeat_penalty", "format").
// The model name must be the served id, optionally with a ":tag" (Ollama's
// names are name:tag; "stories" and "stories:latest" both match "stories").
// Nothing here touches the scheduler; ApiError (400, 404) on bad input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/api_request.h"
#include "server/backend.h"

namespace og::server {

// Whether an Ollama model name names the served model.
bool ollama_model_matches(std::string_view name, const std::string& served_id);
// The body's "model" (as the client wrote it, echoed in replies): 400 when it
// is missing or not a string, 404 when it names another model.
std::string ollama_model(const nlohmann::ordered_json& body, const ServedModel& m);

// A chat or generate request, ready for the generation path.
struct OllamaGeneration {
  GenerationRequest request;     // endpoint kChat (rendered by the template) or kCompletion (raw, suffix)
  std::string model;             // the client's name, echoed
  bool chat = true;              // /api/chat (else /api/generate)
  bool stream = true;            // Ollama's default
  bool hide_thinking = false;    // think: false (reasoning a template cannot turn off is dropped)
  bool empty = false;            // generate with an empty prompt: answered done without work
  std::vector<int32_t> context;  // generate: the earlier exchange's tokens, continued from
  std::vector<std::string> ignored;  // fields accepted and not used (logged once)
};

OllamaGeneration parse_ollama_chat(const nlohmann::ordered_json& body, const ServedModel& m);
OllamaGeneration parse_ollama_generate(const nlohmann::ordered_json& body, const ServedModel& m);

// POST /api/embed (input: a string or a list of strings; truncate, default
// true; dimensions) and the legacy /api/embeddings (prompt: one string).
struct OllamaEmbed {
  std::string model;
  std::vector<std::string> inputs;
  bool truncate = true;
  int64_t dimensions = 0;  // 0 = the model's width
};
OllamaEmbed parse_ollama_embed(const nlohmann::ordered_json& body, const ServedModel& m);
OllamaEmbed parse_ollama_embeddings(const nlohmann::ordered_json& body, const ServedModel& m);

// ApiError raised by the OpenAI parsers, with the OpenAI field names in its
// message and param replaced by Ollama's ('max_tokens' -> 'options.num_predict').
ApiError ollama_field_names(const ApiError& e);

}  // namespace og::server
