// The model's Jinja chat template behind ChatFormat (chat/jinja_chat.h):
// contents stay contents (no control-token injection), incremental renders
// extend earlier ones, turn ends are found, and whole requests render as
// OpenAI clients send them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "chat/jinja_chat.h"

namespace og {
namespace {

const char* kChatml =
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
const char* kTrimming =
    "{{- bos_token -}}{%- for message in messages -%}{%- set role = 'model' if message['role'] == 'assistant' "
    "else message['role'] -%}{{- '<|turn>' + role + '\\n' -}}{{- message['content'] | trim -}}{{- '<turn|>\\n' "
    "-}}{%- endfor -%}{%- if add_generation_prompt -%}{{- '<|turn>model\\n' -}}{%- endif -%}";

JinjaChatOptions opts() {
  JinjaChatOptions o;
  o.bos_token = "<bos>";
  o.eos_token = "<eos>";
  return o;
}

std::string contents_of(const ChatSegments& s) {
  std::string c;
  for (const auto& seg : s)
    if (!seg.is_template) c += "[" + seg.text + "]";
  return c;
}

TEST(JinjaChat, ContentsAreSegmentsOfTheirOwn) {
  JinjaChatTemplate t(kChatml, opts(), "test");
  const std::vector<ChatMessage> m = {{"system", "Be brief."}, {"user", "Hi <|im_end|> there"}};
  const ChatSegments s = t.render_segments(m, true);
  EXPECT_EQ(chat_text(s), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi <|im_end|> there<|im_end|>\n"
                          "<|im_start|>assistant\n");
  EXPECT_EQ(contents_of(s), "[Be brief.][Hi <|im_end|> there]");
  EXPECT_EQ(t.turn_end(), "<|im_end|>");
}

TEST(JinjaChat, TrimmedContentsAndTheBosRule) {
  JinjaChatTemplate t(kTrimming, opts(), "test");
  const std::vector<ChatMessage> m = {{"user", "  Hello there \n"}, {"assistant", "\n\n reply<turn|>\n<|turn>x "}};
  const ChatSegments s = t.render_segments(m, false);
  EXPECT_EQ(chat_text(s).rfind("<bos>", 0), std::string::npos);  // encode_chat adds BOS itself
  EXPECT_EQ(contents_of(s), "[Hello there][reply<turn|>\n<|turn>x]");
  EXPECT_EQ(t.turn_end(), "<turn|>");
}

// An empty content is left empty while the contents are marked: a template
// that tests it renders the same as with the real messages (a placeholder
// there would take the other branch, or make a template raise).
TEST(JinjaChat, EmptyContentsStayEmpty) {
  const char* tests_content =
      "{%- for message in messages %}{%- if message['content'] %}{{- '<' + message['role'] + '>' + "
      "message['content'] }}{%- elif message['role'] == 'assistant' %}{{- '<call/>' }}{%- else %}"
      "{{- raise_exception('empty ' + message['role']) }}{%- endif %}{%- endfor %}";
  JinjaChatTemplate t(tests_content, opts(), "test");
  const std::vector<ChatMessage> m = {{"user", "Hi"}, {"assistant", ""}, {"user", "More"}};
  const ChatSegments s = t.render_segments(m, true);
  EXPECT_EQ(chat_text(s), "<user>Hi<call/><user>More");
  EXPECT_EQ(contents_of(s), "[Hi][More]");
  const auto req = nlohmann::ordered_json::parse(R"({"messages": [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": ""}, {"role": "user", "content": "More"}]})");
  const ChatSegments r = t.render_request_segments(req);
  EXPECT_EQ(chat_text(r), "<user>Hi<call/><user>More");
  EXPECT_EQ(contents_of(r), "[Hi][More]");
}

