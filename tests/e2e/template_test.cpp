// `offgraph template` and the model's own (Jinja) chat template in run, chat
// and inspect: the rendered text exactly, errors as one line with the right
// exit code, and the Jinja path agreeing with the built-in of the same format.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "e2e_util.h"
#include "synth/synth.h"

namespace og::e2e {
namespace {

const std::string kQwen25 = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/Qwen-Qwen2.5-7B-Instruct.jinja";

std::string write(const std::string& name, const std::string& text) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The synthetic llama3-vocabulary model stores a Llama-3-style Jinja template.
const std::string& llama3_model() {
  static const std::string path = [] {
    synth::SynthSpec s = synth::tiny_spec(synth::Family::kLlama);
    s.tokenizer = "llama3";
    const std::string p = scratch_dir() + "/template-llama3.gguf";
    synth::write_gguf(s, p);
    return p;
  }();
  return path;
}

TEST(Template, RendersARequestExactly) {
  ASSERT_TRUE(std::filesystem::exists(kQwen25)) << kQwen25;
  const std::string req = write("req.json", R"({"messages": [{"role": "user", "content": "Héllo 中文"}]})");
  const Proc p = offgraph({"template", "--chat-template-file", kQwen25, "--request", req});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out,
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHéllo 中文<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(p.err, "");
  // No generation prompt; the request from stdin.
  const Proc q = offgraph({"template", "--chat-template-file", kQwen25},
                          R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false})");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(q.out.find("<|im_start|>assistant"), std::string::npos) << q.out;
  EXPECT_EQ(q.out.substr(q.out.size() - 11), "<|im_end|>\n") << q.out;
}

TEST(Template, ToolsAndAToolRoundTrip) {
  const std::string req = write("tools.json", R"({
    "messages": [{"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "1", "content": "sunny"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})");
  const Proc p = offgraph({"template", "--chat-template-file", kQwen25, "--request", req});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""), std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << p.out;
}

TEST(Template, ModelTemplateDateAndSpecialTokens) {
  const std::string req = write("plain.json", R"({"messages": [{"role": "user", "content": "Hi"}]})");
  const Proc p = offgraph({"template", "--model", llama3_model(), "--request", req});
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(p.out.rfind("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", 0), 0u) << p.out;
  const Proc b = offgraph({"template", "--model", llama3_model(), "--request", req, "--bos-token", "[B]"});
  EXPECT_EQ(b.out.rfind("[B]<|start_header_id|>", 0), 0u) << b.out;
  const std::string dated = write("dated.jinja", "{{ strftime_now('%d %b %Y') }}|{{ bos_token }}|{{ eos_token }}");
  const Proc d = offgraph({"template", "--chat-template-file", dated, "--request", req, "--template-date", "2024-07-26"});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.out, "26 Jul 2024||");
}

// The probe's hostile templates (issue 50): a comparison loop over a list that
// holds one 100000-item list 100 times, and its tojson (689 MB of text before
// the render's bounds); each is exit 1 with one line naming the bound, quickly.
TEST(Template, HostileTemplatesFailFastWithOneLine) {
  const std::string req = write("h.json", R"({"messages": [{"role": "user", "content": "hi"}]})");
  const std::string shared =
      "{% set l0 = range(100000)|list %}{% set ns = namespace(a=[]) %}{% for i in range(100) %}"
      "{% set ns.a = ns.a + [l0] %}{% endfor %}";
  const std::pair<std::string, std::string> cases[] = {
      {shared + "{% set w = [ns.a] %}{% for i in range(1000) %}{% for j in range(1000) %}{% if w == w %}{% endif %}"
                "{% endfor %}{% endfor %}",
       "work budget"},
      {shared + "{{ ns.a|tojson }}", "grows beyond 16777216 bytes"}};
  for (const auto& [text, bound] : cases) {
    const std::string path = write("hostile.jinja", text);
    const auto t0 = std::chrono::steady_clock::now();
    const Proc p = offgraph({"template", "--chat-template-file", path, "--request", req});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(p.code, 1) << p.err;
    EXPECT_NE(p.err.find(bound), std::string::npos) << p.err;
    EXPECT_EQ(count(p.err, "\n"), 1u) << p.err;
    EXPECT_LT(s, 10) << bound;
  }
}

TEST(Template, ErrorsAreOneLineWithTheirExitCode) {
  const std::string req = write("e.json", R"({"messages": [{"role": "system", "content": "x"}]})");
  const std::string raising =
      write("raise.jinja", "{% if messages[0].role == 'system' %}\n{{ raise_exception('System role not supported') }}"
                           "{% endif %}");
  const Proc r = offgraph({"template", "--chat-template-file", raising, "--request", req});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("System role not supported"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  const std::string broken = write("broken.jinja", "{% for m in messages %}\n{{ m.content }\n");
  const Proc s = offgraph({"template", "--chat-template-file", broken, "--request", req});
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_NE(s.err.find("line 2"), std::string::npos) << s.err;
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"template", "--request", req}, 2, "--model, --chat-template-file or --chat harmony is required"},
      {{"template", "--chat", "llama3", "--request", req}, 2, "only the built-in harmony"},
      {{"template", "--chat", "harmony", "--chat-template-file", kQwen25, "--request", req}, 2,
       "instead of --model and --chat-template-file"},
      {{"template", "--chat", "harmony", "--request",
        write("builtin.json", R"({"messages": [{"role": "user", "content": "x"}],
          "chat_template_kwargs": {"builtin_tools": ["python"]}})")},
       1, "builtin_tools"},
      {{"template", "--chat-template-file", kQwen25, "--request", req, "--template-date", "2024-13-01"}, 2,
       "--template-date expects YYYY-MM-DD"},
      {{"template", "--chat-template-file", kQwen25, "--request", req, "--template-date", "2023-02-30"}, 2,
       "no such day"},
      {{"template", "--chat-template-file", kQwen25, "--request", scratch_dir() + "/none.json"}, 1,
       "none.json: no such file or directory (--request)"},
      {{"template", "--chat-template-file", kQwen25, "--request", write("bad.json", "{")}, 1, "not valid JSON"},
      {{"template", "--chat-template-file", kQwen25, "--request", write("nomsg.json", "{}")}, 1,
       "--request: 'messages' is required"},  // the server's words (its parser reads the request)
      {{"template", "--model", std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf", "--request",
        req},
       1, "has no chat template"},
  };
  for (const Case& c : cases) {
    const Proc p = offgraph(c.args);
    EXPECT_EQ(p.code, c.code) << p.err;
    EXPECT_NE(p.err.find(c.message), std::string::npos) << p.err;
  }
}

