// The built-in harmony (gpt-oss) render of a whole chat request: tools as the
// developer message's TypeScript-like `namespace functions`, assistant tool
// calls and tool results as harmony messages, exactly as gpt-oss's own Jinja
// template (tests/template/data/templates/openai-gpt-oss-120b.jinja) renders
// them. It lives beside jinja_chat.h because tool arguments, defaults and tool
// results are printed as that template's `tojson` prints them (the engine's
// json_dump), which the tokenizer library does not link.
//
// What gpt-oss's template renders that this one refuses (a ChatRequestError,
// chat/request_error.h, carrying the request field it names: the message,
// tool or kwarg; never a silently different prompt): the built-in
// `builtin_tools` (browser, python), a system or developer message after the
// first, and roles other than system, developer, user, assistant and tool,
// which that template drops without a word. Requests the template itself
// rejects (an enum's non-string default, a tool message with no earlier tool
// call, ...) are an og::Error here too; a tool without a description (or a
// null one) has an empty one, as the server gives that template.
//
// Segments: the template's own markers are template text; every text the
// request supplies (contents, reasoning, the functions namespace, a call's
// name and arguments, a tool result, the kwargs' model_identity and
// reasoning_effort) is content, so none of it can become a
// control token. gpt-oss renders one call per assistant message: a message's
// tool_calls after the first are dropped, as that template drops them.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace og {

// request: OpenAI's chat shape as JinjaChatTemplate::render_request takes it:
// `messages`, `tools`, `add_generation_prompt` (default true) and
// `chat_template_kwargs` (`reasoning_effort`, `model_identity`; other keys
// are ignored, as the template ignores them). now_unix: the day of "Current
// date" (UTC); < 0: today. The leading text is the system message (no BOS).
ChatSegments render_harmony_request(const nlohmann::ordered_json& request, int64_t now_unix = -1);

// The `namespace functions { ... }` block gpt-oss's template writes for
// `tools` (from "## functions" to "} // namespace functions").
std::string harmony_functions_namespace(const nlohmann::ordered_json& tools);

}  // namespace og
