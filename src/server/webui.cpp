// The chat page's routes (webui.h): which answer `/` gives, and the page's
// security and caching headers.
#include "server/webui.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>

namespace og::server {

namespace {

// The page loads only its own files and talks only to its own server: no
// inline script or style, nothing from elsewhere, never framed. What a
// model writes is put into the page as text (app.js), and this policy makes
// any markup that slipped through inert as well.
constexpr const char* kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

bool contains_ci(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() &&
           std::tolower(static_cast<unsigned char>(hay[i + k])) == std::tolower(static_cast<unsigned char>(needle[k])))
      ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

// A strong validator of a file's bytes (FNV-1a 64): the page is revalidated
// on every load (Cache-Control: no-cache) and costs a 304 when unchanged,
// so a rebuilt server never leaves a browser with a stale app.js.
std::string etag_of(std::string_view body) {
  uint64_t h = 1469598103934665603ull;
  for (const char c : body) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"%016llx\"", static_cast<unsigned long long>(h));
  return buf;
}

HttpResponse ollama_text() {
  HttpResponse r;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::string(kOllamaRunning);
  r.set_header("Vary", "Accept");
  return r;
}

const WebAsset* find_asset(std::string_view path) {
  for (const WebAsset& a : web_assets())
    if (a.path == path) return &a;
  return nullptr;
}

}  // namespace

bool is_webui_path(std::string_view path) { return path == "/" || path.rfind("/webui/", 0) == 0; }

HttpResponse webui_response(const HttpRequest& req, bool enabled) {
  const bool root = req.path == "/";
  if (root && (!enabled || !contains_ci(req.header_value("accept"), "text/html"))) return ollama_text();
  const WebAsset* a = enabled ? find_asset(req.path) : nullptr;
  if (!a) return error_response(404, enabled ? "no such file of the chat page" : "the chat page is off (--no-webui)");
  const std::string etag = etag_of(a->body);
  HttpResponse r;
  r.set_header("Cache-Control", "no-cache");
  r.set_header("ETag", etag);
  r.set_header("X-Content-Type-Options", "nosniff");
  if (root) {
    r.set_header("Vary", "Accept");
    r.set_header("Content-Security-Policy", kCsp);
    r.set_header("X-Frame-Options", "DENY");
    r.set_header("Referrer-Policy", "no-referrer");
  }
  const std::string* inm = req.header("if-none-match");
  if (inm && (*inm == etag || *inm == "*" || inm->find(etag) != std::string::npos)) {
    r.status = 304;
    r.content_type.clear();
    return r;
  }
  r.content_type = std::string(a->content_type);
  r.body = std::string(a->body);
  return r;
}

}  // namespace og::server
