// Where a model keeps its Jinja chat template text: GGUF
// `tokenizer.chat_template` (and its named variants), or the files of an HF
// checkpoint (HfCheckpoint, the one reader of such a directory). Only the
// text: what it means is src/chat/'s business.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace og {

class GgufFile;
struct GgufValue;
struct HfCheckpoint;

// A model's stored template and its named variants, read together.
struct StoredChatTemplates {
  std::optional<std::string> text;
  std::map<std::string, std::string> variants;
};
// Both from an opened HF directory, each of its files read once (ModelSource
// calls this; the path-based readers below open the directory themselves).
StoredChatTemplates read_chat_templates(const HfCheckpoint& ck);

// The template stored with a model: GGUF `tokenizer.chat_template`; in an HF
// directory chat_template.jinja, else tokenizer_config.json `chat_template`
// (a string, or a list of {name, template} where "default" is taken), else
// chat_template.json. A tokenizer.json / tokenizer.model path looks beside
// itself. nullopt when there is none.
std::optional<std::string> read_chat_template(const std::string& model_path);
std::optional<std::string> read_chat_template(const GgufFile& gguf);
// The model's named template variants besides the default ("tool_use", ...):
// GGUF `tokenizer.chat_template.NAME`, an HF list of {name, template}.
std::map<std::string, std::string> read_chat_template_variants(const std::string& model_path);
std::map<std::string, std::string> read_chat_template_variants(const GgufFile& gguf);

// The GGUF keys of an HF checkpoint's templates, as GGUF converters write
// them and read_chat_template(GgufFile) reads them: `tokenizer.chat_template`,
// each variant as `tokenizer.chat_template.NAME` and their names in
// `tokenizer.chat_templates`. Empty when the directory has none. (Export adds
// them to the file it writes; the tokenizer's keys hold no template.)
std::vector<std::pair<std::string, GgufValue>> chat_template_gguf_keys(const std::string& hf_dir);
std::vector<std::pair<std::string, GgufValue>> chat_template_gguf_keys(const StoredChatTemplates& t);

}  // namespace og
