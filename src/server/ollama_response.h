// Ollama's response shapes: the model list (/api/tags), the running models
// (/api/ps), /api/show, the version, chat and generate replies (one JSON
// object whole, or NDJSON lines: pieces with done false, then a last line
// with done true, done_reason and the timings in nanoseconds), embeddings,
// and errors as {"error": "text"}. Every string may hold invalid UTF-8 (a
// token's bytes): it is written with U+FFFD in its place, never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/reply_parser.h"
#include "runtime/scheduler.h"
#include "server/backend.h"

namespace og::server {

// The version /api/version reports: Ollama's API level whose shapes this
// server speaks (clients gate features on it), not offgraph's own version.
inline constexpr const char* kOllamaApiVersion = "0.6.4";

// RFC 3339 UTC with nanoseconds, as Ollama writes created_at: now, or a unix time.
std::string ollama_time_now();
std::string ollama_time(int64_t unix_seconds);

// {"error": message}.
std::string ollama_error_body(const std::string& message);

// The served model's name in lists: its id, with ":latest" when it has no tag.
std::string ollama_name(const ServedModel& m);
// completion, tools, thinking, insert, embedding: what the model can be asked for.
std::vector<std::string> ollama_capabilities(const ServedModel& m);

std::string ollama_version_body();
std::string ollama_tags_body(const ServedModel& m);
std::string ollama_ps_body(const ServedModel& m);
std::string ollama_show_body(const ServedModel& m);

// The timing fields of a finished reply (nanoseconds; counts in tokens).
struct OllamaTimings {
  int64_t total_ns = 0, load_ns = 0, prompt_eval_count = 0, prompt_eval_ns = 0, eval_count = 0, eval_ns = 0;
};
// From the scheduler's report; total_s: the request's whole time on the server.
OllamaTimings ollama_timings(const RequestReport& r, double total_s);

// One reply object. chat: {"model", "created_at", "message": {"role":
// "assistant", "content", "thinking"?, "tool_calls"?}, "done"}; generate:
// {"model", "created_at", "response", "thinking"?, "done"}. A finished one
// (timings non-null) adds done_reason, the timings and, for generate,
// `context` when given.
struct OllamaReply {
  std::string model;
  bool chat = true;
  std::string content, thinking;
  std::vector<ToolCall> tool_calls;
  const OllamaTimings* timings = nullptr;  // null: a piece, done false
  std::string done_reason;                 // "stop", "length", "load"
  const std::vector<int32_t>* context = nullptr;
};
nlohmann::ordered_json ollama_reply(const OllamaReply& r);
// The object as one NDJSON line (ending in "\n").
std::string ollama_line(const nlohmann::ordered_json& j);

// /api/embed: {"model", "embeddings", "total_duration", "load_duration", "prompt_eval_count"}.
std::string ollama_embed_body(const std::string& model, const std::vector<std::vector<float>>& vectors,
                              int64_t prompt_tokens, int64_t total_ns);
// /api/embeddings: {"embedding": [...]} ([] for no input).
std::string ollama_embedding_body(const std::vector<float>& vector);

}  // namespace og::server
