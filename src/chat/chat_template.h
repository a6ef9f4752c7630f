// Chat formats: the ChatFormat interface every front end renders through (a
// chat's messages or a whole request, its stop markers, what its replies hold),
// the built-in formats the engine supports (llama3, gemma, gemma4, chatml,
// mistral, llama2, phi3, zephyr, harmony, and `0` = raw text), recognition of a
// model's stored Jinja template (`--chat auto`; the Jinja format itself is
// chat/jinja_chat.h). A conversation is always rendered whole; a session
// keeps the prefix of its history that the next render shares
// (runtime/chat_turn.h), so a new turn prefills only the tokens it adds.
//
// Rendering gives segments: the template's own text (markers, role names,
// separators), whose special-token texts become control tokens, and message
// contents, which are encoded as plain text so that no message (system, user,
// or assistant history) can inject control tokens. encode_chat() encodes them
// as one text (ids equal encoding the rendered string with special tokens
// honoured, whenever the contents hold no special-token text).
//
// BOS rule: rendered text never starts with the BOS token's text (only llama2
// has it inside, opening each later user turn, as that format wants). The first render
// of a conversation is encoded with encode_chat(tok, segments, true), which
// prepends BOS when the vocabulary says so (special().add_bos); a piece that
// continues encoded text is encoded with first = false. So BOS is never
// doubled nor missing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/tokenizer.h"

namespace og {

struct ReplyFormat;  // chat/reply_parser.h

// role: "system", "user" or "assistant" (anything else is an og::Error at render).
struct ChatMessage {
  std::string role;
  std::string content;
};

// A piece of rendered chat: the template's own text (is_template) or a message's content.
struct ChatSegment {
  std::string text;
  bool is_template = false;
  bool operator==(const ChatSegment&) const = default;
};
// Adjacent segments never share is_template and none is empty.
using ChatSegments = std::vector<ChatSegment>;

// The segments' text one after another.
std::string chat_text(std::span<const ChatSegment> segments);

// One chat format. The built-ins render role/content messages; a Jinja
// template (chat/jinja_chat.h) and the built-in harmony also render whole
// requests (tools, tool calls and results, reasoning, chat_template_kwargs).
// Callers ask the format, never its type.
class ChatFormat {
 public:
  virtual ~ChatFormat() = default;

  // The built-in's name as accepted by --chat ("llama3", "gemma", "0", ...);
  // "jinja" for a Jinja template.
  virtual std::string name() const = 0;
  // One line for reports: "jinja (the model's)", "jinja (FILE)", or the built-in's name.
  virtual std::string describe() const { return name(); }
  // The Jinja template's text; "" for a built-in.
  virtual std::string source() const { return {}; }

  // The whole conversation as prompt segments (no BOS text, see above). With
  // add_generation_prompt the assistant header comes last, ready for generation.
  // Assistant contents are rendered verbatim (they are the generated tokens);
  // system/user contents are trimmed where the model's own template trims them.
  virtual ChatSegments render_segments(std::span<const ChatMessage> messages,
                                       bool add_generation_prompt = true) const = 0;
  // chat_text(render_segments(...)), for display and tests. Never encode this
  // string with special tokens honoured: use encode_chat on the segments.
  std::string render(std::span<const ChatMessage> messages, bool add_generation_prompt = true) const;

  // Whether render_request_segments renders whole requests (see above).
  virtual bool renders_requests() const { return false; }
  // A chat request in OpenAI's shape (`messages` with tool calls and
  // results, `tools`, `add_generation_prompt` (default true),
  // `chat_template_kwargs`) as prompt segments (no BOS text). What the format
  // cannot render is an og::Error; a ChatRequestError (chat/request_error.h)
  // names the request field it is about. A format that renders no requests
  // throws a ChatRequestError naming "messages".
  virtual ChatSegments render_request_segments(const nlohmann::ordered_json& request) const;
  // The same as one text, as `offgraph template` and POST /apply-template show
  // it (a Jinja template's leading BOS text kept).
  virtual std::string render_request(const nlohmann::ordered_json& request) const;

  // What its replies hold (tool-call and reasoning markers, chat/reply_parser.h),
  // which the reply parser reads and the tool-call grammars write: a Jinja
  // template's from its source; a built-in's reasoning from its own render of
  // a short exchange (harmony's channels) and no tool calls, but for the
  // built-in harmony, which renders tools and so replies with gpt-oss's calls.
  virtual ReplyFormat reply_format() const;

  // The text that closes an assistant turn and on which generation stops
  // ("<|eot_id|>", "<end_of_turn>", "<|im_end|>", "</s>", ...); "" for raw text.
  virtual std::string turn_end() const = 0;

  // Every marker text that ends a turn for this format (turn_end() first);
  // map them to ids with stop_ids() / Tokenizer::find_piece.
  virtual std::vector<std::string> stop_markers() const = 0;
};

// Names accepted by make_chat_template besides "auto": llama3 gemma gemma4 chatml
// mistral llama2 phi3 zephyr harmony 0 (aliases: qwen, smollm -> chatml; gemma2, gemma3 -> gemma;
// raw, none -> 0; gpt-oss -> harmony).
std::vector<std::string> chat_template_names();

// The text of the system message gpt-oss's template opens every harmony
// conversation with (between <|start|>system<|message|> and <|end|>): the
// model identity, knowledge cutoff, `date` (YYYY-MM-DD), reasoning effort and
// the valid channels, plus the line that sends calls to 'functions' when the
// request has tools. The built-in harmony render and render_harmony_request
// (chat/harmony_chat.h) share it.
std::string harmony_system_message(std::string_view model_identity, std::string_view date,
                                   std::string_view reasoning_effort, bool has_tools);
// The default identity of that message.
inline constexpr std::string_view kHarmonyIdentity = "You are ChatGPT, a large language model trained by OpenAI.";
// Today's date in UTC as YYYY-MM-DD (now_unix < 0) or that of now_unix.
std::string utc_date(int64_t now_unix = -1);

// Recognises a model's Jinja chat template by its distinctive markers; returns
// the matching built-in's name, or nullopt when it matches none.
std::optional<std::string> detect_chat_template(std::string_view jinja);

// Resolves `--chat NAME`. "auto": the built-in matching `model_template`
// (raw text "0" when the model has none); an unrecognised template is an
// og::Error suggesting --chat <name>. Any other unknown NAME is an og::Error
// listing the names.
std::unique_ptr<ChatFormat> make_chat_template(std::string_view name,
                                               const std::optional<std::string>& model_template);

// Ids that end an assistant turn: the tokenizer's stop ids (EOS, EOT, ...) plus
// each of tmpl.stop_markers() that is a single token of the vocabulary. Sorted, unique.
std::vector<int32_t> chat_stop_ids(const ChatFormat& tmpl, const Tokenizer& tok);

// Encodes rendered chat (render_segments(), render_request_segments()):
// special-token texts become special tokens only inside the template's own
// segments, never inside contents; no EOS is added, and BOS is prepended only
// when `first` and the vocabulary adds BOS (see the BOS rule above).
// after_id: the token the segments continue (the last token of text already
// encoded; -1 = none). When it swallows the whitespace on its right
// (tok.strips_space_after, e.g. Phi-3's <|end|>), the leading whitespace of the
// segments is dropped, so the pieces give the ids of the whole text.
std::vector<int32_t> encode_chat(const Tokenizer& tok, std::span<const ChatSegment> segments, bool first,
                                 int32_t after_id = -1);

}  // namespace og