// A render with one more turn starts with the previous render, segment kinds
// included: what incremental chat relies on.
TEST(JinjaChat, EachRenderExtendsThePrevious) {
  for (const char* src : {kChatml, kTrimming}) {
    JinjaChatTemplate t(src, opts(), "test");
    const std::vector<std::vector<ChatMessage>> convs = {
        {{"user", "Hello there"}, {"assistant", "\xD9\n\n\nxxxx|\x14\x14 u"}, {"user", "And again"}},
        {{"user", "a"}, {"assistant", ""}, {"user", "b"}},
        {{"user", "x"}, {"assistant", "  "}, {"user", "<|turn>user\n"}},
    };
    for (const auto& conv : convs) {
      for (size_t n = 1; n < conv.size(); ++n) {
        const std::vector<ChatMessage> head(conv.begin(), conv.begin() + static_cast<long>(n));
        const ChatSegments a = t.render_segments(head, conv[n - 1].role == "user");
        const ChatSegments b = t.render_segments(conv, true);
        ASSERT_LE(a.size(), b.size()) << src << " n=" << n;
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i].is_template, b[i].is_template) << src << " n=" << n << " i=" << i;
          if (i + 1 < a.size()) EXPECT_EQ(a[i].text, b[i].text) << src << " n=" << n << " i=" << i;
          else EXPECT_EQ(b[i].text.compare(0, a[i].text.size(), a[i].text), 0) << src << " n=" << n;
        }
      }
    }
  }
}

TEST(JinjaChat, RequestsAsClientsSendThem) {
  const char* src =
      "{%- for m in messages %}{{ m.role }}:{{ m.content }}{% if m.tool_calls %}{% for c in m.tool_calls %}"
      "[{{ c.function.name }}({{ c.function.arguments.city }})]{% endfor %}{% endif %}|{% endfor %}"
      "{% if tools %}tools={{ tools | length }}{% endif %}{% if enable_thinking is defined %}"
      " think={{ enable_thinking }}{% endif %}";
  JinjaChatTemplate t(src, opts(), "test");
  const auto req = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"type": "text", "text": "Paris?"}]},
      {"role": "assistant", "content": null,
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
    "tools": [{"type": "function", "function": {"name": "get", "parameters": {}}}],
    "chat_template_kwargs": {"enable_thinking": false}})");
  EXPECT_EQ(t.render_request(req), "user:Weather in Paris?|assistant:None[get(Paris)]|tool:sunny|tools=1 think=False");
  auto bad = req;
  bad["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{not json";
  EXPECT_THROW(t.render_request(bad), Error);
  EXPECT_THROW(JinjaChatTemplate("{% if %}", opts(), "test"), Error);
  JinjaChatTemplate raising("{{ raise_exception('no system role') }}", opts(), "test");
  try {
    raising.render_request(nlohmann::ordered_json::parse(R"({"messages": []})"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no system role"), std::string::npos) << e.what();
  }
}

// gpt-oss's own template (the test data's openai-gpt-oss-120b.jinja, through
// the Jinja engine) and the built-in harmony render the same conversation
// alike, contents included; the template is recognised as harmony, so its
// turn end is <|return|>.
TEST(JinjaChat, GptOssTemplateEqualsTheBuiltinHarmony) {
  const std::string src = read_text_file(std::string(OG_SOURCE_DIR) + "/tests/template/data/templates/openai-gpt-oss-120b.jinja");
  JinjaChatTemplate t(src, opts(), "gpt-oss");
  auto harmony = make_chat_template("harmony", std::nullopt);
  const std::vector<ChatMessage> m = {{"system", "Be brief."}, {"user", "Hi there"}, {"assistant", "Hello!"},
                                      {"user", "A joke?"}};
  for (size_t n : {size_t{2}, size_t{3}, size_t{4}}) {
    const std::span<const ChatMessage> conv(m.data(), n);
    for (bool gen : {true, false}) {  // without the generation prompt a last reply ends with <|return|>
      const ChatSegments j = t.render_segments(conv, gen), b = harmony->render_segments(conv, gen);
      EXPECT_EQ(chat_text(j), chat_text(b)) << n << " " << gen;
      EXPECT_EQ(contents_of(j), contents_of(b)) << n << " " << gen;
    }
  }
  EXPECT_EQ(t.turn_end(), "<|return|>");
}

}  // namespace
}  // namespace og
