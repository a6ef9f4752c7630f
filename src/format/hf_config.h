// Hugging Face checkpoint directories: the one reader of what such a directory
// holds (config.json, generation_config.json, tokenizer files, chat template,
// weights), and the one set of typed JSON accessors every reader of HF JSON
// uses. JSON is parsed with nlohmann::json; every parse or type error is an
// og::Error naming the file and the field.
#pragma once

#include <map>
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
  nlohmann::json config;                         // config.json (an empty object when absent and not required)
  std::optional<nlohmann::json> generation_config;
  std::optional<nlohmann::json> tokenizer_config;  // tokenizer_config.json
  std::string config_path;                       // "<dir>/config.json", "" when absent
  std::string tokenizer_json_path;               // "" when absent
  std::string tokenizer_model_path;              // SentencePiece tokenizer.model, "" when absent
  std::string vocab_json_path, merges_txt_path;  // GPT-2 layout, both or neither
  std::string chat_template_path;                // chat_template.jinja (newer repos), "" when absent
  std::string chat_template_json_path;           // chat_template.json, "" when absent
  std::unique_ptr<SafetensorsSource> weights;    // null when opened with load_weights = false

  // A model checkpoint: config.json is required; weights are opened when asked.
  static HfCheckpoint open(const std::string& dir, bool load_weights = true);
  // Any directory of HF files (a tokenizer-only one included): reads the JSON
  // files that are present, notes the others' paths, opens no weights.
  static HfCheckpoint open_files(const std::string& dir);

  // The Jinja chat template: chat_template.jinja, else tokenizer_config.json
  // `chat_template` (a string, or a list of {name, template} from which
  // "default" or else the first is taken), else chat_template.json.
  std::optional<std::string> chat_template() const;
  // The named templates besides the default one (a tokenizer_config.json or
  // chat_template.json list of {name, template}: "tool_use", "rag", ...).
  std::map<std::string, std::string> chat_template_variants() const;
};

// Typed field access. A null field counts as absent (HF configs write null for
// "not set"); a present field of the wrong type is an og::Error such as
// "config.json: hidden_size must be an integer, got \"x\"". An integer may be
// written as an integral number (2048 or 2048.0, as some writers emit) within
// ±2^53; 2048.5, true or "2048" are refused.
bool json_has(const nlohmann::json& obj, const char* key);
std::optional<int64_t> json_int(const nlohmann::json& obj, const char* key, const std::string& file);
std::optional<double> json_number(const nlohmann::json& obj, const char* key, const std::string& file);
std::optional<bool> json_bool(const nlohmann::json& obj, const char* key, const std::string& file);
std::optional<std::string> json_string(const nlohmann::json& obj, const char* key, const std::string& file);
// A value for messages: its JSON text, cut to 60 characters.
std::string json_excerpt(const nlohmann::json& v);

}  // namespace og
