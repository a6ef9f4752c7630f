// A model's Jinja chat template behind the ChatFormat interface (jinja_chat.h).
#include "chat/jinja_chat.h"

#include <algorithm>

#include "base/error.h"
#include "chat/reply_parser.h"
#include "chat/request_text.h"
#include "template/template.h"

namespace og {

namespace {

using Json = nlohmann::ordered_json;

// Placeholder i: private-use code points no real content holds, no trim or
// case change alters, and no template inspects.
std::string placeholder(size_t i) { return "\xEE\x80\x80og" + std::to_string(i) + "\xEE\x80\x81"; }

void push(ChatSegments& out, std::string text, bool is_template) {
  if (text.empty()) return;
  if (!out.empty() && out.back().is_template == is_template) out.back().text += text;
  else out.push_back({std::move(text), is_template});
}

// `render` split into template text and contents, aligned against the same
// render with placeholders (see the header); nullopt when they do not align.
// strict: a content's text in the render must be a piece of the content (a
// trim, a cut); else any text up to a few times the content's length is taken
// (a template that re-encodes it), the longest that fits.
std::optional<ChatSegments> align(const std::string& real, const std::string& with_placeholders,
                                  const std::vector<std::string>& contents, bool strict) {
  // The placeholder render as template pieces and content indices.
  struct Piece {
    std::string text;
    int content = -1;
  };
  std::vector<Piece> pieces;
  size_t at = 0;
  while (at < with_placeholders.size()) {
    const size_t open = with_placeholders.find("\xEE\x80\x80og", at);
    if (open == std::string::npos) break;
    const size_t close = with_placeholders.find("\xEE\x80\x81", open);
    if (close == std::string::npos) return std::nullopt;
    pieces.push_back({with_placeholders.substr(at, open - at), -1});
    const size_t i = std::stoul(with_placeholders.substr(open + 5, close - open - 5));
    if (i >= contents.size()) return std::nullopt;
    pieces.push_back({"", static_cast<int>(i)});
    at = close + 3;
  }
  pieces.push_back({with_placeholders.substr(at), -1});
  ChatSegments out;
  size_t r = 0;
  for (size_t p = 0; p < pieces.size(); ++p) {
    if (pieces[p].content < 0) {
      if (real.compare(r, pieces[p].text.size(), pieces[p].text) != 0) return std::nullopt;
      push(out, pieces[p].text, true);
      r += pieces[p].text.size();
      continue;
    }
    // The longest piece of the content that the next template text follows.
    const std::string& c = contents[static_cast<size_t>(pieces[p].content)];
    const std::string& next = pieces[p + 1].text;  // a content is always followed by a template piece
    size_t take = std::string::npos;
    const size_t longest = strict ? c.size() : 4 * c.size() + 16;
    for (size_t n = std::min(longest, real.size() - r) + 1; n-- > 0;) {
      if (real.compare(r + n, next.size(), next) != 0) continue;
      if (p + 2 == pieces.size() && r + n + next.size() != real.size()) continue;  // the last piece ends the render
      if (strict && c.find(std::string_view(real).substr(r, n)) == std::string::npos) continue;
      take = n;
      break;
    }
    if (take == std::string::npos) return std::nullopt;
    push(out, real.substr(r, take), false);
    r += take;
  }
  if (r != real.size()) return std::nullopt;
  return out;
}

std::string text_of_content(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  std::string s;
  for (const Json& part : content)
    if (part.is_object() && part.value("type", "") == "text" && part.contains("text") && part["text"].is_string())
      s += part["text"].get<std::string>();
  return s;
}

}  // namespace

Json normalize_chat_messages(const Json& messages) {
  OG_CHECK(messages.is_array(), "\"messages\" must be an array");
  Json out = Json::array();
  for (const Json& m : messages) {
    OG_CHECK(m.is_object(), "each message must be an object");
    Json n = m;
    if (n.contains("content") && n["content"].is_array()) {
      for (const Json& part : n["content"])
        OG_CHECK(part.is_object() && part.value("type", "") == "text",
                 "only text content parts are supported (a part has type ",
                 part.is_object() && part.contains("type") ? part["type"].dump() : std::string("none"), ")");
      n["content"] = text_of_content(n["content"]);
    }
    if (n.contains("tool_calls") && n["tool_calls"].is_array()) {
      for (Json& call : n["tool_calls"]) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
        Json& fn = call["function"];
        if (fn.contains("arguments") && fn["arguments"].is_string()) {
          // OpenAI sends arguments as a JSON string; templates index into them as a mapping.
          Json args = Json::parse(fn["arguments"].get<std::string>(), nullptr, false);
          OG_CHECK(!args.is_discarded(), "tool call arguments are not valid JSON: ",
                   fn["arguments"].get<std::string>().substr(0, 80));
          fn["arguments"] = std::move(args);
        }
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

JinjaChatOptions jinja_options_of(const Tokenizer& tok) {
  JinjaChatOptions o;
  const SpecialTokens& s = tok.special();
  if (s.bos >= 0) o.bos_token = tok.piece(s.bos);
  if (s.eos >= 0) o.eos_token = tok.piece(s.eos);
  o.special_texts = special_token_texts(tok);
  return o;
}

JinjaChatTemplate::JinjaChatTemplate(std::string source, JinjaChatOptions options, std::string origin)
    : source_(std::move(source)), origin_(std::move(origin)), options_(std::move(options)) {
  try {
    tmpl_ = std::make_shared<const jinja::Template>(jinja::Template::parse(source_));
  } catch (const Error& e) {
    fail(origin_, " chat template: ", e.what());
  }
  guard_ = std::make_unique<const RequestTextGuard>(options_.special_texts, source_);
  // The text that closes an assistant turn: a built-in's marker when the
  // template is a known format, else what the template writes right after an
  // assistant's content (up to the line's end), else the EOS text.
  if (auto known = detect_chat_template(source_)) {
    turn_end_ = make_chat_template(*known, std::nullopt)->turn_end();
  } else {
    const std::string p = placeholder(1);
    Json vars = vars_of({}, false);
    vars["messages"] = Json::array({Json{{"role", "user"}, {"content", placeholder(0)}},
                                    Json{{"role", "assistant"}, {"content", p}}});
    try {
      const std::string r = render_vars(vars);
      const size_t at = r.rfind(p);
      if (at != std::string::npos) {
        std::string after = r.substr(at + p.size());
        after = after.substr(0, after.find('\n'));
        while (!after.empty() && after.back() == ' ') after.pop_back();
        turn_end_ = after;
      }
    } catch (const Error&) {
      // A template that refuses this conversation: fall back to EOS below.
    }
    if (turn_end_.empty()) turn_end_ = options_.eos_token;
  }
}

JinjaChatTemplate::~JinjaChatTemplate() = default;

std::vector<std::string> JinjaChatTemplate::stop_markers() const {
  std::vector<std::string> m;
  if (!turn_end_.empty()) m.push_back(turn_end_);
  if (!options_.eos_token.empty() && options_.eos_token != turn_end_) m.push_back(options_.eos_token);
  return m;
}

Json JinjaChatTemplate::vars_of(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  Json vars = Json::object();
  Json list = Json::array();
  for (const ChatMessage& m : messages) list.push_back(Json{{"role", m.role}, {"content", m.content}});
  vars["messages"] = std::move(list);
  vars["add_generation_prompt"] = add_generation_prompt;
  vars["bos_token"] = options_.bos_token;
  vars["eos_token"] = options_.eos_token;
  for (auto it = options_.kwargs.begin(); it != options_.kwargs.end(); ++it) vars[it.key()] = it.value();
  return vars;
}

std::string JinjaChatTemplate::render_vars(const Json& vars) const {
  jinja::RenderOptions ro;
  ro.now_unix = options_.now_unix;
  try {
    return tmpl_->render(jinja::value_from_json(vars), ro);
  } catch (const Error& e) {
    fail(origin_, " chat template: ", e.what());
  }
}

ChatSegments JinjaChatTemplate::render_segments(std::span<const ChatMessage> messages,
                                                bool add_generation_prompt) const {
  for (const ChatMessage& m : messages)
    OG_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant" || m.role == "tool" ||
                 m.role == "developer",
             "unknown chat role '", m.role, "'");
  std::vector<ChatMessage> marked(messages.begin(), messages.end());
  std::vector<std::string> contents;
  for (ChatMessage& m : marked) {
    if (m.content.empty()) continue;  // see render_request_segments
    contents.push_back(m.content);
    m.content = placeholder(contents.size() - 1);
  }
  return split_render(vars_of(messages, add_generation_prompt), vars_of(marked, add_generation_prompt), contents);
}

ChatSegments JinjaChatTemplate::split_render(const Json& vars, const Json& marked_vars,
                                             const std::vector<std::string>& contents) const {
  std::string real = render_vars(vars);
  std::string with_placeholders = render_vars(marked_vars);
  // The BOS rule (chat_template.h): a render never starts with the BOS text;
  // encode_chat prepends BOS itself when the vocabulary says so.
  const std::string& bos = options_.bos_token;
  if (!bos.empty() && real.rfind(bos, 0) == 0 && with_placeholders.rfind(bos, 0) == 0) {
    real.erase(0, bos.size());
    with_placeholders.erase(0, bos.size());
  }
  if (auto segs = align(real, with_placeholders, contents, true)) return *segs;
  if (auto segs = align(real, with_placeholders, contents, false)) return *segs;
  ChatSegments whole;
  push(whole, real, true);
  return whole;
}

Json JinjaChatTemplate::request_vars(const Json& request) const {
  OG_CHECK(request.is_object(), "the request must be a JSON object");
  OG_CHECK(request.contains("messages"), "the request has no \"messages\"");
  Json vars = vars_of({}, request.value("add_generation_prompt", true));
  vars["messages"] = normalize_chat_messages(request["messages"]);
  // OpenAI's "developer" role is the system role for templates that do not know it.
  if (source_.find("developer") == std::string::npos)
    for (Json& m : vars["messages"])
      if (m.value("role", "") == "developer") m["role"] = "system";
  if (request.contains("tools") && !request["tools"].is_null()) vars["tools"] = request["tools"];
  if (request.contains("chat_template_kwargs")) {
    const Json& kw = request["chat_template_kwargs"];
    OG_CHECK(kw.is_object(), "\"chat_template_kwargs\" must be an object");
    for (auto it = kw.begin(); it != kw.end(); ++it) vars[it.key()] = it.value();
  }
  return vars;
}

std::string JinjaChatTemplate::render_request(const Json& request) const { return render_vars(request_vars(request)); }

ChatSegments JinjaChatTemplate::render_request_segments(const Json& request) const {
  Json vars = request_vars(request);
  // The request's own variables with their special-token texts wrapped
  // (request_text.h); bos_token, eos_token and the operator's kwargs are
  // trusted unless the request's chat_template_kwargs replace them.
  RequestTextGuard::Markers markers;
  if (guard_->active()) {
    markers = guard_->pick(vars);
    const Json* kw = request.contains("chat_template_kwargs") ? &request["chat_template_kwargs"] : nullptr;
    for (auto it = vars.begin(); it != vars.end(); ++it)
      if (it.key() == "messages" || it.key() == "tools" || (kw && kw->contains(it.key())))
        it.value() = guard_->wrap(it.value(), markers, it.key() == "messages");
  }
  Json marked = vars;
  std::vector<std::string> contents;
  for (Json& m : marked["messages"]) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_string()) continue;
    // An empty content has no text to mark, and a placeholder would make it
    // true where templates test it (gpt-oss's refuses content beside the
    // analysis of a turn of calls, and others skip an empty turn).
    if (m["content"].get_ref<const std::string&>().empty()) continue;
    contents.push_back(m["content"].get<std::string>());
    m["content"] = placeholder(contents.size() - 1);
  }
  const ChatSegments segments = split_render(vars, marked, contents);
  return guard_->active() ? guard_->unwrap(segments, markers) : segments;
}

ReplyFormat JinjaChatTemplate::reply_format() const { return detect_reply_format(source_); }

}  // namespace og
