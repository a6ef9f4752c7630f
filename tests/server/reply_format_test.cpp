// detect_reply_format over every chat template in tests/template/data/templates:
// the well-known families get their format, and no template makes it fail.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "chat/reply_parser.h"
#include "server/backend.h"

namespace og::server {
namespace {

using TF = ToolCallFormat;
using RF = ReasoningFormat;

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReplyFormat, DetectedFromEveryTemplate) {
  const std::map<std::string, ReplyFormat> expected = {
      {"Qwen-Qwen2.5-7B-Instruct", {TF::kHermes, RF::kNone}},
      {"Qwen-Qwen3-0.6B", {TF::kHermes, RF::kThink}},
      {"Qwen-QwQ-32B", {TF::kHermes, RF::kThink}},
      {"Qwen3-Coder", {TF::kHermes, RF::kNone}},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", {TF::kHermes, RF::kNone}},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", {TF::kHermes, RF::kNone}},
      {"meta-llama-Llama-3.1-8B-Instruct", {TF::kLlama3Json, RF::kNone}},
      {"meta-llama-Llama-3.2-3B-Instruct", {TF::kLlama3Json, RF::kNone}},
      {"meta-llama-Llama-3.3-70B-Instruct", {TF::kLlama3Json, RF::kNone}},
      {"mistralai-Mistral-Nemo-Instruct-2407", {TF::kMistral, RF::kNone}},
      {"Mistral-Small-3.2-24B-Instruct-2506", {TF::kMistral, RF::kNone}},
      {"unsloth-mistral-Devstral-Small-2507", {TF::kMistral, RF::kNone}},
      {"mistralai-Ministral-3-14B-Reasoning-2512", {TF::kMistral, RF::kMistralThink}},
      {"google-gemma-4-31B-it", {TF::kGemma4, RF::kGemma4Channel}},
      {"google-gemma-4-31B-it-interleaved", {TF::kGemma4, RF::kGemma4Channel}},
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", {TF::kNone, RF::kThink}},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", {TF::kNone, RF::kThink}},
      {"google-gemma-2-2b-it", {TF::kNone, RF::kNone}},
      {"microsoft-Phi-3.5-mini-instruct", {TF::kNone, RF::kNone}},
      {"openai-gpt-oss-120b", {TF::kHarmony, RF::kHarmony}},
      {"CohereForAI-c4ai-command-r-plus-tool_use", {TF::kNone, RF::kNone}},
  };
  std::filesystem::path dir = std::filesystem::path(OG_SOURCE_DIR) / "tests/template/data/templates";
  std::map<std::string, ReplyFormat> seen;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".jinja") continue;
    std::string name = e.path().stem().string();
    ReplyFormat f;
    EXPECT_NO_THROW(f = detect_reply_format(read_file(e.path()))) << name;
    seen[name] = f;
  }
  EXPECT_GE(seen.size(), 40u);
  for (const auto& [name, want] : expected) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(seen.count(name)) << "template missing";
    EXPECT_STREQ(tool_call_format_name(seen[name].tools), tool_call_format_name(want.tools));
    EXPECT_STREQ(reasoning_format_name(seen[name].reasoning), reasoning_format_name(want.reasoning));
  }
}

// A built-in template's replies: what its own render writes (--chat harmony:
// gpt-oss's channels, and its calls, as the built-in harmony serves tools).
TEST(ReplyFormat, BuiltInTemplates) {
  EXPECT_EQ(make_chat_template("harmony", std::nullopt)->reply_format(),
            (ReplyFormat{TF::kHarmony, RF::kHarmony}));
  for (const char* name : {"llama3", "chatml", "gemma", "mistral", "phi3", "0"})
    EXPECT_EQ(make_chat_template(name, std::nullopt)->reply_format(), ReplyFormat{}) << name;
}

TEST(ReplyFormat, EmptyTemplateHasNoMarkers) {
  EXPECT_EQ(detect_reply_format(""), ReplyFormat{});
  EXPECT_STREQ(tool_call_format_name(TF::kLlama3Json), "llama3-json");
  EXPECT_STREQ(reasoning_format_name(RF::kGemma4Channel), "gemma4-channel");
  EXPECT_STREQ(reasoning_format_name(RF::kHarmony), "harmony");
}

}  // namespace
}  // namespace og::server
