// A model's own chat template (Jinja, rendered by src/template) behind the
// ChatFormat interface that run, chat, batch and serve use, and the
// rendering of a whole chat request (messages, tools, kwargs) as `offgraph
// template` and POST /apply-template show it.
//
// Request text stays text: the render tracks which of its bytes came from
// the request (src/template/taint.h) and chat/request_text.h turns them into
// prompt segments: each message's content is a text segment of its own,
// wherever the template moved, trimmed or cut it; any other request field
// (tools, tool calls, names, roles, reasoning, chat_template_kwargs values,
// ...) is text wherever a special-token text of the vocabulary touches one
// of its bytes. Only the template's own text may become control tokens
// (encode_chat), whatever string operations the template applies: there is
// no option to let request text through (a client that needs control tokens
// sends token ids to /v1/completions).
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
class RequestTextSplitter;

struct JinjaChatOptions {
  std::string bos_token, eos_token;  // what {{ bos_token }} / {{ eos_token }} print
  int64_t now_unix = -1;             // what strftime_now sees; < 0: the current time
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs (enable_thinking, ...)
  // The tokenizer's control-token texts (special_token_texts): request
  // fields forming them are kept as text. Empty: only contents are.
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
  // vars rendered as segments, the variables named in from_request tainted.
  ChatSegments render_tainted(const nlohmann::ordered_json& vars, const std::vector<std::string>& from_request) const;
  std::string render_vars(const nlohmann::ordered_json& vars) const;
  nlohmann::ordered_json vars_of(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  std::string source_, origin_, turn_end_;
  JinjaChatOptions options_;
  std::shared_ptr<const jinja::Template> tmpl_;
  std::unique_ptr<const RequestTextSplitter> splitter_;
};

// The OpenAI request's messages as templates expect them (see render_request).
// A content list of text parts is joined; with keep_images a list holding an
// {"type": "image"} part stays a list of image and text parts (the form
// transformers gives a template), else any part but text is refused.
nlohmann::ordered_json normalize_chat_messages(const nlohmann::ordered_json& messages, bool keep_images = false);

// What {{ bos_token }} and {{ eos_token }} print for a tokenizer ("" when it has none).
JinjaChatOptions jinja_options_of(const Tokenizer& tok);

}  // namespace og
