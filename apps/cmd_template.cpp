// `offgraph template`: one chat request (OpenAI's chat shape: messages, tools,
// chat_template_kwargs, add_generation_prompt) rendered by a model's own Jinja
// chat template, a template file or the built-in harmony render (--chat
// harmony: gpt-oss's format, tools included; chat/harmony_chat.h), printed
// exactly as rendered and nothing more. A template that raises is exit 1
// with its message.
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/flags.h"
#include "base/mapped_file.h"
#include "chat/harmony_chat.h"
#include "chat/jinja_chat.h"
#include "commands.h"
#include "format/chat_template_source.h"
#include "format/model_source.h"
#include "llm_common.h"
#include "runtime/run_builder.h"
#include "server/api_error.h"
#include "server/api_request.h"
#include "shared_flags.h"
#include "tokenizer/tokenizer.h"

namespace og::app {

namespace {

struct TemplateFlags {
  std::string model, template_file, request = "-", date, chat;
  std::string bos, eos;
  RenderLimitFlags render_limits;  // --template-max-*
};

std::string read_request(const std::string& path) {
  if (path == "-") return read_fd_to_end(0, "stdin");
  check_path_exists(path, "--request");
  MappedFile f = MappedFile::open(path);
  return std::string(reinterpret_cast<const char*>(f.data()), f.size());
}

// The request parsed as /apply-template and /v1/chat/completions parse a body
// (server/api_request.h): the same og::ChatRequest, its forms and refusals,
// so a message array means here what it means to the server. A refusal is
// exit 1 with the server's words.
server::ApplyTemplateRequest parse_request(const std::string& path) {
  const std::string text = read_request(path);
  try {
    return server::parse_apply_template_request(server::parse_json_object(text));
  } catch (const server::ApiError& e) {
    fail("--request: ", e.what());
  }
}

// YYYY-MM-DD as seconds since the epoch at 00:00 UTC; a usage error otherwise.
int64_t parse_date(const std::string& d) {
  std::tm tm{};
  int y = 0, m = 0, day = 0;
  char rest = 0;
  if (std::sscanf(d.c_str(), "%4d-%2d-%2d%c", &y, &m, &day, &rest) != 3 || m < 1 || m > 12 || day < 1 || day > 31 ||
      d.size() != 10)
    usage_fail("--template-date expects YYYY-MM-DD, got '" + d + "'");
  tm.tm_year = y - 1900;
  tm.tm_mon = m - 1;
  tm.tm_mday = day;
  const time_t t = timegm(&tm);
  std::tm back{};
  gmtime_r(&t, &back);
  if (back.tm_mday != day) usage_fail("--template-date: no such day '" + d + "'");
  return static_cast<int64_t>(t);
}

}  // namespace

int cmd_template(const Args& args) {
  TemplateFlags f;
  Flags fl = command_flags("template",
                           "(--model M | --chat-template-file T | --chat harmony) [--request R.json|-] [options]\n\n"
                           "Renders one chat request (a JSON object in OpenAI's chat shape: messages, tools,\n"
                           "chat_template_kwargs, add_generation_prompt, default true) with the model's own chat\n"
                           "template, a template file or the built-in harmony render and prints exactly the\n"
                           "rendered text.");
  add_model_flag(fl, &f.model, "the model whose chat template renders (and whose BOS/EOS texts are the defaults)");
  fl.add_string("chat-template-file", &f.template_file, "a Jinja chat template file instead of the model's", "PATH");
  fl.add_string("chat", &f.chat,
                "the built-in harmony (alias gpt-oss) render instead of a Jinja template: gpt-oss's format with "
                "tools, tool calls and tool results",
                "NAME");
  fl.add_string("request", &f.request, "the chat request as a JSON file; - = stdin", "PATH");
  fl.add_string("bos-token", &f.bos, "what {{ bos_token }} prints (default: the model's BOS text)", "TEXT");
  fl.add_string("eos-token", &f.eos, "what {{ eos_token }} prints (default: the model's EOS text)", "TEXT");
  fl.add_string("template-date", &f.date, "the day strftime_now sees, YYYY-MM-DD (default: today)", "DATE");
  add_render_limit_flags(fl, f.render_limits);
  if (!fl.parse(args)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  apply_render_limit_flags(f.render_limits);
  if (!f.chat.empty() && f.chat != "harmony" && f.chat != "gpt-oss")
    usage_fail("--chat: only the built-in harmony (alias gpt-oss) renders whole requests here, not '" + f.chat +
               "' (the other built-ins render through run, chat and serve)");
  if (!f.chat.empty() && (!f.model.empty() || !f.template_file.empty()))
    usage_fail("--chat harmony renders without a Jinja template: give it instead of --model and --chat-template-file");
  if (f.model.empty() && f.template_file.empty() && f.chat.empty())
    usage_fail("--model, --chat-template-file or --chat harmony is required");
  const int64_t now = f.date.empty() ? -1 : parse_date(f.date);
  if (!f.chat.empty()) {
    const server::ApplyTemplateRequest r = parse_request(f.request);
    const std::string rendered = chat_text(render_harmony_request(r.forms.template_request, now));
    if (std::fwrite(rendered.data(), 1, rendered.size(), stdout) != rendered.size())
      fail("cannot write the output to stdout");
    return 0;
  }
  if (!f.model.empty()) check_path_exists(f.model, "--model");
  if (!f.template_file.empty()) check_path_exists(f.template_file, "--chat-template-file");

  JinjaChatOptions o;
  std::string source, origin;
  // A model file or directory is opened once for its tokenizer, template and
  // variants; a tokenizer.json / tokenizer.model path keeps the path readers.
  std::shared_ptr<const ModelSource> src;
  if (!f.model.empty() && (is_directory(f.model) || f.model.ends_with(".gguf")))
    src = ModelSource::open(f.model, /*weights=*/false);
  if (!f.model.empty()) {
    const std::unique_ptr<Tokenizer> tok = src ? Tokenizer::from_source(*src) : Tokenizer::from_path(f.model);
    o = jinja_options_of(*tok);
  }
  if (!f.template_file.empty()) {
    MappedFile t = MappedFile::open(f.template_file);
    source.assign(reinterpret_cast<const char*>(t.data()), t.size());
    origin = f.template_file;
  } else {
    const std::optional<std::string> stored = src ? src->chat_template() : read_chat_template(f.model);
    if (!stored) fail(f.model, ": the model has no chat template (give one with --chat-template-file)");
    source = *stored;
    origin = "the model's";
  }
  if (fl.given("bos-token")) o.bos_token = f.bos;
  if (fl.given("eos-token")) o.eos_token = f.eos;
  o.now_unix = now;
  const server::ApplyTemplateRequest r = parse_request(f.request);
  // A request with tools renders with the model's "tool_use" variant when it
  // has one (transformers' rule, as serve does).
  const bool tools = !r.chat.tools.empty();
  if (f.template_file.empty() && tools) {
    const auto variants = src ? src->chat_template_variants() : read_chat_template_variants(f.model);
    if (auto it = variants.find("tool_use"); it != variants.end()) {
      source = it->second;
      origin = "the model's tool_use";
    }
  }
  const JinjaChatTemplate tmpl(std::move(source), o, origin);
  ChatSetup setup;  // as the server's /apply-template: harmony replies give a tool without a description ""
  setup.format = &tmpl;
  setup.reply_format = tmpl.reply_format();
  const std::string rendered = tmpl.render_request(template_request_for(setup, r.forms.template_request));
  if (std::fwrite(rendered.data(), 1, rendered.size(), stdout) != rendered.size())
    fail("cannot write the output to stdout");
  return 0;
}

}  // namespace og::app
