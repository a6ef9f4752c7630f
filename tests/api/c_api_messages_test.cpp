// The library's messages speak its own terms: no command-line flag (--chat,
// --kv-max-capacity, ...) in what og_last_error() says for a bad chat
// template name or a cache too large to allocate. And the ABI rule: option
// structs carry their size, and a bad struct_size is refused by name.
#include <cstddef>
#include <string>

#include "api/api_test_util.h"

namespace og_test {
namespace {

void expect_no_flag(const std::string& message) {
  EXPECT_EQ(message.find("--"), std::string::npos) << "a library message names a command-line flag: " << message;
}

TEST(CApiMessages, AnUnknownChatTemplateIsNamedAsTheOption) {
  og_model_options o;
  og_model_options_init(&o);
  o.chat_template = "nonsense";
  og_model* m = nullptr;
  ASSERT_EQ(og_model_open(kModelPath.c_str(), &o, &m), OG_ERR_INVALID_ARGUMENT);
  const std::string e = og_last_error();
  EXPECT_EQ(e.rfind("chat_template \"nonsense\" is not a chat template (known: auto, ", 0), 0u) << e;
  EXPECT_NE(e.find("chatml"), std::string::npos) << e;
  expect_no_flag(e);
}

TEST_F(ModelTest, ACacheTooLargeNamesTheSessionOptions) {
  og_session_options o;
  og_session_options_init(&o);
  o.kv_max_capacity = int64_t{1} << 42;
  o.kv_initial_capacity = int64_t{1} << 42;
  og_session* s = nullptr;
  const og_status st = og_session_new(model_, &o, &s);
  ASSERT_NE(st, OG_OK);
  EXPECT_EQ(s, nullptr);
  const std::string e = og_last_error();
  expect_no_flag(e);
  if (st == OG_ERR_RUNTIME) EXPECT_NE(e.find("lower og_session_options.kv_max_capacity"), std::string::npos) << e;
}

// read_options' minimum is where a struct's last field ended when it was first
// published (FirstPublished in c_api_internal.h), not today's sizeof: a program
// whose struct stops there, tail padding or appended fields aside, is read.
TEST_F(ModelTest, OptionStructsAreReadFromTheEndOfTheirFirstPublishedFields) {
  og_model_options mo;
  og_model_options_init(&mo);
  mo.struct_size = offsetof(og_model_options, experts_in_memory) + sizeof(mo.experts_in_memory);
  og_model* m = nullptr;
  ASSERT_EQ(og_model_open(kModelPath.c_str(), &mo, &m), OG_OK) << og_last_error();
  og_session_options so;
  og_session_options_init(&so);
  so.struct_size = offsetof(og_session_options, prefill_chunk_size) + sizeof(so.prefill_chunk_size);
  og_session* s = nullptr;
  ASSERT_EQ(og_session_new(m, &so, &s), OG_OK) << og_last_error();
  og_generate_options o;
  og_generate_options_init(&o);
  o.max_new_tokens = 2;
  o.struct_size = offsetof(og_generate_options, top_logprobs) + sizeof(o.top_logprobs);
  og_generation g{};
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_OK) << og_last_error();
  og_generation_free(&g);
  mo.struct_size = offsetof(og_model_options, experts_in_memory);  // one field short of ABI 2's
  og_model* short_one = nullptr;
  EXPECT_EQ(og_model_open(kModelPath.c_str(), &mo, &short_one), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("is smaller than any offgraph.h's"), std::string::npos);
  EXPECT_EQ(og_session_free(s), OG_OK);
  EXPECT_EQ(og_model_close(m), OG_OK);
}

TEST_F(ModelTest, OptionStructsCarryTheirSize) {
  og_generate_options o;
  og_generate_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(og_generate_options));
  og_session* s = new_session();
  og_generation g{};
  o.struct_size = 0;  // not initialised
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(og_last_error(),
               "og_generate_options.struct_size is 0: initialise the struct with og_generate_options_init");
  o.struct_size = sizeof(og_generate_options) + 8;  // built against a newer header
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("larger than this library's"), std::string::npos) << og_last_error();
  o.struct_size = 4;
  EXPECT_EQ(og_session_generate(s, kPromptIds.data(), kPromptIds.size(), &o, &g), OG_ERR_INVALID_ARGUMENT);
  og_session_options so;
  og_session_options_init(&so);
  EXPECT_EQ(so.struct_size, sizeof(og_session_options));
  so.struct_size = 0;
  og_session* bad = nullptr;
  EXPECT_EQ(og_session_new(model_, &so, &bad), OG_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(og_last_error()).find("og_session_options.struct_size is 0"), std::string::npos);
  og_model_options mo;
  og_model_options_init(&mo);
  mo.struct_size = 1;
  og_model* m = nullptr;
  EXPECT_EQ(og_model_open(kModelPath.c_str(), &mo, &m), OG_ERR_INVALID_ARGUMENT);
  og_engine_options eo;
  og_engine_options_init(&eo);
  eo.struct_size = 0;
  og_engine* e = nullptr;
  EXPECT_EQ(og_engine_new(model_, &eo, &e), OG_ERR_INVALID_ARGUMENT);
  og_embed_options bo;
  og_embed_options_init(&bo);
  EXPECT_EQ(bo.struct_size, sizeof(og_embed_options));
  EXPECT_EQ(OG_ABI_VERSION, 2);
  og_session_free(s);
}

}  // namespace
}  // namespace og_test
