// The chat page's routes (webui.h) on a real HttpServer: `/` picked by
// Accept (a browser gets the page with its Content-Security-Policy, any other
// client Ollama's "Ollama is running"), HEAD /, the embedded script and
// style, revalidation by ETag, --no-webui, and that the page needs no key.
#include <string>

#include "server/webui.h"
#include "server_fixture.h"

namespace og::server::test {
namespace {

constexpr const char* kBrowserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

class WebUi : public ServerFixture {};

TEST_F(WebUi, BrowserGetsThePageWithItsPolicy) {
  start();
  auto c = client();
  auto r = c.Get("/", {{"Accept", kBrowserAccept}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(r->body.find("<!doctype html>"), std::string::npos);
  EXPECT_NE(r->body.find("src=\"webui/app.js\""), std::string::npos);
  EXPECT_NE(r->body.find("href=\"webui/style.css\""), std::string::npos);
  // No inline script or style anywhere in the page: the policy forbids both.
  EXPECT_EQ(r->body.find("<script>"), std::string::npos);
  EXPECT_EQ(r->body.find("<style"), std::string::npos);
  EXPECT_EQ(r->body.find("style=\""), std::string::npos);
  const std::string csp = r->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos) << csp;
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");
  EXPECT_EQ(r->get_header_value("Vary"), "Accept");
  EXPECT_FALSE(r->get_header_value("ETag").empty());
}

TEST_F(WebUi, OtherClientsGetOllamaIsRunning) {
  start();
  auto c = client();
  // No Accept, */* (curl, Ollama's clients), JSON: the text Ollama answers.
  for (const char* accept : {"", "*/*", "application/json", "text/plain"}) {
    httplib::Headers h;
    if (*accept) h.emplace("Accept", accept);
    auto r = c.Get("/", h);
    ASSERT_TRUE(r) << accept;
    EXPECT_EQ(r->status, 200) << accept;
    EXPECT_EQ(r->body, "Ollama is running") << accept;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; charset=utf-8") << accept;
    EXPECT_EQ(r->get_header_value("Vary"), "Accept") << accept;
  }
  // Case does not matter in a media type.
  auto r = c.Get("/", {{"Accept", "TEXT/HTML"}});
  ASSERT_TRUE(r);
  EXPECT_NE(r->body.find("<!doctype html>"), std::string::npos);
}

TEST_F(WebUi, HeadRoot) {
  start();
  auto c = client();
  auto plain = c.Head("/");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 200);
  EXPECT_EQ(plain->body, "");
  EXPECT_EQ(plain->get_header_value("Content-Length"), std::to_string(kOllamaRunning.size()));
  auto page = c.Head("/", {{"Accept", kBrowserAccept}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->body, "");
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
}

TEST_F(WebUi, AssetsAndRevalidation) {
  start();
  auto c = client();
  auto js = c.Get("/webui/app.js");
  ASSERT_TRUE(js);
  ASSERT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_NE(js->body.find("fetch(\"v1/chat/completions\""), std::string::npos);
  // The model's text is never parsed as HTML by the page.
  EXPECT_EQ(js->body.find("innerHTML"), std::string::npos);
  EXPECT_EQ(js->body.find("insertAdjacentHTML"), std::string::npos);
  auto css = c.Get("/webui/style.css");
  ASSERT_TRUE(css);
  ASSERT_EQ(css->status, 200);
  EXPECT_EQ(css->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_NE(css->body.find("prefers-color-scheme: dark"), std::string::npos);
  // An unchanged file costs a 304 and no body.
  const std::string etag = js->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  auto again = c.Get("/webui/app.js", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_EQ(again->body, "");
  EXPECT_EQ(again->get_header_value("ETag"), etag);
  auto stale = c.Get("/webui/app.js", {{"If-None-Match", "\"0000000000000000\""}});
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 200);
  EXPECT_EQ(stale->body, js->body);
  // Files not embedded, and other methods.
  auto missing = c.Get("/webui/secret.txt");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto post = c.Post("/", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET");
}

TEST_F(WebUi, PageIsPublicWhileTheApiNeedsTheKey) {
  HttpOptions o;
  o.api_keys = {"sk-test"};
  start(o, /*load=*/false);  // and served while the model loads
  auto c = client();
  auto page = c.Get("/", {{"Accept", kBrowserAccept}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  auto js = c.Get("/webui/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 401);
}

TEST_F(WebUi, NoWebUi) {
  HttpOptions o;
  o.webui = false;
  start(o);
  auto c = client();
  auto r = c.Get("/", {{"Accept", kBrowserAccept}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "Ollama is running");
  EXPECT_EQ(r->get_header_value("Content-Security-Policy"), "");
  auto head = c.Head("/");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  for (const char* path : {"/webui/app.js", "/webui/style.css"}) {
    auto a = c.Get(path);
    ASSERT_TRUE(a) << path;
    EXPECT_EQ(a->status, 404) << path;
    EXPECT_NE(a->body.find("--no-webui"), std::string::npos) << a->body;
  }
}

}  // namespace
}  // namespace og::server::test
