// Image content parts (chat/content_part.h): data: URLs to bytes, OpenAI's
// part objects, the refusals naming the field, and how render_forms gives a
// Jinja template a message with images (a list with {"type": "image"} where
// each image goes) while the built-ins refuse it.
#include <gtest/gtest.h>

#include <functional>

#include "chat/chat_request.h"
#include "chat/content_part.h"
#include "chat/jinja_chat.h"
#include "chat/request_error.h"

namespace og {
namespace {

using json = nlohmann::ordered_json;

std::string refusal(const std::function<void()>& f, std::string* field = nullptr) {
  try {
    f();
  } catch (const ChatRequestError& e) {
    if (field) *field = e.field();
    return e.what();
  }
  return "";
}

TEST(ContentPart, Base64DecodesWithAndWithoutPadding) {
  std::string out;
  ASSERT_TRUE(decode_base64("aGVsbG8=", &out));
  EXPECT_EQ(out, "hello");
  ASSERT_TRUE(decode_base64("aGVsbG8", &out));
  EXPECT_EQ(out, "hello");
  ASSERT_TRUE(decode_base64("/+8A", &out));
  EXPECT_EQ(out, std::string("\xff\xef\x00", 3));
  EXPECT_FALSE(decode_base64("aGVs bG8=", &out));
  EXPECT_FALSE(decode_base64("aGVsb", &out));  // a dangling sixth of a byte
  EXPECT_FALSE(decode_base64("a-_b", &out));
}

TEST(ContentPart, DataUrlsAreDecodedAndOtherUrlsRefusedNamingTheField) {
  EXPECT_EQ(image_bytes_from_url("data:image/png;base64,iVBORw0KGgo=", "f"), "\x89PNG\r\n\x1a\n");
  EXPECT_EQ(image_bytes_from_url("DATA:;BASE64,AAEC", "f"), std::string("\x00\x01\x02", 3));
  std::string field;
  EXPECT_EQ(refusal([] { image_bytes_from_url("https://example.com/cat.png", "messages[0].content[1].image_url.url"); },
                    &field),
            "'messages[0].content[1].image_url.url' is 'https://example.com/cat.png': image URLs are not fetched; "
            "send a data: URL");
  EXPECT_EQ(field, "messages[0].content[1].image_url.url");
  EXPECT_NE(refusal([] { image_bytes_from_url("HTTP://x", "f"); }).find("not fetched"), std::string::npos);
  EXPECT_NE(refusal([] { image_bytes_from_url("file:///etc/passwd", "f"); }).find("expected a data: URL"),
            std::string::npos);
  EXPECT_NE(refusal([] { image_bytes_from_url("data:image/png,abc", "f"); }).find("not base64"), std::string::npos);
  EXPECT_NE(refusal([] { image_bytes_from_url("data:image/png;base64", "f"); }).find("without a ','"),
            std::string::npos);
  EXPECT_NE(refusal([] { image_bytes_from_url("data:image/png;base64,@@@@", "f"); }).find("not valid"),
            std::string::npos);
  EXPECT_NE(refusal([] { image_bytes_from_url("data:image/png;base64,", "f"); }).find("no data"), std::string::npos);
}

TEST(ContentPart, OpenAiPartsAreRead) {
  ChatContentPart p = content_part_from_json(json{{"type", "text"}, {"text", "hi"}}, "c[0]");
  EXPECT_FALSE(p.is_image());
  EXPECT_EQ(p.text, "hi");
  p = content_part_from_json(json::parse(R"({"type":"image_url","image_url":{"url":"data:image/png;base64,AAEC",
                                                "detail":"low"}})"),
                             "c[1]");
  EXPECT_TRUE(p.is_image());
  EXPECT_EQ(p.image, std::string("\x00\x01\x02", 3));
  p = content_part_from_json(json::parse(R"({"type":"image_url","image_url":"data:;base64,AAEC"})"), "c");
  EXPECT_EQ(p.image.size(), 3u);
  p = content_part_from_json(json::parse(R"({"type":"image","image":"data:;base64,AAEC"})"), "c");
  EXPECT_EQ(p.image.size(), 3u);
  std::string field;
  refusal([] { content_part_from_json(json{{"type", "audio"}}, "m[0].content[2]"); }, &field);
  EXPECT_EQ(field, "m[0].content[2].type");
  refusal([] { content_part_from_json(json{{"type", "image_url"}}, "m[0].content[2]"); }, &field);
  EXPECT_EQ(field, "m[0].content[2].image_url");
  refusal([] { content_part_from_json(json::parse(R"({"type":"image_url","image_url":{}})"), "p"); }, &field);
  EXPECT_EQ(field, "p.image_url.url");
  refusal([] { content_part_from_json(json::parse(R"({"type":"image_url","image_url":{"url":"http://a"}})"), "p"); },
          &field);
  EXPECT_EQ(field, "p.image_url.url");
  refusal([] { content_part_from_json(json{{"type", "text"}}, "p"); }, &field);
  EXPECT_EQ(field, "p.text");
  refusal([] { content_part_from_json(json("text"), "p"); }, &field);
  EXPECT_EQ(field, "p");
}

ChatRequest with_image() {
  ChatRequest r;
  ChatRequestMessage m;
  m.role = "user";
  m.parts = {ChatContentPart::of_image("IMG1"), ChatContentPart::of_text("What is this?")};
  r.messages.push_back(std::move(m));
  return r;
}

TEST(ContentPart, AJinjaTemplateGetsImagePartsAsAList) {
  const ChatRequest r = with_image();
  const ChatRenderForms f = render_forms(r);
  EXPECT_EQ(f.template_request["messages"][0]["content"].dump(),
            R"([{"type":"image"},{"type":"text","text":"What is this?"}])");
  EXPECT_EQ(f.messages[0].content, "What is this?");
  EXPECT_EQ(f.needs_jinja, "messages[0].content[0]");
  ASSERT_EQ(chat_images(r).size(), 1u);
  EXPECT_EQ(*chat_images(r)[0], "IMG1");

  // Gemma 3's template's way with parts: the marker where the image goes.
  const std::string src = R"({%- for m in messages -%}<start_of_turn>{{ m.role }}
{% if m.content is string %}{{ m.content | trim }}{% else %}{% for item in m.content %}{% if item.type == 'image' %}{{ '<start_of_image>' }}{% elif item.type == 'text' %}{{ item.text | trim }}{% endif %}{% endfor %}{% endif %}<end_of_turn>
{% endfor %}<start_of_turn>model
)";
  JinjaChatTemplate tmpl(src, JinjaChatOptions{}, "test");
  ChatSetup setup;
  setup.format = &tmpl;
  setup.reply_format = tmpl.reply_format();
  const ChatPlan p = plan_chat(r, setup);
  EXPECT_EQ(p.rendered, "<start_of_turn>user\n<start_of_image>What is this?<end_of_turn>\n<start_of_turn>model");

  // Text parts alone are joined into a string, as before.
  ChatRequest t;
  ChatRequestMessage m;
  m.role = "user";
  m.parts = {ChatContentPart::of_text("a"), ChatContentPart::of_text("b")};
  t.messages.push_back(m);
  EXPECT_EQ(render_forms(t).template_request["messages"][0]["content"], "ab");
  EXPECT_EQ(render_forms(t).needs_jinja, "");
}

TEST(ContentPart, BadImagePartsNameTheField) {
  std::string field;
  ChatRequest r = with_image();
  r.messages[0].role = "system";
  EXPECT_NE(refusal([&] { render_forms(r); }, &field).find("user messages only"), std::string::npos);
  EXPECT_EQ(field, "messages[0].content");
  r = with_image();
  r.messages[0].content = "also";
  refusal([&] { render_forms(r); }, &field);
  EXPECT_EQ(field, "messages[0].content");
  r = with_image();
  r.messages[0].parts[0].image.clear();
  refusal([&] { render_forms(r); }, &field);
  EXPECT_EQ(field, "messages[0].content[0]");
  r = with_image();
  for (size_t i = 0; i < kMaxImagesPerRequest; ++i) r.messages[0].parts.push_back(ChatContentPart::of_image("x"));
  EXPECT_NE(refusal([&] { render_forms(r); }, &field).find("at most 64"), std::string::npos);
  EXPECT_EQ(field, "messages");
}

TEST(ContentPart, ABuiltInTemplateRefusesImages) {
  auto chatml = make_chat_template("chatml", std::nullopt);
  ChatSetup setup;
  setup.format = chatml.get();
  setup.reply_format = chatml->reply_format();
  std::string field;
  const std::string e = refusal([&] { plan_chat(with_image(), setup); }, &field);
  EXPECT_NE(e.find("needs a Jinja chat template"), std::string::npos) << e;
  EXPECT_EQ(field, "messages[0].content[0]");
}

}  // namespace
}  // namespace og
