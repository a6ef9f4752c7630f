// The library's messages speak its own terms: no command-line flag (--chat,
// --kv-max-capacity, ...) in what og_last_error() says for a bad chat
// template name or a cache too large to allocate.
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

}  // namespace
}  // namespace og_test