// The model's Jinja template (the default) and the built-in of the same
// format give the same prompt, so the same greedy text; inspect says which.
TEST(Template, JinjaPathEqualsTheBuiltInOfTheSameFormat) {
  const Proc j = offgraph({"run", "-m", llama3_model(), "-p", "Once upon a time", "-n", "12", "--system", "Be brief.",
                           "-v"});
  const Proc b = offgraph({"run", "-m", llama3_model(), "-p", "Once upon a time", "-n", "12", "--system", "Be brief.",
                           "--chat", "llama3"});
  ASSERT_EQ(j.code, 0) << j.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(j.out, b.out);
  const Proc c = offgraph({"chat", "-m", llama3_model(), "-n", "6", "-v"}, "Hello\nAnd again\n/undo\nOnce more\n");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("[chat template: jinja (the model's)]"), std::string::npos) << c.err;
  EXPECT_EQ(c.err.find("[error"), std::string::npos) << c.err;
  const Proc i = offgraph({"inspect", llama3_model()});
  EXPECT_NE(i.out.find("--chat auto uses the model's own template (Jinja) in the llama3 format"), std::string::npos)
      << i.out;
  // A template file given on the command line is used instead.
  const Proc f = offgraph({"run", "-m", llama3_model(), "-p", "Hi", "-n", "4", "--chat-template-file", kQwen25, "-v"});
  ASSERT_EQ(f.code, 0) << f.err;
  const Proc missing = offgraph({"run", "-m", llama3_model(), "-p", "Hi", "--chat-template-file", "/nonexistent.jinja"});
  EXPECT_EQ(missing.code, 1) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent.jinja: no such file or directory (--chat-template-file)"),
            std::string::npos)
      << missing.err;
}

// gpt-oss: its own template and the built-in harmony render (--chat harmony,
// alias gpt-oss) print the same prompt, byte for byte, for requests with
// tools, tool calls, tool results and reasoning settings
// (tests/api_internal/harmony_chat_test.cpp covers the schema shapes).
TEST(Template, JinjaPathEqualsTheBuiltInHarmonyWithTools) {
  const std::string gpt_oss = std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/openai-gpt-oss-120b.jinja";
  const std::string tools = R"("tools": [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather now",
      "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city"},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        "days": {"type": "array", "items": {"type": "integer"}},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "now", "description": "The time"}}])";
  const std::vector<std::string> requests = {
      R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}], )" + tools +
          "}",
      R"({"messages": [{"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Look it up.", "tool_calls": [{"id": "1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "sunny \"25\""},
        {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "Time?"}],
        "chat_template_kwargs": {"reasoning_effort": "high"}, )" +
          tools + "}",
      R"({"messages": [{"role": "user", "content": "Time?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "now", "arguments": {}}}]},
        {"role": "tool", "content": "noon"}], "add_generation_prompt": false, )" +
          tools + "}",
  };
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string req = write("harmony" + std::to_string(i) + ".json", requests[i]);
    const Proc j = offgraph({"template", "--chat-template-file", gpt_oss, "--request", req, "--template-date", "2025-01-02"});
    const Proc b = offgraph({"template", "--chat", i == 1 ? "gpt-oss" : "harmony", "--request", req, "--template-date",
                             "2025-01-02"});
    ASSERT_EQ(j.code, 0) << j.err;
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_EQ(b.out, j.out) << i;
    EXPECT_NE(b.out.find("namespace functions {"), std::string::npos) << b.out;
  }
}

}  // namespace
}  // namespace og::e2e
