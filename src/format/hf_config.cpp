// Hugging Face checkpoint directories: JSON reading with errors naming the file,
// typed field access, and the directory layout (config, generation config,
// tokenizer files, safetensors weights).
#include "format/hf_config.h"

#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/mapped_file.h"

namespace og {

nlohmann::json parse_json_object(const std::string& text, const std::string& name) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(name, ": not valid JSON (", e.what(), ")");
  }
  if (!j.is_object()) fail(name, ": expected a JSON object at the top level");
  return j;
}

nlohmann::json read_json_file(const std::string& path) { return parse_json_object(read_text_file(path), path); }

namespace {
// null counts as absent: HF configs write null for "not set" (rope_scaling, sliding_window).
const nlohmann::json* field(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}
}  // namespace

std::optional<int64_t> json_int(const nlohmann::json& obj, const char* key, const std::string& file) {
  const nlohmann::json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(file, ": ", key, " value ", u, " is too large");
    return static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {  // some writers emit 2048.0
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  fail(file, ": ", key, " must be an integer");
}

std::optional<double> json_number(const nlohmann::json& obj, const char* key, const std::string& file) {
  const nlohmann::json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(file, ": ", key, " must be a number");
  return v->get<double>();
}

std::optional<bool> json_bool(const nlohmann::json& obj, const char* key, const std::string& file) {
  const nlohmann::json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(file, ": ", key, " must be true or false");
  return v->get<bool>();
}

std::optional<std::string> json_string(const nlohmann::json& obj, const char* key, const std::string& file) {
  const nlohmann::json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(file, ": ", key, " must be a string");
  return v->get<std::string>();
}

HfCheckpoint HfCheckpoint::open(const std::string& dir, bool load_weights) {
  if (!file_exists(dir)) fail(dir, ": no such file or directory");
  if (!is_directory(dir)) fail(dir, ": not a directory (expected a Hugging Face checkpoint directory)");
  HfCheckpoint c;
  c.dir = dir;
  std::string config = dir + "/config.json";
  if (!file_exists(config)) fail(dir, ": no config.json (not a Hugging Face checkpoint directory)");
  c.config = read_json_file(config);
  std::string gen = dir + "/generation_config.json";
  if (file_exists(gen)) c.generation_config = read_json_file(gen);
  std::string tok_config = dir + "/tokenizer_config.json";
  if (file_exists(tok_config)) c.tokenizer_config = read_json_file(tok_config);
  if (file_exists(dir + "/tokenizer.json")) c.tokenizer_json_path = dir + "/tokenizer.json";
  if (file_exists(dir + "/tokenizer.model")) c.tokenizer_model_path = dir + "/tokenizer.model";
  if (file_exists(dir + "/chat_template.jinja")) c.chat_template_path = dir + "/chat_template.jinja";
  if (load_weights) c.weights = SafetensorsSource::open_dir(dir);
  return c;
}

}  // namespace og
