// og_limits (offgraph.h): the bounds serve takes as --template-max-* and
// --schema-max-* reach a program's chat. A hostile chat template and a large
// enum through og_session_chat stop at a small limit the program set, naming
// it; bad values are refused naming the field and change nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "offgraph/offgraph.h"

namespace {

namespace fs = std::filesystem;

// A tiny model whose chat template is `tmpl` (og-synth --chat-template).
std::string model_with_template(const std::string& name, const std::string& tmpl) {
  const fs::path dir = fs::temp_directory_path() / ("og-api-limits-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string t = (dir / (name + ".jinja")).string();
  std::ofstream(t) << tmpl;
  const std::string out = (dir / (name + ".gguf")).string();
  const std::string cmd = std::string(OG_BINARY_DIR) + "/og-synth --family qwen3 --format gguf --out '" + out +
                          "' --chat-template '" + t + "' > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

// Restores the built-in limits after each test (they are the process's).
class LimitsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    og_limits d;
    og_limits_init(&d);
    EXPECT_EQ(og_set_limits(&d), OG_OK) << og_last_error();
    if (session_) EXPECT_EQ(og_session_free(session_), OG_OK);
    if (model_) EXPECT_EQ(og_model_close(model_), OG_OK);
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("og-api-limits-" + std::to_string(::getpid())), ec);
  }
  void open(const std::string& path) {
    ASSERT_EQ(og_model_open(path.c_str(), nullptr, &model_), OG_OK) << og_last_error();
    ASSERT_EQ(og_session_new(model_, nullptr, &session_), OG_OK) << og_last_error();
  }
  og_status chat(const og_chat_request& q) {
    og_chat_result r{};
    og_generate_options g;
    og_generate_options_init(&g);
    g.max_new_tokens = 4;
    const og_status s = og_session_chat(session_, &q, &g, &r);
    og_chat_result_free(&r);
    return s;
  }
  og_model* model_ = nullptr;
  og_session* session_ = nullptr;
};

const og_chat_msg kHello[] = {{"user", "hello", nullptr, nullptr, nullptr, 0, nullptr}};

TEST_F(LimitsTest, DefaultsAreTheServersAndBadValuesAreRefusedNamingTheField) {
  og_limits l;
  og_limits_init(&l);
  EXPECT_EQ(l.template_max_work, 0);
  EXPECT_EQ(l.template_max_ms, 10'000);
  EXPECT_EQ(l.template_max_value_bytes, 16 << 20);
  EXPECT_EQ(l.template_max_memory_bytes, 256 << 20);
  EXPECT_EQ(l.schema_max_properties, 1024);
  EXPECT_EQ(l.schema_max_branches, 1024);
  EXPECT_EQ(l.schema_max_enum_values, 65536);
  EXPECT_EQ(l.schema_max_work, 1 << 18);

  og_limits bad = l;
  bad.template_max_value_bytes = 10;
  bad.schema_max_enum_values = 5;  // valid, but the struct is refused whole
  EXPECT_EQ(og_set_limits(&bad), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("og_limits.template_max_value_bytes is 10, outside [1024, "),
            std::string::npos)
      << og_last_error();
  bad = l;
  bad.schema_max_work = 0;
  EXPECT_EQ(og_set_limits(&bad), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("og_limits.schema_max_work is 0"), std::string::npos) << og_last_error();
  bad = l;
  bad.struct_size = 0;
  EXPECT_EQ(og_set_limits(&bad), OG_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(og_set_limits(nullptr), OG_ERR_INVALID_ARGUMENT);

  og_limits now;
  now.struct_size = sizeof now;
  ASSERT_EQ(og_get_limits(&now), OG_OK) << og_last_error();
  EXPECT_EQ(now.schema_max_enum_values, 65536);  // nothing changed
  EXPECT_EQ(now.template_max_value_bytes, 16 << 20);
}

TEST_F(LimitsTest, AHostileTemplateStopsAtTheProgramsWorkLimit) {
  // Quadratic copying: ~4e10 bytes copied, far past any budget.
  open(model_with_template("hostile",
                           "{% set ns = namespace(s='') %}{% for i in range(100000) %}"
                           "{% set ns.s = ns.s ~ 'abcdefgh' %}{% endfor %}{{ ns.s }}"));
  og_limits l;
  og_limits_init(&l);
  l.template_max_work = 100'000;
  ASSERT_EQ(og_set_limits(&l), OG_OK) << og_last_error();
  og_limits now;
  now.struct_size = sizeof now;
  ASSERT_EQ(og_get_limits(&now), OG_OK);
  EXPECT_EQ(now.template_max_work, 100'000);

  og_chat_request q;
  og_chat_request_init(&q);
  q.messages = kHello;
  q.n_messages = 1;
  EXPECT_EQ(chat(q), OG_ERR_INVALID_ARGUMENT);
  const std::string e = og_last_error();
  EXPECT_NE(e.find("work budget (100000 units)"), std::string::npos) << e;
}

TEST_F(LimitsTest, ASchemaPastTheProgramsEnumLimitIsRefusedNamingIt) {
  open(model_with_template("plain", "{% for m in messages %}{{ m.content }}{% endfor %}"));
  og_chat_request q;
  og_chat_request_init(&q);
  q.messages = kHello;
  q.n_messages = 1;
  q.response_format = "json_schema";
  q.json_schema = R"({"enum": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]})";
  og_limits l;
  og_limits_init(&l);
  l.schema_max_enum_values = 10;
  ASSERT_EQ(og_set_limits(&l), OG_OK) << og_last_error();
  EXPECT_EQ(chat(q), OG_ERR_INVALID_ARGUMENT);
  const std::string e = og_last_error();
  EXPECT_NE(e.find("response_format.json_schema.schema"), std::string::npos) << e;
  EXPECT_NE(e.find("has 12 values, above the limit 10"), std::string::npos) << e;

  og_limits_init(&l);  // the defaults take it
  ASSERT_EQ(og_set_limits(&l), OG_OK);
  EXPECT_EQ(chat(q), OG_OK) << og_last_error();
}

}  // namespace
