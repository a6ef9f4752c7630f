// Hugging Face checkpoint directories: JSON reading with errors naming the file,
// typed field access, and the directory layout (config, generation config,
// tokenizer files, chat template, safetensors weights).
#include "format/hf_config.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "base/error.h"
#include "base/mapped_file.h"
#include "format/chat_template_source.h"

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

std::string json_excerpt(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

namespace {
// null counts as absent: HF configs write null for "not set" (rope_scaling, sliding_window).
const nlohmann::json* field(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53: every integer up to it is a double
}  // namespace

bool json_has(const nlohmann::json& obj, const char* key) { return field(obj, key) != nullptr; }

std::optional<int64_t> json_int(const nlohmann::json& obj, const char* key, const std::string& file) {
  const nlohmann::json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(file, ": ", key, " = ", u, " is too large");
    return static_cast<int64_t>(u);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {  // some writers emit 2048.0
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) <= kMaxExactInt) return static_cast<int64_t>(d);
  }
  fail(file, ": ", key, " must be an integer, got ", json_excerpt(*v));
}

std::optional<double> json_number(const nlohmann::json& obj, const char* key, const std::string& file) {
  const nlohmann::json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(file, ": ", key, " must be a number, got ", json_excerpt(*v));
  return v->get<double>();
}

std::optional<bool> json_bool(const nlohmann::json& obj, const char* key, const std::string& file) {
  const nlohmann::json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(file, ": ", key, " must be true or false, got ", json_excerpt(*v));
  return v->get<bool>();
}

std::optional<std::string> json_string(const nlohmann::json& obj, const char* key, const std::string& file) {
  const nlohmann::json* v = field(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(file, ": ", key, " must be a string, got ", json_excerpt(*v));
  return v->get<std::string>();
}

namespace {

std::string join(const std::string& dir, const char* name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

// The names of a directory's regular files (a symlink to one counts: HF cache
// snapshots are symlinks to blobs), from one listing instead of a check per name.
std::set<std::string> regular_files(const std::string& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) names.insert(it->path().filename().string());
  }
  return names;
}

// tokenizer_config.json / chat_template.json `chat_template`: a string, or a
// list of {name, template} from which "default" is taken (else the first).
std::optional<std::string> template_from_json(const nlohmann::json& j, const std::string& file) {
  const nlohmann::json* t = field(j, "chat_template");
  if (!t) return std::nullopt;
  if (t->is_string()) return t->get<std::string>();
  OG_CHECK(t->is_array(), file, ": chat_template must be a string or a list of {name, template}, got ",
           json_excerpt(*t));
  const nlohmann::json* chosen = nullptr;
  for (const auto& e : *t) {
    OG_CHECK(e.is_object() && json_has(e, "template") && e["template"].is_string(), file,
             ": each chat_template entry must be an object with a string 'template'");
    if (!chosen) chosen = &e;
    if (json_string(e, "name", file) == std::optional<std::string>("default")) chosen = &e;
  }
  if (!chosen) return std::nullopt;
  return (*chosen)["template"].get<std::string>();
}

// The list form's entries other than the default one.
std::map<std::string, std::string> variants_from_json(const nlohmann::json& j, const std::string& file) {
  std::map<std::string, std::string> out;
  const nlohmann::json* t = field(j, "chat_template");
  if (!t || !t->is_array()) return out;
  for (const auto& e : *t) {
    OG_CHECK(e.is_object() && json_has(e, "template") && e["template"].is_string(), file,
             ": each chat_template entry must be an object with a string 'template'");
    const std::optional<std::string> name = json_string(e, "name", file);
    if (name && *name != "default" && !name->empty()) out.emplace(*name, e["template"].get<std::string>());
  }
  return out;
}

}  // namespace

namespace {

// open_files, and open's check for config.json before anything is read.
HfCheckpoint read_files(const std::string& dir, bool require_config) {
  if (!file_exists(dir)) fail(dir, ": no such file or directory");
  if (!is_directory(dir)) fail(dir, ": not a directory (expected a Hugging Face checkpoint directory)");
  const std::set<std::string> files = regular_files(dir);
  auto if_exists = [&](const char* name) { return files.count(name) ? join(dir, name) : std::string(); };
  if (require_config && !files.count("config.json"))
    fail(dir, ": no config.json (not a Hugging Face checkpoint directory)");
  HfCheckpoint c;
  c.dir = dir;
  c.config = nlohmann::json::object();
  c.config_path = if_exists("config.json");
  if (!c.config_path.empty()) c.config = read_json_file(c.config_path);
  if (auto gen = if_exists("generation_config.json"); !gen.empty()) c.generation_config = read_json_file(gen);
  if (auto tc = if_exists("tokenizer_config.json"); !tc.empty()) c.tokenizer_config = read_json_file(tc);
  c.tokenizer_json_path = if_exists("tokenizer.json");
  c.tokenizer_model_path = if_exists("tokenizer.model");
  c.vocab_json_path = if_exists("vocab.json");
  c.merges_txt_path = if_exists("merges.txt");
  if (c.vocab_json_path.empty() || c.merges_txt_path.empty()) c.vocab_json_path.clear(), c.merges_txt_path.clear();
  c.chat_template_path = if_exists("chat_template.jinja");
  c.chat_template_json_path = if_exists("chat_template.json");
  return c;
}

}  // namespace

HfCheckpoint HfCheckpoint::open_files(const std::string& dir) { return read_files(dir, false); }

HfCheckpoint HfCheckpoint::open(const std::string& dir, bool load_weights) {
  HfCheckpoint c = read_files(dir, true);
  if (load_weights) c.weights = SafetensorsSource::open_dir(dir);
  return c;
}

std::optional<std::string> HfCheckpoint::chat_template() const {
  if (!chat_template_path.empty()) return read_text_file(chat_template_path);
  if (tokenizer_config) {
    if (auto t = template_from_json(*tokenizer_config, join(dir, "tokenizer_config.json"))) return t;
  }
  if (!chat_template_json_path.empty())
    return template_from_json(read_json_file(chat_template_json_path), chat_template_json_path);
  return std::nullopt;
}

std::map<std::string, std::string> HfCheckpoint::chat_template_variants() const {
  if (tokenizer_config) {
    auto v = variants_from_json(*tokenizer_config, join(dir, "tokenizer_config.json"));
    if (!v.empty()) return v;
  }
  if (!chat_template_json_path.empty())
    return variants_from_json(read_json_file(chat_template_json_path), chat_template_json_path);
  return {};
}

StoredChatTemplates read_chat_templates(const HfCheckpoint& ck) {
  StoredChatTemplates t;
  const std::string tc_name = join(ck.dir, "tokenizer_config.json");
  // chat_template.json is read at most once, for either part.
  std::optional<nlohmann::json> ct_json;
  auto chat_template_json = [&]() -> const nlohmann::json& {
    if (!ct_json) ct_json = read_json_file(ck.chat_template_json_path);
    return *ct_json;
  };
  if (!ck.chat_template_path.empty()) t.text = read_text_file(ck.chat_template_path);
  if (!t.text && ck.tokenizer_config) t.text = template_from_json(*ck.tokenizer_config, tc_name);
  if (!t.text && !ck.chat_template_json_path.empty())
    t.text = template_from_json(chat_template_json(), ck.chat_template_json_path);
  if (ck.tokenizer_config) t.variants = variants_from_json(*ck.tokenizer_config, tc_name);
  if (t.variants.empty() && !ck.chat_template_json_path.empty())
    t.variants = variants_from_json(chat_template_json(), ck.chat_template_json_path);
  return t;
}

}  // namespace og
