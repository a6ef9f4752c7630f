// Where a model keeps its Jinja chat template: GGUF `tokenizer.chat_template`,
// or beside an HF checkpoint (chat_template.jinja, tokenizer_config.json,
// chat_template.json).
#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "tokenizer/chat_template.h"

namespace og {
namespace {

bool is_gguf_file(const std::string& path) {
  if (is_directory(path)) return false;
  MappedFile f = MappedFile::open(path);
  return f.size() >= 4 && std::memcmp(f.data(), "GGUF", 4) == 0;
}

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// tokenizer_config.json `chat_template`: a string, or a list of {name, template}
// from which "default" is taken (the first entry when none is called so).
std::optional<std::string> template_from_json(const nlohmann::json& j, const std::string& file) {
  auto it = j.find("chat_template");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  OG_CHECK(it->is_array(), file, ": chat_template must be a string or a list of {name, template}");
  const nlohmann::json* chosen = nullptr;
  for (const auto& e : *it) {
    OG_CHECK(e.is_object() && e.contains("template") && e["template"].is_string(), file,
             ": each chat_template entry must be an object with a string 'template'");
    if (!chosen) chosen = &e;
    if (e.contains("name") && e["name"] == "default") chosen = &e;
  }
  if (!chosen) return std::nullopt;
  return (*chosen)["template"].get<std::string>();
}

std::optional<std::string> read_hf_dir_template(const std::string& dir) {
  std::string jinja = dir + "/chat_template.jinja";
  if (file_exists(jinja)) return read_text_file(jinja);
  std::string cfg = dir + "/tokenizer_config.json";
  if (file_exists(cfg)) {
    if (auto t = template_from_json(read_json_file(cfg), cfg)) return t;
  }
  std::string ct = dir + "/chat_template.json";
  if (file_exists(ct)) return template_from_json(read_json_file(ct), ct);
  return std::nullopt;
}

}  // namespace

std::optional<std::string> read_chat_template(const GgufFile& gguf) {
  return gguf.get_string("tokenizer.chat_template");
}

std::optional<std::string> read_chat_template(const std::string& model_path) {
  OG_CHECK(file_exists(model_path), model_path, ": no such file or directory");
  if (is_directory(model_path)) return read_hf_dir_template(model_path);
  if (is_gguf_file(model_path)) return read_chat_template(*GgufFile::open(model_path));
  return read_hf_dir_template(parent_dir(model_path));  // tokenizer.json / tokenizer.model
}

}  // namespace og
