// Hugging Face checkpoint directories: config.json, generation_config.json,
// tokenizer files, weights. JSON is parsed with nlohmann::json; every parse or
// type error is an og::Error naming the file.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "format/safetensors.h"

namespace og {

// Parses JSON text; the result must be an object. `name` is used in messages.
nlohmann::json parse_json_object(const std::string& text, const std::string& name);
nlohmann::json read_json_file(const std::string& path);  // must be an object

struct HfCheckpoint {
  std::string dir;
  nlohmann::json config;                         // config.json (required)
  std::optional<nlohmann::json> generation_config;
  std::optional<nlohmann::json> tokenizer_config;  // tokenizer_config.json
  std::string tokenizer_json_path;               // "" when absent
  std::string tokenizer_model_path;              // SentencePiece tokenizer.model, "" when absent
  std::string chat_template_path;                // chat_template.jinja (newer repos), "" when absent
  std::unique_ptr<SafetensorsSource> weights;    // null when opened with load_weights = false

  static HfCheckpoint open(const std::string& dir, bool load_weights = true);
};

// Typed field access with messages like "config.json: hidden_size must be an integer".
std::optional<int64_t> json_int(const nlohmann::json& obj, const char* key, const std::string& file);
std::optional<double> json_number(const nlohmann::json& obj, const char* key, const std::string& file);
std::optional<bool> json_bool(const nlohmann::json& obj, const char* key, const std::string& file);
std::optional<std::string> json_string(const nlohmann::json& obj, const char* key, const std::string& file);

}  // namespace og
