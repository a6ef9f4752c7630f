// model_chat_of: the one assembly of a model's chat setup (model_chat.h).
#include "runtime/model_chat.h"

#include "base/error.h"
#include "chat/jinja_chat.h"

namespace og {

ModelChat model_chat_of(const LoadedModel& l, ChatSetupOptions o) {
  OG_CHECK(l.tmpl && l.tok, "model_chat_of: a loaded model with its template and tokenizer");
  ModelChat c;
  c.setup.format = l.tmpl.get();
  c.setup.reply_format = l.tmpl->reply_format();
  c.setup.parse_reasoning = o.parse_reasoning;
  c.setup.renderer = std::move(o.renderer);
  c.setup.jinja_hint = std::move(o.jinja_hint);
  // The variant belongs to the model's own template: a built-in or another
  // template file replaces both.
  const bool own_template = l.model_template && !l.tmpl->source().empty() && l.tmpl->source() == *l.model_template;
  const auto it = l.model_template_variants.find("tool_use");
  if (!own_template || it == l.model_template_variants.end()) return c;
  try {
    c.tool_use = std::make_unique<JinjaChatTemplate>(it->second, jinja_options_of(*l.tok), "the model's tool_use");
  } catch (const Error& e) {
    c.warning = std::string(e.what()) + "; requests with tools use the default template";
    return c;
  }
  c.setup.tool_use = c.tool_use.get();
  if (c.setup.reply_format.tools == ToolCallFormat::kNone) {
    const ReplyFormat t = c.tool_use->reply_format();
    c.setup.reply_format.tools = t.tools;
    c.setup.reply_format.mistral_args = t.mistral_args;
    c.setup.reply_format.mistral_call_id = t.mistral_call_id;
  }
  return c;
}

}  // namespace og
