// A model's own chat template (Jinja, rendered by src/template) behind the
// ChatFormat interface that run, chat, batch and serve use, and the
// rendering of a whole chat request (messages, tools, kwargs) as `offgraph
// template` and POST /apply-template show it.
//
// Contents stay contents: a render is split into the template's own text and
// the messages' contents by rendering a second time with each content
// replaced by a placeholder, then aligning the two renders (a content the
// template trims or cuts is found as the longest piece of it that fits). Only
// the template's own text may become control tokens (encode_chat), so a
// message cannot inject them. A template whose output cannot be aligned that
// way is encoded as one text, as llama.cpp's --jinja does; contents_protected()
// says which held for the last render.
//
// Every other string of a request (tools, tool calls, names, reasoning,
// chat_template_kwargs values, ...) stays text too: render_request_segments
// wraps the special-token texts in them (chat/request_text.h), so that none
// becomes a control token. There is no option to let them through: a client
// that needs control tokens sends token ids to /v1/completions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace og {

namespace jinja {
class Template;
}
class RequestTextGuard;

struct JinjaChatOptions {
  std::string bos_token, eos_token;  // what {{ bos_token }} / {{ eos_token }} print
  int64_t now_unix = -1;             // what strftime_now sees; < 0: the current time
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs (enable_thinking, ...)
  // The tokenizer's control-token texts (special_token_texts): request
  // fields holding them are kept as text. Empty: nothing is wrapped.
  std::vector<std::string> special_texts;
};

class JinjaChatTemplate : public ChatFormat {
 public:
  // og::Error naming the template line on a syntax error. origin: where the
  // source came from, for describe() ("the model's", a file name).
  JinjaChatTemplate(std::string source, JinjaChatOptions options, std::string origin);
  ~JinjaChatTemplate() override;

  std::string name() const override { return "jinja"; }
  std::string describe() const override { return "jinja (" + origin_ + ")"; }
  std::string source() const override { return source_; }
  ChatSegments render_segments(std::span<const ChatMessage> messages, bool add_generation_prompt) const override;
  std::string turn_end() const override { return turn_end_; }
  std::vector<std::string> stop_markers() const override;
  // The markers its source holds (detect_reply_format).
  ReplyFormat reply_format() const override;

  const std::string& origin() const { return origin_; }
  bool renders_requests() const override { return true; }
  // A chat request in OpenAI's shape rendered whole (leading BOS text kept):
  // `messages` (content a string, null or a list of text parts; assistant
  // tool_calls whose arguments, a JSON string, reach the template as a
  // mapping), `tools`, `add_generation_prompt` (default true) and
  // `chat_template_kwargs`, whose keys become template variables.
  std::string render_request(const nlohmann::ordered_json& request) const override;
  // render_request as prompt segments (what the server encodes): the leading
  // BOS text dropped (the BOS rule of chat_template.h), the messages'
  // contents kept as contents as render_segments does.
  ChatSegments render_request_segments(const nlohmann::ordered_json& request) const override;

 private:
  nlohmann::ordered_json request_vars(const nlohmann::ordered_json& request) const;
  ChatSegments split_render(const nlohmann::ordered_json& vars, const nlohmann::ordered_json& marked_vars,
                            const std::vector<std::string>& contents) const;
  std::string render_vars(const nlohmann::ordered_json& vars) const;
  nlohmann::ordered_json vars_of(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  std::string source_, origin_, turn_end_;
  JinjaChatOptions options_;
  std::shared_ptr<const jinja::Template> tmpl_;
  std::unique_ptr<const RequestTextGuard> guard_;
};

// The OpenAI request's messages as templates expect them (see render_request).
nlohmann::ordered_json normalize_chat_messages(const nlohmann::ordered_json& messages);

// What {{ bos_token }} and {{ eos_token }} print for a tokenizer ("" when it has none).
JinjaChatOptions jinja_options_of(const Tokenizer& tok);

}  // namespace og
