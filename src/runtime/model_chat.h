// A loaded model's chat setup (chat/chat_request.h ChatSetup), assembled here
// once for every front end: the server, the C API's og_session_chat and the
// commands (run, chat, run -i, batch). The same model then renders a request
// with the same template and variant, and parses a reply with the same
// markers, wherever the request comes in.
#pragma once

#include <memory>
#include <string>

#include "chat/chat_request.h"
#include "chat/chat_template.h"
#include "runtime/run_setup.h"

namespace og {

// How a front end words what its setup refuses (ChatSetup::renderer and
// jinja_hint) and whether it parses reasoning out of replies (serve
// --reasoning-format none: no).
struct ChatSetupOptions {
  bool parse_reasoning = true;
  std::string renderer = "this model";
  std::string jinja_hint = "open it with chat_template \"auto\" when it ships one";
};

// The setup and what it points into. Move it, never copy it: setup.format
// points at the LoadedModel's template, setup.tool_use at `tool_use`.
struct ModelChat {
  ChatSetup setup;
  std::unique_ptr<ChatFormat> tool_use;  // the model's "tool_use" variant (null: none)
  std::string warning;  // "" or why a variant the model ships is not used (for the caller to show)
};

// `l`'s chat setup: its run's template; the model's "tool_use" variant for
// requests with tools (transformers' rule) when the run renders with the
// model's own template (not a built-in, not another --chat-template-file),
// a variant that does not parse left out with `warning` saying so; what
// replies hold (the template's reply format, its tool-call format taken from
// the variant when the default template has none). Changes nothing in `l`.
ModelChat model_chat_of(const LoadedModel& l, ChatSetupOptions o = {});

}  // namespace og
