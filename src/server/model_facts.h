// What a client asking "which model is this" is told (Ollama's /api/tags,
// /api/ps and /api/show): the served file's format, size, modification time
// and a digest, its family and parameter count, its dominant weight type and
// widths. Gathered once when the server loads the model (the digest is the
// model fingerprint, ~8 MiB read, not a hash of the whole file).
#pragma once

#include <cstdint>
#include <string>

namespace og {
class Model;
class ModelSource;
}

namespace og::server {

struct ModelFacts {
  std::string path;           // the file or HF directory given to serve
  std::string format;         // "gguf" or "safetensors"; "" = unknown
  std::string family;         // the architecture: "llama", "qwen3", ...
  std::string quantization;   // the weight type holding most bytes, upper case: "Q8_0", "F16"
  std::string digest;         // 64 lower-case hex digits (runtime/model_fingerprint.h); "" = unknown
  int64_t size = 0;           // bytes on disk (a directory: its regular files)
  int64_t parameters = 0;     // elements of every tensor
  int64_t modified = 0;       // unix seconds of the file's (newest file's) modification
  int64_t context_length = 0; // the trained context (0 = unknown)
  int64_t embedding_length = 0;
  int64_t block_count = 0;
};

// Reads what it can; a fact it cannot read stays empty (never throws). The
// tensor facts come from `src`, the source the model was loaded from.
ModelFacts model_facts(const Model& m, const ModelSource& src);

// Ollama's parameter_size text: "8.0B", "494.03M", "260K", "999".
std::string parameter_size_text(int64_t n);

}  // namespace og::server
