// Named chat-template variants (tokenizer_config.json's list of {name,
// template}; GGUF tokenizer.chat_template.NAME): export carries them into
// the GGUF, inspect names them, and a request with tools renders with the
// "tool_use" one (transformers' rule) in `offgraph template`, as serve does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "e2e_util.h"

namespace og::e2e {
namespace {

namespace fs = std::filesystem;

const std::string kHf = std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf";

// stories260K-hf with a tokenizer_config.json whose chat_template is a list.
std::string hf_with_variants(const std::string& tool_use =
                                 "{% for t in tools %}T:{{ t.function.name }};{% endfor %}{% for m in messages "
                                 "%}U:{{ m.content }}{% endfor %}",
                             const std::string& name = "variants-hf") {
  const std::string dir = scratch_dir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"})
    fs::copy_file(kHf + "/" + f, dir + "/" + f);
  nlohmann::json tc = nlohmann::json::parse(slurp(kHf + "/tokenizer_config.json"));
  tc["chat_template"] = nlohmann::json::array(
      {{{"name", "default"}, {"template", "{% for m in messages %}D:{{ m.content }}{% endfor %}"}},
       {{"name", "tool_use"}, {"template", tool_use}}});
  std::ofstream(dir + "/tokenizer_config.json") << tc.dump();
  return dir;
}

TEST(TemplateVariants, ExportInspectAndToolUse) {
  ASSERT_TRUE(fs::exists(kHf)) << "missing test data " << kHf;
  const std::string hf = hf_with_variants();
  const std::string gguf = scratch_dir() + "/variants.gguf";
  const Proc e = offgraph({"export", "--model", hf, "--out", gguf, "--dtype", "f32"});
  ASSERT_EQ(e.code, 0) << e.err;
  for (const std::string& model : {hf, gguf}) {
    const Proc i = offgraph({"inspect", "--model", model, "--json"});
    ASSERT_EQ(i.code, 0) << i.err;
    const nlohmann::json j = nlohmann::json::parse(i.out);
    EXPECT_EQ(j["chat_template_variants"], nlohmann::json::array({"tool_use"})) << model;
    const std::string plain = R"({"messages": [{"role": "user", "content": "hi"}]})";
    const std::string tools =
        R"({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}]})";
    Proc t = offgraph({"template", "--model", model}, plain);
    ASSERT_EQ(t.code, 0) << t.err;
    EXPECT_EQ(t.out, "D:hi") << model;
    t = offgraph({"template", "--model", model}, tools);
    ASSERT_EQ(t.code, 0) << t.err;
    EXPECT_EQ(t.out, "T:f;U:hi") << model;
  }
}

// The commands assemble a model's chat setup as serve and the C API do
// (runtime/model_chat.h): a tool_use variant that does not parse is the same
// warning, and the run goes on with the default template.
TEST(TemplateVariants, TheCommandsReadTheVariantsAsServeDoes) {
  ASSERT_TRUE(fs::exists(kHf)) << "missing test data " << kHf;
  const std::string hf = hf_with_variants("{% for t in tools %}", "bad-variant-hf");
  const std::string warning = "requests with tools use the default template";
  const Proc r = offgraph({"run", "--model", hf, "--prompt", "hi", "--max-new-tokens", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find(warning), std::string::npos) << r.err;
  const Proc c = offgraph({"chat", "--model", hf, "--max-new-tokens", "1"}, "hi\n");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find(warning), std::string::npos) << c.err;
}

}  // namespace
}  // namespace og::e2e
