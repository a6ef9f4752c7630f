// Where chat templates are read from (GGUF metadata, HF directory files) and
// how a conversation becomes ids (BOS once, stop ids from markers).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "base/error.h"
#include "chat/chat_template.h"
#include "format/chat_template_source.h"
#include "format/gguf.h"

namespace og {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("og_chat_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return (path_ / name).string();
  }
  std::string str() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

TEST(ChatTemplateSource, HfTokenizerConfigString) {
  TempDir d;
  d.file("tokenizer_config.json", R"({"chat_template": "{{ '<|im_start|>' }}"})");
  EXPECT_EQ(read_chat_template(d.str()).value_or("?"), "{{ '<|im_start|>' }}");
  // A tokenizer.json path looks beside itself.
  std::string tj = d.file("tokenizer.json", "{}");
  EXPECT_EQ(read_chat_template(tj).value_or("?"), "{{ '<|im_start|>' }}");
}

TEST(ChatTemplateSource, HfTokenizerConfigListTakesDefault) {
  TempDir d;
  d.file("tokenizer_config.json",
         R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  EXPECT_EQ(read_chat_template(d.str()).value_or("?"), "D");
}

// What export writes into the GGUF (chat_template_gguf_keys): the default
// template, each variant under its name, and the list of names; reading that
// GGUF back gives the same templates.
TEST(ChatTemplateSource, ExportKeysCarryTheDefaultAndTheVariants) {
  TempDir d;
  d.file("tokenizer_config.json",
         R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  std::map<std::string, GgufValue> k;
  for (auto& [key, v] : chat_template_gguf_keys(d.str())) k.emplace(key, v);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k.at("tokenizer.chat_template").s, "D");
  EXPECT_EQ(k.at("tokenizer.chat_template.tool_use").s, "T");
  ASSERT_EQ(k.at("tokenizer.chat_templates").arr.size(), 1u);
  EXPECT_EQ(k.at("tokenizer.chat_templates").arr.string_at(0), "tool_use");
  TempDir none;
  none.file("config.json", "{}");
  EXPECT_TRUE(chat_template_gguf_keys(none.str()).empty());
}

TEST(ChatTemplateSource, JinjaFileWins) {
  TempDir d;
  d.file("tokenizer_config.json", R"({"chat_template": "old"})");
  d.file("chat_template.jinja", "<start_of_turn>");
  EXPECT_EQ(read_chat_template(d.str()).value_or("?"), "<start_of_turn>");
}

TEST(ChatTemplateSource, NoTemplateIsNullopt) {
  TempDir d;
  d.file("tokenizer_config.json", R"({"add_bos_token": true})");
  EXPECT_FALSE(read_chat_template(d.str()).has_value());
  EXPECT_FALSE(read_chat_template(std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf").has_value());
}

TEST(ChatTemplateSource, BadInputsAreErrors) {
  TempDir d;
  d.file("tokenizer_config.json", R"({"chat_template": 5})");
  EXPECT_THROW(read_chat_template(d.str()), Error);
  TempDir d2;
  d2.file("tokenizer_config.json", R"({"chat_template": [{"name": "x"}]})");
  EXPECT_THROW(read_chat_template(d2.str()), Error);
  EXPECT_THROW(read_chat_template(d.str() + "/missing"), Error);
}

TEST(ChatTemplateSource, GgufKey) {
  TempDir d;
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("llama"));
  w.set("tokenizer.chat_template", GgufValue::make_string("{{ '<|start_header_id|>' }}"));
  std::string path = d.str() + "/t.gguf";
  w.write(path);
  EXPECT_EQ(read_chat_template(path).value_or("?"), "{{ '<|start_header_id|>' }}");
  EXPECT_EQ(make_chat_template("auto", read_chat_template(path))->name(), "llama3");
  GgufWriter w2;
  w2.set("general.architecture", GgufValue::make_string("llama"));
  std::string path2 = d.str() + "/u.gguf";
  w2.write(path2);
  EXPECT_FALSE(read_chat_template(path2).has_value());
}

}  // namespace
}  // namespace og
