// max_reasoning_tokens (issue 49 item 3): an integer >= 0 kept on the
// request's params (unset: the server's default, generation.h), anything else
// one 400 naming the field; a structured-output grammar keeps its text, which
// a chat format wraps with its reasoning block.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/chat_request.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "server/generation.h"

namespace og::server {
namespace {

GenerationRequest chat(const std::string& extra) {
  return parse_chat_request(parse_json_object(R"({"messages": [{"role": "user", "content": "Hi"}])" + extra + "}"));
}

TEST(ReasoningBudgetRequest, TakesANonNegativeInteger) {
  EXPECT_FALSE(chat("").params.max_reasoning_tokens.has_value());
  EXPECT_EQ(chat(R"(, "max_reasoning_tokens": 0)").params.max_reasoning_tokens, 0);
  EXPECT_EQ(chat(R"(, "max_reasoning_tokens": 300)").params.max_reasoning_tokens, 300);
  EXPECT_GT(og::kChatDefaultMaxReasoningTokens, 0);
  for (const char* bad : {R"(, "max_reasoning_tokens": -1)", R"(, "max_reasoning_tokens": "5")",
                          R"(, "max_reasoning_tokens": 1.5)", R"(, "max_reasoning_tokens": 99999999999)"}) {
    SCOPED_TRACE(bad);
    try {
      chat(bad);
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "max_reasoning_tokens");
    }
  }
}

TEST(ReasoningBudgetRequest, KeepsTheGrammarText) {
  const GenerationRequest r = chat(R"(, "grammar": "root ::= \"yes\"")");
  EXPECT_EQ(r.params.grammar_text, "root ::= \"yes\"");
  EXPECT_EQ(r.params.grammar_from, "grammar");
  const GenerationRequest s = chat(R"(, "response_format": {"type": "json_object"})");
  EXPECT_FALSE(s.params.grammar_text.empty());
}

}  // namespace
}  // namespace og::server
