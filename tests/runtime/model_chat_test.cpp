// runtime/model_chat: the one assembly of a model's chat setup that the
// server, the C API and the commands share. The model's "tool_use" variant
// renders requests with tools only when the run renders with the model's own
// template; a variant that does not parse is a warning, never an error; the
// variant's tool-call format is taken when the default template has none.
#include "runtime/model_chat.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "chat/jinja_chat.h"

namespace og {
namespace {

const std::string kDefault = "{% for m in messages %}D:{{ m.content }}{% endfor %}";
const std::string kToolUse =
    "{% for t in tools %}T:{{ t.function.name }};{% endfor %}{% for m in messages %}U:{{ m.content }}{% endfor %}";

// A loaded model as the run builder leaves it, with `tmpl_source` as the run's template.
LoadedModel loaded(const std::string& tmpl_source, const std::string& tool_use = kToolUse) {
  const std::string path = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
  if (!std::filesystem::exists(path)) throw Error("missing test data " + path);
  LoadedModel l;
  l.tok = Tokenizer::from_path(path);
  l.model_template = kDefault;
  l.model_template_variants["tool_use"] = tool_use;
  l.tmpl = std::make_unique<JinjaChatTemplate>(tmpl_source, jinja_options_of(*l.tok), "test");
  return l;
}

std::string render(const ChatSetup& setup, bool tools) {
  ChatRequest r;
  ChatRequestMessage m;
  m.role = "user";
  m.content = "hi";
  r.messages.push_back(m);
  if (tools) {
    ChatTool t;
    t.name = "f";
    t.parameters = R"({"type": "object", "properties": {}})";
    r.tools.push_back(t);
  }
  return plan_chat(r, setup).rendered;
}

TEST(ModelChat, TheToolUseVariantRendersRequestsWithToolsOnTheModelsOwnTemplate) {
  const LoadedModel l = loaded(kDefault);
  const ModelChat c = model_chat_of(l);
  ASSERT_NE(c.setup.tool_use, nullptr);
  EXPECT_EQ(c.warning, "");
  EXPECT_EQ(render(c.setup, false), "D:hi");
  EXPECT_EQ(render(c.setup, true), "T:f;U:hi");
  EXPECT_TRUE(c.setup.parse_reasoning);
  ChatSetupOptions o;
  o.parse_reasoning = false;
  o.renderer = "this server";
  const ModelChat s = model_chat_of(l, o);
  EXPECT_FALSE(s.setup.parse_reasoning);
  EXPECT_EQ(s.setup.renderer, "this server");
}

TEST(ModelChat, AnotherTemplateFileOrABadVariantRendersToolsWithTheDefault) {
  const LoadedModel other = loaded("{% for m in messages %}F:{{ m.content }}{% endfor %}");
  const ModelChat c = model_chat_of(other);
  EXPECT_EQ(c.setup.tool_use, nullptr);
  EXPECT_EQ(render(c.setup, true), "F:hi");
  const LoadedModel bad = loaded(kDefault, "{% for t in tools %}");
  const ModelChat b = model_chat_of(bad);
  EXPECT_EQ(b.setup.tool_use, nullptr);
  EXPECT_NE(b.warning.find("requests with tools use the default template"), std::string::npos) << b.warning;
  EXPECT_EQ(render(b.setup, true), "D:hi");
}

TEST(ModelChat, TheVariantsToolCallFormatIsTakenWhenTheDefaultHasNone) {
  // A Hermes-style variant (<tool_call> in its text) under a default template without tool calls.
  const LoadedModel l = loaded(kDefault, kToolUse + "{# <tool_call> #}");
  const ModelChat c = model_chat_of(l);
  ASSERT_NE(c.setup.tool_use, nullptr);
  EXPECT_EQ(c.setup.reply_format.tools, ToolCallFormat::kHermes);
  EXPECT_EQ(model_chat_of(loaded(kDefault)).setup.reply_format.tools, ToolCallFormat::kNone);
}

}  // namespace
}  // namespace og
