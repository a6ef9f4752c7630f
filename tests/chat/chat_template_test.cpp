// Chat templates: exact renders of a fixed conversation per built-in format,
// incremental == full rendering over multi-turn chats, and --chat resolution.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <ctime>

#include <map>
#include <optional>
#include <span>

#include "base/error.h"

namespace og {
namespace {

std::vector<ChatMessage> conversation() {
  return {{"system", "You are terse."},
          {"user", "Hi there"},
          {"assistant", "Hello! How can I help?"},
          {"user", "Tell me a joke."}};
}

// UTC today as YYYY-MM-DD: harmony's system message carries the date.
std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

const std::map<std::string, std::string>& expected_renders() {
  static const std::map<std::string, std::string> kExpected = {
      {"llama3",
       "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
       "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
       "<|start_header_id|>assistant<|end_header_id|>\n\nHello! How can I help?<|eot_id|>"
       "<|start_header_id|>user<|end_header_id|>\n\nTell me a joke.<|eot_id|>"
       "<|start_header_id|>assistant<|end_header_id|>\n\n"},
      {"gemma",
       "<start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n"
       "<start_of_turn>model\nHello! How can I help?<end_of_turn>\n"
       "<start_of_turn>user\nTell me a joke.<end_of_turn>\n"
       "<start_of_turn>model\n"},
      {"gemma4",
       "<|turn>system\nYou are terse.<turn|>\n"
       "<|turn>user\nHi there<turn|>\n"
       "<|turn>model\nHello! How can I help?<turn|>\n"
       "<|turn>user\nTell me a joke.<turn|>\n"
       "<|turn>model\n"},
      {"chatml",
       "<|im_start|>system\nYou are terse.<|im_end|>\n"
       "<|im_start|>user\nHi there<|im_end|>\n"
       "<|im_start|>assistant\nHello! How can I help?<|im_end|>\n"
       "<|im_start|>user\nTell me a joke.<|im_end|>\n"
       "<|im_start|>assistant\n"},
      {"mistral", "[INST] You are terse.\n\nHi there [/INST]Hello! How can I help?</s>[INST] Tell me a joke. [/INST]"},
      {"llama2",
       "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi there [/INST]Hello! How can I help?</s>"
       "<s>[INST] Tell me a joke. [/INST]"},
      {"phi3",
       "<|system|>\nYou are terse.<|end|>\n"
       "<|user|>\nHi there<|end|>\n"
       "<|assistant|>\nHello! How can I help?<|end|>\n"
       "<|user|>\nTell me a joke.<|end|>\n"
       "<|assistant|>\n"},
      {"zephyr",
       "<|system|>\nYou are terse.</s>\n"
       "<|user|>\nHi there</s>\n"
       "<|assistant|>\nHello! How can I help?</s>\n"
       "<|user|>\nTell me a joke.</s>\n"
       "<|assistant|>\n"},
      {"0", "You are terse.Hi thereHello! How can I help?Tell me a joke."},
      {"harmony",
       "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
       "Knowledge cutoff: 2024-06\nCurrent date: " + today() +
           "\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be included for "
           "every message.<|end|>"
           "<|start|>developer<|message|># Instructions\n\nYou are terse.\n\n<|end|>"
           "<|start|>user<|message|>Hi there<|end|>"
           "<|start|>assistant<|channel|>final<|message|>Hello! How can I help?<|end|>"
           "<|start|>user<|message|>Tell me a joke.<|end|>"
           "<|start|>assistant"},
  };
  return kExpected;
}

TEST(ChatTemplate, EveryBuiltinHasAnExpectedRender) {
  auto names = chat_template_names();
  EXPECT_EQ(names.size(), expected_renders().size());
  for (const auto& n : names) EXPECT_TRUE(expected_renders().count(n)) << n;
}

TEST(ChatTemplate, RendersFixedConversationExactly) {
  auto conv = conversation();
  for (const auto& [name, expected] : expected_renders()) {
    auto t = make_chat_template(name, std::nullopt);
    EXPECT_EQ(t->name(), name);
    EXPECT_EQ(t->render(conv, true), expected) << name;
  }
}

TEST(ChatTemplate, WithoutGenerationPromptOmitsAssistantHeader) {
  std::vector<ChatMessage> conv = {{"user", "Hi"}};
  EXPECT_EQ(make_chat_template("chatml", std::nullopt)->render(conv, false), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(make_chat_template("gemma", std::nullopt)->render(conv, false), "<start_of_turn>user\nHi<end_of_turn>\n");
  EXPECT_EQ(make_chat_template("llama3", std::nullopt)->render(conv, false),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

TEST(ChatTemplate, TrimsUserTextWhereTheModelTemplateDoes) {
  std::vector<ChatMessage> conv = {{"user", "  Hi\n"}};
  EXPECT_EQ(make_chat_template("gemma", std::nullopt)->render(conv), "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(make_chat_template("chatml", std::nullopt)->render(conv), "<|im_start|>user\n  Hi\n<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, NoTemplateTextContainsBos) {
  for (const auto& n : chat_template_names()) {
    std::string r = make_chat_template(n, std::nullopt)->render(conversation());
    for (const char* bos : {"<s>", "<bos>", "<|begin_of_text|>"}) {
      // llama2 alone opens later user turns with <s>, never the text itself.
      if (n == "llama2" && std::string(bos) == "<s>") {
        EXPECT_NE(r.rfind("<s>", 0), 0u);
      } else {
        EXPECT_EQ(r.find(bos), std::string::npos) << n;
      }
    }
  }
}

// What a chat turn prefills after a reply (runtime/chat_turn.h keeps the
// history the render shares): the render of `msgs` past what the session
// holds, render(msgs[0, n_done - 1), true) + the reply msgs[n_done - 1]
// (+ turn_end() when the reply stopped on it, closed). nullopt when that
// history is not a prefix of the render (the turn then takes the reply back).
std::optional<std::string> after_reply(const ChatFormat& t, const std::vector<ChatMessage>& msgs, size_t n_done,
                                       bool closed) {
  std::string history = t.render(std::span(msgs).first(n_done - 1), true) + msgs[n_done - 1].content;
  if (closed) history += t.turn_end();
  const std::string full = t.render(msgs, true);
  if (full.compare(0, history.size(), history) != 0) return std::nullopt;
  return full.substr(history.size());
}

// Simulates a chat: render the first turn, "generate" a reply, then each new
// user turn's render keeps all of the history before it (a turn prefills only
// what follows); the running text equals the full render.
void check_incremental(const ChatFormat& t, bool with_system, bool closed) {
  std::vector<ChatMessage> msgs;
  if (with_system) msgs.push_back({"system", "Be brief."});
  msgs.push_back({"user", "First question?"});
  std::string text = t.render(msgs, true);
  const char* replies[] = {"Answer one.", " Answer two\n", "Three"};
  const char* users[] = {"Second?", " Third? ", "Fourth"};
  for (int turn = 0; turn < 3; ++turn) {
    msgs.push_back({"assistant", replies[turn]});
    text += replies[turn];
    if (closed) text += t.turn_end();
    size_t n_done = msgs.size();
    msgs.push_back({"user", users[turn]});
    const std::string delta = after_reply(t, msgs, n_done, closed).value_or("(the history is not a prefix)");
    text += delta;
    EXPECT_EQ(text, t.render(msgs, true)) << t.name() << " turn " << turn << " closed " << closed;
    // The delta ends with the assistant header, as a full render does.
    std::string header = t.render(std::vector<ChatMessage>{}, true);
    EXPECT_TRUE(delta.size() >= header.size() && delta.compare(delta.size() - header.size(), header.size(), header) == 0)
        << t.name();
  }
}

TEST(ChatTemplate, IncrementalEqualsFullForEveryTemplate) {
  for (const auto& n : chat_template_names()) {
    // harmony renders a reply differently as history (final-channel markup,
    // <|end|> for <|return|>): HarmonyReplyRendersDifferentlyAsHistory below.
    if (n == "harmony") continue;
    auto t = make_chat_template(n, std::nullopt);
    for (bool sys : {false, true})
      for (bool closed : {true, false}) check_incremental(*t, sys, closed);
  }
}

TEST(ChatTemplate, TruncatedReplyDeltaStartsWithTheClosingMarker) {
  auto conv = conversation();
  struct Case {
    const char* name;
    const char* closed_delta_start;
    const char* open_delta_start;
  };
  for (const Case& c : {Case{"llama3", "<|start_header_id|>user", "<|eot_id|><|start_header_id|>user"},
                        Case{"gemma", "\n<start_of_turn>user", "<end_of_turn>\n<start_of_turn>user"},
                        Case{"gemma4", "\n<|turn>user", "<turn|>\n<|turn>user"},
                        Case{"chatml", "\n<|im_start|>user", "<|im_end|>\n<|im_start|>user"},
                        Case{"mistral", "[INST] Tell", "</s>[INST] Tell"},
                        Case{"llama2", "<s>[INST] Tell", "</s><s>[INST] Tell"},
                        Case{"phi3", "\n<|user|>", "<|end|>\n<|user|>"}}) {
    auto t = make_chat_template(c.name, std::nullopt);
    EXPECT_EQ(after_reply(*t, conv, 3, true).value_or("").rfind(c.closed_delta_start, 0), 0u) << c.name;
    EXPECT_EQ(after_reply(*t, conv, 3, false).value_or("").rfind(c.open_delta_start, 0), 0u) << c.name;
  }
}

TEST(ChatTemplate, StopMarkersStartWithTurnEnd) {
  EXPECT_EQ(make_chat_template("llama3", std::nullopt)->turn_end(), "<|eot_id|>");
  EXPECT_EQ(make_chat_template("gemma", std::nullopt)->turn_end(), "<end_of_turn>");
  EXPECT_EQ(make_chat_template("gemma4", std::nullopt)->turn_end(), "<turn|>");
  EXPECT_EQ(make_chat_template("chatml", std::nullopt)->turn_end(), "<|im_end|>");
  EXPECT_EQ(make_chat_template("mistral", std::nullopt)->turn_end(), "</s>");
  EXPECT_EQ(make_chat_template("phi3", std::nullopt)->turn_end(), "<|end|>");
  EXPECT_EQ(make_chat_template("0", std::nullopt)->turn_end(), "");
  EXPECT_TRUE(make_chat_template("0", std::nullopt)->stop_markers().empty());
  for (const auto& n : chat_template_names()) {
    auto t = make_chat_template(n, std::nullopt);
    if (n != "0") {
      EXPECT_EQ(t->stop_markers().at(0), t->turn_end()) << n;
    }
  }
}

TEST(ChatTemplate, BadConversationsAreErrors) {
  auto t = make_chat_template("chatml", std::nullopt);
  std::vector<ChatMessage> bad_role = {{"tool", "x"}};
  EXPECT_THROW(t->render(bad_role), Error);
  std::vector<ChatMessage> late_system = {{"user", "a"}, {"system", "b"}};
  EXPECT_THROW(make_chat_template("gemma", std::nullopt)->render(late_system), Error);
  EXPECT_THROW(make_chat_template("mistral", std::nullopt)->render(late_system), Error);
  EXPECT_NO_THROW(make_chat_template("chatml", std::nullopt)->render(late_system));
}

// Representative template strings as published with each family's models.
const std::map<std::string, std::string>& model_templates() {
  static const std::map<std::string, std::string> kTemplates = {
      {"llama3",
       "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
       "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
       "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content "
       "}}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% "
       "endif %}"},
      {"gemma",
       "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') "
       "}}{% endif %}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' "
       "%}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + "
       "message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt "
       "%}{{'<start_of_turn>model\n'}}{% endif %}"},
      {"gemma4",
       "{{- bos_token -}}{%- if messages[0]['role'] == 'system' -%}{{- '<|turn>system\n' -}}{{- "
       "messages[0]['content'] | trim -}}{{- '<turn|>\n' -}}{%- endif -%}{%- for message in messages -%}{%- set "
       "role = 'model' if message['role'] == 'assistant' else message['role'] -%}{{- '<|turn>' + role + '\n' "
       "-}}{{- message['content'] | trim -}}{{- '<turn|>\n' -}}{%- endfor -%}{%- if add_generation_prompt "
       "-%}{{- '<|turn>model\n' -}}{%- endif -%}"},
      {"chatml",
       "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\n' + message.content + "
       "'<|im_end|>' + '\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- "
       "endif %}"},
      {"mistral",
       "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
       "message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + "
       "eos_token}}{% endif %}{% endfor %}"},
      {"llama2",
       "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
       "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% "
       "endif %}{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}{% set "
       "content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set "
       "content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
       "content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' "
       "+ eos_token }}{% endif %}{% endfor %}"},
      {"phi3",
       "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] "
       "+ '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + "
       "'<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + "
       "'<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"},
      {"harmony",  // the shape of gpt-oss's template (abridged)
       "{{- \"<|start|>system<|message|>\" }}{{- build_system_message() }}{{- \"<|end|>\" }}{%- for message in "
       "loop_messages -%}{%- if message.role == 'user' -%}{{- \"<|start|>user<|message|>\" + message.content + "
       "\"<|end|>\" }}{%- else -%}{{- \"<|start|>assistant<|channel|>final<|message|>\" + message.content + "
       "\"<|end|>\" }}{%- endif -%}{%- endfor -%}{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"},
      {"zephyr",
       "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] "
       "+ eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + "
       "eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + "
       "eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif "
       "%}\n{% endfor %}"},
  };
  return kTemplates;
}

// harmony: the reply as generated is not how history renders it, so a chat
// turn takes it back; the next render continues the prompt with the reply as
// the final channel and the next turn. The generation header is
// <|start|>assistant and generation stops on <|return|> or <|call|>, never on
// <|end|> (which closes the reasoning).
TEST(ChatTemplate, HarmonyReplyRendersDifferentlyAsHistory) {
  auto t = make_chat_template("gpt-oss", std::nullopt);
  ASSERT_EQ(t->name(), "harmony");
  std::vector<ChatMessage> msgs = {{"user", "First?"}};
  const std::string prompt = t->render(msgs, true);
  EXPECT_EQ(prompt.substr(prompt.size() - 18), "<|start|>assistant");
  msgs.push_back({"assistant", "Answer."});
  msgs.push_back({"user", "Second?"});
  EXPECT_FALSE(after_reply(*t, msgs, 2, true).has_value());
  const std::string full = t->render(msgs, true);
  ASSERT_EQ(full.rfind(prompt, 0), 0u);
  const std::string delta = full.substr(prompt.size());
  EXPECT_EQ(delta, "<|channel|>final<|message|>Answer.<|end|><|start|>user<|message|>Second?<|end|><|start|>assistant");
  EXPECT_EQ(t->stop_markers(), (std::vector<std::string>{"<|return|>", "<|call|>"}));
  std::vector<ChatMessage> two_systems = {{"system", "a"}, {"user", "b"}, {"system", "c"}};
  EXPECT_THROW(t->render(two_systems), Error);
}

TEST(ChatTemplate, AutoRecognisesEachFamily) {
  for (const auto& [name, jinja] : model_templates()) {
    EXPECT_EQ(detect_chat_template(jinja).value_or("(none)"), name);
    EXPECT_EQ(make_chat_template("auto", jinja)->name(), name);
  }
}

TEST(ChatTemplate, AutoWithoutModelTemplateIsRawText) {
  EXPECT_EQ(make_chat_template("auto", std::nullopt)->name(), "0");
  EXPECT_EQ(make_chat_template("auto", std::string(" \n"))->name(), "0");
}

TEST(ChatTemplate, UnrecognisedTemplateIsAnErrorSuggestingChat) {
  // Vicuna-style plain-text roles and DeepSeek-V3's markers have no built-in.
  std::string vicuna =
      "{% for message in messages %}{% if message['role'] == 'user' %}{{ 'USER: ' + message['content'] + '\\n' "
      "}}{% elif message['role'] == 'assistant' %}{{ 'ASSISTANT: ' + message['content'] + eos_token + '\\n' }}{% "
      "endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}";
  std::string deepseek =
      "{% for message in messages %}{% if message['role'] == 'user' %}{{'<\xEF\xBD\x9CUser\xEF\xBD\x9C>' + "
      "message['content']}}{% endif %}{% endfor %}{% if add_generation_prompt "
      "%}{{'<\xEF\xBD\x9C" "Assistant\xEF\xBD\x9C>'}}{% endif %}";
  for (const std::string& t : {vicuna, deepseek, std::string("{{ messages | tojson }}")}) {
    EXPECT_FALSE(detect_chat_template(t).has_value());
    try {
      make_chat_template("auto", t);
      ADD_FAILURE() << "no error for " << t;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--chat"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

TEST(ChatTemplate, NamesAndAliases) {
  EXPECT_EQ(make_chat_template("qwen", std::nullopt)->name(), "chatml");
  EXPECT_EQ(make_chat_template("gemma3", std::nullopt)->name(), "gemma");
  EXPECT_EQ(make_chat_template("raw", std::nullopt)->name(), "0");
  // An explicit name wins over the model's template.
  EXPECT_EQ(make_chat_template("phi3", model_templates().at("llama3"))->name(), "phi3");
  try {
    make_chat_template("llama9", std::nullopt);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama9"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("chatml"), std::string::npos);
  }
}

}  // namespace
}  // namespace og

namespace og {
namespace {

void expect_well_formed(const ChatSegments& segs, const std::string& what) {
  for (size_t i = 0; i < segs.size(); ++i) {
    EXPECT_FALSE(segs[i].text.empty()) << what << " segment " << i;
    if (i > 0) {
      EXPECT_NE(segs[i].is_template, segs[i - 1].is_template) << what << " segment " << i;
    }
  }
}

// Contents land in content segments only, never in the template's own text.
TEST(ChatTemplate, SegmentsSeparateContentsFromTemplateText) {
  std::vector<ChatMessage> conv = {{"system", "SYSWORD"}, {"user", "USERWORD"}, {"assistant", "REPLYWORD"},
                                   {"user", "NEXTWORD"}};
  for (const auto& n : chat_template_names()) {
    auto t = make_chat_template(n, std::nullopt);
    ChatSegments segs = t->render_segments(conv);
    expect_well_formed(segs, n);
    EXPECT_EQ(chat_text(segs), t->render(conv)) << n;
    std::string contents;
    for (const ChatSegment& s : segs) {
      if (!s.is_template) contents += s.text + "|";
      for (const char* w : {"SYSWORD", "USERWORD", "REPLYWORD", "NEXTWORD"})
        if (s.is_template) {
          EXPECT_EQ(s.text.find(w), std::string::npos) << n << ": " << s.text;
        }
    }
    for (const char* w : {"SYSWORD", "USERWORD", "REPLYWORD", "NEXTWORD"})
      EXPECT_NE(contents.find(w), std::string::npos) << n << " " << w;
    if (n == "0") {
      EXPECT_EQ(segs.size(), 1u);
    }
  }
}

}  // namespace
}  // namespace og
