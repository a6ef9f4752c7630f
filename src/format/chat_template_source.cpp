// Where a model keeps its Jinja chat template: GGUF `tokenizer.chat_template`,
// or beside an HF checkpoint (HfCheckpoint::chat_template, the one reader of
// such a directory); and the GGUF keys export writes for it.
#include "format/chat_template_source.h"

#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/gguf.h"
#include "format/hf_config.h"

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

}  // namespace

std::optional<std::string> read_chat_template(const GgufFile& gguf) {
  return gguf.get_string("tokenizer.chat_template");
}

std::map<std::string, std::string> read_chat_template_variants(const GgufFile& gguf) {
  static constexpr std::string_view kPrefix = "tokenizer.chat_template.";
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : gguf.metadata()) {
    if (key.size() <= kPrefix.size() || key.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    if (auto s = gguf.get_string(key)) out.emplace(key.substr(kPrefix.size()), *s);
  }
  return out;
}

std::map<std::string, std::string> read_chat_template_variants(const std::string& model_path) {
  OG_CHECK(file_exists(model_path), model_path, ": no such file or directory");
  if (is_directory(model_path)) return HfCheckpoint::open_files(model_path).chat_template_variants();
  if (is_gguf_file(model_path)) return read_chat_template_variants(*GgufFile::open(model_path));
  return HfCheckpoint::open_files(parent_dir(model_path)).chat_template_variants();
}

std::optional<std::string> read_chat_template(const std::string& model_path) {
  OG_CHECK(file_exists(model_path), model_path, ": no such file or directory");
  if (is_directory(model_path)) return HfCheckpoint::open_files(model_path).chat_template();
  if (is_gguf_file(model_path)) return read_chat_template(*GgufFile::open(model_path));
  return HfCheckpoint::open_files(parent_dir(model_path)).chat_template();  // tokenizer.json / tokenizer.model
}

std::vector<std::pair<std::string, GgufValue>> chat_template_gguf_keys(const std::string& hf_dir) {
  OG_CHECK(file_exists(hf_dir), hf_dir, ": no such file or directory");
  return chat_template_gguf_keys(read_chat_templates(HfCheckpoint::open_files(hf_dir)));
}

std::vector<std::pair<std::string, GgufValue>> chat_template_gguf_keys(const StoredChatTemplates& t) {
  std::vector<std::pair<std::string, GgufValue>> k;
  if (t.text) k.emplace_back("tokenizer.chat_template", GgufValue::make_string(*t.text));
  std::vector<GgufValue> names;
  for (const auto& [name, text] : t.variants) {
    k.emplace_back("tokenizer.chat_template." + name, GgufValue::make_string(text));
    names.push_back(GgufValue::make_string(name));
  }
  if (!names.empty()) k.emplace_back("tokenizer.chat_templates", GgufValue::make_array(GgufType::STRING, std::move(names)));
  return k;
}

}  // namespace og
