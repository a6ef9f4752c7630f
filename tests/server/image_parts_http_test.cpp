// Images at the server's edges (docs/serving.md "Images") over a real server
// and the echoing scheduler, whose model has no vision tower: an image_url
// part is a 400 naming the part before any template renders; an http(s) URL,
// a data: URL without base64 or with bad base64 are 400s naming the URL's
// field; a body past the server's bound is a 413; /v1/completions stays
// text-only. (Images through a tower: tests/js/openai_vision_test.mjs.)
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace og::server::test {
namespace {

using json = nlohmann::json;

class ImageParts : public ServerFixture {
 protected:
  std::pair<int, json> post(const std::string& path, const std::string& body) {
    auto r = client().Post(path, body, "application/json");
    EXPECT_TRUE(r);
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  static std::string chat_with(const std::string& part) {
    return R"({"model": "stories", "messages": [{"role": "user", "content": [)" + part +
           R"(, {"type": "text", "text": "what is it?"}]}]})";
  }
  // The 400's param and message.
  void expect_400(const std::string& body, const std::string& param, const std::string& words) {
    const auto [status, j] = post("/v1/chat/completions", body);
    EXPECT_EQ(status, 400) << body;
    EXPECT_EQ(j["error"]["param"], param) << j.dump();
    EXPECT_NE(j["error"]["message"].get<std::string>().find(words), std::string::npos) << j.dump();
  }
};

TEST_F(ImageParts, AnImageToAModelWithoutATowerIsA400NamingThePart) {
  start();
  expect_400(chat_with(R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}})"),
             "messages[0].content[0]", "this model has no vision tower (pass --mmproj FILE)");
  // Text parts alone are joined as before.
  const auto [status, j] = post("/v1/chat/completions", R"({"model": "stories", "messages": [{"role": "user",
      "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]})");
  EXPECT_EQ(status, 200) << j.dump();
}

TEST_F(ImageParts, BadImageUrlsAre400sNamingTheField) {
  start();
  expect_400(chat_with(R"({"type": "image_url", "image_url": {"url": "http://example.com/a.png"}})"),
             "messages[0].content[0].image_url.url", "image URLs are not fetched; send a data: URL");
  expect_400(chat_with(R"({"type": "image_url", "image_url": {"url": "data:image/png,abc"}})"),
             "messages[0].content[0].image_url.url", "not base64");
  expect_400(chat_with(R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,ab$d"}})"),
             "messages[0].content[0].image_url.url", "base64 data is not valid");
  expect_400(chat_with(R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,"}})"),
             "messages[0].content[0].image_url.url", "no data");
  expect_400(chat_with(R"({"type": "image_url"})"), "messages[0].content[0].image_url", "required");
  expect_400(chat_with(R"({"type": "input_audio", "input_audio": {}})"), "messages[0].content[0].type",
             "expected text, image_url or image");
}

TEST_F(ImageParts, ABodyPastTheBoundIsA413AndCompletionsStayTextOnly) {
  HttpOptions o;
  o.max_body_bytes = 4096;
  start(o);
  const std::string big = std::string(6000, 'A');
  const auto [status, j] = post("/v1/chat/completions",
                                chat_with(R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,)" +
                                          big + R"("}})"));
  EXPECT_EQ(status, 413) << j.dump();
  const auto [cs, cj] = post("/v1/completions", R"({"model": "stories", "prompt": [{"type": "image_url",
      "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]})");
  EXPECT_EQ(cs, 400) << cj.dump();
  EXPECT_EQ(cj["error"]["param"], "prompt[0]") << cj.dump();
}

}  // namespace
}  // namespace og::server::test
