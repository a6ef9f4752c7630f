// The chat page (docs/serving.md, "The chat page"): plain HTML, CSS and
// JavaScript under src/server/webui/, embedded into the binary at build time
// (webui/embed.cmake writes them into a generated source), served at `/` and
// /webui/<file>. The page talks to the server's own /v1 routes.
//
// `/` is also what Ollama's clients probe ("Ollama is running", text/plain):
// a request whose Accept names text/html (a browser navigating) gets the page;
// any other (no Accept, */*, application/json) gets the text. HEAD / answers
// 200 the same way without a body. With the page off (--no-webui) `/` always
// answers the text and /webui/* is 404.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "server/http_parser.h"
#include "server/http_writer.h"

namespace og::server {

// One embedded file: the path it is served at, its Content-Type, its bytes.
struct WebAsset {
  std::string_view path;
  std::string_view content_type;
  std::string_view body;
};

// Every embedded file (the generated source defines it).
std::span<const WebAsset> web_assets();

// The text `/` answers clients that are not browsers (Ollama's own answer).
inline constexpr std::string_view kOllamaRunning = "Ollama is running";

// Whether a canonical path is the page's: "/" or under "/webui/".
bool is_webui_path(std::string_view path);

// The answer to GET or HEAD of a webui path (is_webui_path); `enabled` false:
// --no-webui. Unknown files under /webui/ are 404.
HttpResponse webui_response(const HttpRequest& req, bool enabled);

}  // namespace og::server
