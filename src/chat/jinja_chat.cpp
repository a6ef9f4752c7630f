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
// case change alters, and no template inspects (turn_end's probe render).
std::string placeholder(size_t i) { return "\xEE\x80\x80og" + std::to_string(i) + "\xEE\x80\x81"; }

// A message list as template values, every string tainted (request_text.h):
// a string content as a content, everything else as a request field.
jinja::Value tainted_messages(const Json& messages) {
  std::vector<jinja::Value> out;
  for (const Json& m : messages) {
    if (!m.is_object()) {
      out.push_back(jinja::value_from_json(m, jinja::kTaintField));
      continue;
    }
    jinja::Dict d;
    d.items.reserve(m.size());
    for (auto it = m.begin(); it != m.end(); ++it) {
      const bool content = it.key() == "content" && it.value().is_string();
      d.items.emplace_back(jinja::value_from_json(Json(it.key()), jinja::kTaintField),
                           jinja::value_from_json(it.value(), content ? jinja::kTaintContent : jinja::kTaintField));
    }
    out.push_back(jinja::Value::dict(std::move(d)));
  }
  return jinja::Value::list(std::move(out));
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

Json normalize_chat_messages(const Json& messages, bool keep_images) {
  OG_CHECK(messages.is_array(), "\"messages\" must be an array");
  Json out = Json::array();
  for (const Json& m : messages) {
    OG_CHECK(m.is_object(), "each message must be an object");
    Json n = m;
    if (n.contains("content") && n["content"].is_array()) {
      bool images = false;
      for (const Json& part : n["content"]) {
        const bool image = keep_images && part.is_object() && part.value("type", "") == "image";
        images = images || image;
        OG_CHECK(image || (part.is_object() && part.value("type", "") == "text"),
                 "only text content parts are supported (a part has type ",
                 part.is_object() && part.contains("type") ? part["type"].dump() : std::string("none"), ")");
      }
      if (!images) n["content"] = text_of_content(n["content"]);
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
  splitter_ = std::make_unique<const RequestTextSplitter>(options_.special_texts);
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
  const Json vars = vars_of(messages, add_generation_prompt);
  return render_tainted(vars, {"messages"});
}

ChatSegments JinjaChatTemplate::render_tainted(const Json& vars, const std::vector<std::string>& from_request) const {
  // The variables as template values: those the request gave tainted
  // (request_text.h), the operator's (bos_token, eos_token, --chat-template-kwargs) not.
  jinja::Dict d;
  d.items.reserve(vars.size());
  for (auto it = vars.begin(); it != vars.end(); ++it) {
    const bool tainted = std::find(from_request.begin(), from_request.end(), it.key()) != from_request.end();
    jinja::Value v = !tainted ? jinja::value_from_json(it.value())
                     : it.key() == "messages" && it.value().is_array() ? tainted_messages(it.value())
                                                                      : jinja::value_from_json(it.value(), jinja::kTaintField);
    d.items.emplace_back(jinja::Value(it.key()), std::move(v));
  }
  jinja::RenderOptions ro;
  ro.now_unix = options_.now_unix;
  jinja::TaintedRender r;
  try {
    r = tmpl_->render_tainted(jinja::Value::dict(std::move(d)), ro);
  } catch (const Error& e) {
    fail(origin_, " chat template: ", e.what());
  }
  // The BOS rule (chat_template.h): a render never starts with the BOS text;
  // encode_chat prepends BOS itself when the vocabulary says so. Only the
  // template's own BOS text is dropped, never request text.
  const std::string& bos = options_.bos_token;
  if (!bos.empty() && r.text.rfind(bos, 0) == 0 && (r.taint.empty() || r.taint.front().begin >= bos.size())) {
    r.text.erase(0, bos.size());
    for (jinja::TaintSpan& t : r.taint) {
      t.begin -= bos.size();
      t.end -= bos.size();
    }
  }
  return splitter_->split(r.text, r.taint);
}

Json JinjaChatTemplate::request_vars(const Json& request) const {
  OG_CHECK(request.is_object(), "the request must be a JSON object");
  OG_CHECK(request.contains("messages"), "the request has no \"messages\"");
  Json vars = vars_of({}, request.value("add_generation_prompt", true));
  vars["messages"] = normalize_chat_messages(request["messages"], /*keep_images=*/true);
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
  // The request's own variables are tainted; bos_token, eos_token and the
  // operator's kwargs are trusted unless the request's chat_template_kwargs
  // replace them.
  std::vector<std::string> from_request = {"messages", "tools"};
  if (request.contains("chat_template_kwargs") && request["chat_template_kwargs"].is_object())
    for (auto it = request["chat_template_kwargs"].begin(); it != request["chat_template_kwargs"].end(); ++it)
      from_request.push_back(it.key());
  return render_tainted(request_vars(request), from_request);
}

ReplyFormat JinjaChatTemplate::reply_format() const { return detect_reply_format(source_); }

}  // namespace og
