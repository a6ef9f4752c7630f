// The tool-call grammar's final size check (chat/tool_grammar.cpp,
// within_grammar_limit): the per-tool schema budget counts only the schemas
// of strict tools, so tools whose arguments are any JSON object (not strict)
// and long names can still add up past the grammar parser's 1 MiB. Such a
// request is a ChatRequestError naming 'tools' (a 400), not a grammar that
// fails to compile later (a 500).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/reply_parser.h"
#include "chat/request_error.h"
#include "chat/tool_grammar.h"
#include "grammar/grammar.h"

namespace og {
namespace {

using json = nlohmann::ordered_json;

ToolRequest tools(size_t n) {
  ToolRequest r;
  r.tools = json::array();
  for (size_t i = 0; i < n; ++i) {
    std::string name = "f" + std::to_string(i) + "_";
    name.resize(64, 'x');
    r.tools.push_back({{"type", "function"}, {"function", {{"name", name}}}});
  }
  r.choice.kind = ToolChoice::Kind::kRequired;
  r.parallel_tool_calls = true;
  return r;
}

TEST(ToolGrammarSize, PastTheParsersLimitIsARequestError) {
  ReplyParserOptions o;
  o.format.tools = ToolCallFormat::kHermes;
  // About 177 bytes a tool: 5,000 stay below 1 MiB, 6,000 do not. (More tools
  // than a request may send, 512: the per-tool budget refuses every case that
  // HTTP can build first; this is the net behind it.)
  const std::string fits = tool_call_grammar(tools(5000), o);
  EXPECT_LE(fits.size(), grammar::GrammarLimits{}.max_text_bytes);
  EXPECT_GT(fits.size(), size_t{800} << 10);
  try {
    const std::string g = tool_call_grammar(tools(6000), o);
    ADD_FAILURE() << "a grammar of " << g.size() << " bytes was returned";
  } catch (const ChatRequestError& e) {
    EXPECT_EQ(e.field(), "tools");
    EXPECT_EQ(e.code(), "unsupported_schema");
    EXPECT_NE(std::string(e.what()).find("above the limit 1048576"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace og
