// POST /v1/embeddings (and /embeddings): OpenAI's request shape parsed
// strictly into token-id inputs (input: a string, a list of strings, a list of
// token ids or a list of such lists; encoding_format float | base64;
// dimensions, a Matryoshka truncation re-normalised after; model), embedded
// through the runtime's Embedder, answered in OpenAI's shape with usage.
// Every bad input is a 400 naming the field; a model that does not embed is a
// 400 too. The body builder is shared with `offgraph embed --output-format json`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/embedder.h"
#include "server/backend.h"

namespace og::server {

struct EmbeddingsRequest {
  std::string model;
  std::vector<std::string> texts;             // input as text (one per input), or
  std::vector<std::vector<int32_t>> tokens;   // input as token ids (one list per input)
  bool base64 = false;                        // encoding_format "base64"
  int64_t dimensions = 0;                     // 0 = not asked
};

// Throws ApiError (400) naming the field.
EmbeddingsRequest parse_embeddings_request(const nlohmann::ordered_json& body);

// OpenAI's list body: data[i] = {"object": "embedding", "index": i,
// "embedding": [floats] or base64 of little-endian float32}, "model", usage.
// Pooling none gives each input's per-token vectors as a list of lists (float only).
nlohmann::ordered_json embeddings_body(const EmbedResult& r, const std::string& model, bool base64);

// The served model's embeddings of token-id inputs (L2-normalised, cut to
// `dimensions` when > 0): ApiError 400 when the model does not embed, has
// pooling none, `dimensions` exceeds its width or an input is refused (the
// Ollama routes share it).
EmbedResult embed_for(const ServedModel& m, const std::vector<std::vector<int32_t>>& inputs, int64_t dimensions);

// The whole route: parse, check the model, tokenize (BOS/EOS as the
// vocabulary says), embed (L2-normalised), build the body. ApiError for the client's mistakes.
std::string handle_embeddings(const ServedModel& m, const std::string& body);

}  // namespace og::server
