// The built-in chat formats: one small render function per format, the generic
// incremental render, name resolution and recognition of a model's template.
#include "chat/chat_template.h"

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "chat/harmony_chat.h"
#include "chat/reply_parser.h"
#include "chat/request_error.h"

namespace og {
namespace {

using Msgs = std::span<const ChatMessage>;
using RenderFn = ChatSegments (*)(Msgs, bool);

std::string trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

// Appends keeping ChatSegments' invariant: no empty segment, adjacent ones differ in kind.
void append_segment(ChatSegments& segs, std::string_view text, bool is_template) {
  if (text.empty()) return;
  if (!segs.empty() && segs.back().is_template == is_template) segs.back().text += text;
  else segs.push_back({std::string(text), is_template});
}

// Builds a render: t() the template's own text, c() a message's content.
class Out {
 public:
  Out& t(std::string_view s) {
    append_segment(segs_, s, true);
    return *this;
  }
  Out& c(std::string_view s) {
    append_segment(segs_, s, false);
    return *this;
  }
  ChatSegments take() { return std::move(segs_); }

 private:
  ChatSegments segs_;
};

void check_roles(Msgs m, const char* tmpl, bool system_only_first) {
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string& r = m[i].role;
    OG_CHECK(r == "system" || r == "user" || r == "assistant", "chat template ", tmpl, ": message ", i,
             " has role '", r, "' (expected system, user or assistant)");
    OG_CHECK(!(system_only_first && r == "system" && i > 0), "chat template ", tmpl, ": message ", i,
             " is a system message; this format takes one, as the first message");
  }
}

// <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> (Llama 3.x; the
// model's template trims contents; assistant replies are kept verbatim).
ChatSegments render_llama3(Msgs m, bool gen) {
  check_roles(m, "llama3", false);
  Out out;
  for (const auto& msg : m) {
    out.t("<|start_header_id|>" + msg.role + "<|end_header_id|>\n\n");
    out.c(msg.role == "assistant" ? msg.content : trim(msg.content));
    out.t("<|eot_id|>");
  }
  if (gen) out.t("<|start_header_id|>assistant<|end_header_id|>\n\n");
  return out.take();
}

// The formats that wrap every message the same way: OPEN ROLE HEAD CONTENT CLOSE,
// untrimmed, with "OPEN assistant HEAD" as the generation header.
ChatSegments render_wrapped(Msgs m, bool gen, const char* name, const std::string& open, const std::string& head,
                            const std::string& close) {
  check_roles(m, name, false);
  Out out;
  for (const auto& msg : m) out.t(open + msg.role + head).c(msg.content).t(close);
  if (gen) out.t(open + "assistant" + head);
  return out.take();
}

// <|im_start|>ROLE\nCONTENT<|im_end|>\n (ChatML: Qwen 2/2.5/3, SmolLM); no trimming.
ChatSegments render_chatml(Msgs m, bool gen) { return render_wrapped(m, gen, "chatml", "<|im_start|>", "\n", "<|im_end|>\n"); }

// Gemma 2/3: roles user and model only; a first system message is folded into
// the first turn as "SYSTEM\n\n" before its text; user text is trimmed.
ChatSegments render_gemma(Msgs m, bool gen) {
  check_roles(m, "gemma", true);
  Out out;
  size_t start = 0;
  const bool system = !m.empty() && m[0].role == "system";
  if (system) {
    start = 1;
    if (m.size() == 1) out.t("<start_of_turn>user\n").c(m[0].content).t("<end_of_turn>\n");
  }
  for (size_t i = start; i < m.size(); ++i) {
    bool model = m[i].role == "assistant";
    out.t(std::string("<start_of_turn>") + (model ? "model" : "user") + "\n");
    if (i == 1 && system) out.c(m[0].content).t("\n\n");
    out.c(model ? m[i].content : trim(m[i].content));
    out.t("<end_of_turn>\n");
  }
  if (gen) out.t("<start_of_turn>model\n");
  return out.take();
}

// A model turn without its thinking: every <|channel>...<channel|> span
// removed (an unclosed one runs to the end), as Gemma 4's template does for
// earlier turns.
std::string strip_thinking(const std::string& s) {
  static const std::string kOpen = "<|channel>", kClose = "<channel|>";
  std::string out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t open = s.find(kOpen, at);
    if (open == std::string::npos) break;
    out.append(s, at, open - at);
    const size_t close = s.find(kClose, open + kOpen.size());
    at = close == std::string::npos ? s.size() : close + kClose.size();
  }
  if (at < s.size()) out.append(s, at, std::string::npos);
  return out;
}

// Gemma 4: <|turn>ROLE\nCONTENT<turn|>\n with roles system, user, model (the
// thinking-off form without a pre-filled thought channel); system and user
// text is trimmed; model turns lose their thinking and are otherwise verbatim.
ChatSegments render_gemma4(Msgs m, bool gen) {
  check_roles(m, "gemma4", false);
  Out out;
  for (const auto& msg : m) {
    bool model = msg.role == "assistant";
    out.t("<|turn>" + (model ? std::string("model") : msg.role) + "\n");
    out.c(model ? strip_thinking(msg.content) : trim(msg.content));
    out.t("<turn|>\n");
  }
  if (gen) out.t("<|turn>model\n");
  return out.take();
}

// Mistral (Instruct v0.1/v0.2 layout): [INST] USER [/INST]REPLY</s>; a first
// system message goes before the first user text as "SYSTEM\n\n". The
// generation "header" is the closing [/INST] itself.
ChatSegments render_mistral(Msgs m, bool /*gen*/) {
  check_roles(m, "mistral", true);
  Out out;
  size_t start = 0;
  const std::string* system = nullptr;
  if (!m.empty() && m[0].role == "system") {
    system = &m[0].content;
    start = 1;
  }
  for (size_t i = start; i < m.size(); ++i) {
    if (m[i].role == "user") {
      out.t("[INST] ");
      if (system) out.c(*system).t("\n\n");
      out.c(m[i].content).t(" [/INST]");
      system = nullptr;
    } else {
      out.c(m[i].content).t("</s>");
    }
  }
  if (m.size() == 1 && start == 1) out.t("[INST] ").c(m[0].content).t(" [/INST]");  // a lone system message
  return out.take();
}

// Llama 2 chat: [INST] <<SYS>>\nSYSTEM\n<</SYS>>\n\nUSER [/INST]REPLY</s><s>[INST] ...
// The BOS text "<s>" opens every user turn after the first (the first one's BOS
// comes from encode_chat). Replies are verbatim and end with "</s>", the
// token generation stops on (the model's own template writes " REPLY </s>").
ChatSegments render_llama2(Msgs m, bool /*gen*/) {
  check_roles(m, "llama2", true);
  Out out;
  size_t start = 0;
  const std::string* system = nullptr;
  if (!m.empty() && m[0].role == "system") {
    system = &m[0].content;
    start = 1;
    if (m.size() == 1) out.t("[INST] <<SYS>>\n").c(trim(*system)).t("\n<</SYS>>\n\n [/INST]");
  }
  bool first_user = true;
  for (size_t i = start; i < m.size(); ++i) {
    if (m[i].role == "user") {
      out.t(first_user ? "[INST] " : "<s>[INST] ");
      if (system) out.t("<<SYS>>\n").c(trim(*system)).t("\n<</SYS>>\n\n");
      out.c(trim(m[i].content)).t(" [/INST]");
      system = nullptr;
      first_user = false;
    } else {
      out.c(m[i].content).t("</s>");
    }
  }
  return out.take();
}

// Phi-3: <|ROLE|>\nCONTENT<|end|>\n.
ChatSegments render_phi3(Msgs m, bool gen) { return render_wrapped(m, gen, "phi3", "<|", "|>\n", "<|end|>\n"); }

// Zephyr (TinyLlama-Chat): <|ROLE|>\nCONTENT</s>\n.
ChatSegments render_zephyr(Msgs m, bool gen) { return render_wrapped(m, gen, "zephyr", "<|", "|>\n", "</s>\n"); }

// Harmony (gpt-oss), as its chat template renders a conversation without
// tools (chat/harmony_chat.h renders whole requests, tools included): every
// message is <|start|>ROLE<|message|>TEXT<|end|>; first the system message
// the template builds (harmony_system_message: today's date, reasoning
// medium), then a first system message of the conversation, when not empty,
// as the developer's "# Instructions", user turns, and earlier assistant
// replies on the final channel only (their reasoning is not shown again). The
// generation header is <|start|>assistant; the model writes
// <|channel|>analysis<|message|>...<|end|> (its reasoning), then
// <|start|>assistant<|channel|>final<|message|>... and <|return|>. A reply
// therefore renders differently as history (final-channel markup, <|end|>
// for <|return|>): a chat takes it back and prefills it as rendered
// (runtime/chat_turn.h). Without
// a generation prompt a last reply keeps <|return|>, as the template writes
// it. Contents are not trimmed.
ChatSegments render_harmony(Msgs m, bool gen) {
  check_roles(m, "harmony", true);
  Out out;
  out.t("<|start|>system<|message|>" + harmony_system_message(kHarmonyIdentity, utc_date(), "medium", false) +
        "<|end|>");
  for (size_t i = 0; i < m.size(); ++i) {
    const ChatMessage& msg = m[i];
    if (msg.role == "system") {
      if (!msg.content.empty()) out.t("<|start|>developer<|message|># Instructions\n\n").c(msg.content).t("\n\n<|end|>");
    } else if (msg.role == "user") {
      out.t("<|start|>user<|message|>").c(msg.content).t("<|end|>");
    } else {
      // A last reply without a generation prompt ends as the model ends it (the template's training form).
      const bool closing = !gen && i + 1 == m.size();
      out.t("<|start|>assistant<|channel|>final<|message|>").c(msg.content).t(closing ? "<|return|>" : "<|end|>");
    }
  }
  if (gen) out.t("<|start|>assistant");
  return out.take();
}

// Raw text: the contents one after another, no markers (so nothing in it is special).
ChatSegments render_raw(Msgs m, bool /*gen*/) {
  check_roles(m, "0", false);
  Out out;
  for (const auto& msg : m) out.c(msg.content);
  return out.take();
}

struct Builtin {
  const char* name;
  RenderFn render;
  std::vector<std::string> stops;  // turn end first
};

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> kBuiltins = {
      {"llama3", render_llama3, {"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"}},
      {"gemma", render_gemma, {"<end_of_turn>", "<eos>"}},
      {"gemma4", render_gemma4, {"<turn|>", "<eos>"}},
      {"chatml", render_chatml, {"<|im_end|>", "<|endoftext|>"}},
      {"mistral", render_mistral, {"</s>"}},
      {"llama2", render_llama2, {"</s>"}},
      {"phi3", render_phi3, {"<|end|>", "<|endoftext|>"}},
      {"zephyr", render_zephyr, {"</s>"}},
      {"harmony", render_harmony, {"<|return|>", "<|call|>"}},
      {"0", render_raw, {}},
  };
  return kBuiltins;
}

class BuiltinTemplate : public ChatFormat {
 public:
  explicit BuiltinTemplate(const Builtin& b) : b_(b) {}
  std::string name() const override { return b_.name; }
  ChatSegments render_segments(std::span<const ChatMessage> messages, bool add_generation_prompt) const override {
    return b_.render(messages, add_generation_prompt);
  }
  std::string turn_end() const override { return b_.stops.empty() ? std::string() : b_.stops[0]; }
  std::vector<std::string> stop_markers() const override { return b_.stops; }

 private:
  const Builtin& b_;
};

// The built-in harmony renders whole requests as gpt-oss's template does
// (chat/harmony_chat.h), so its replies may hold gpt-oss's tool calls.
class HarmonyTemplate : public BuiltinTemplate {
 public:
  using BuiltinTemplate::BuiltinTemplate;
  bool renders_requests() const override { return true; }
  ChatSegments render_request_segments(const nlohmann::ordered_json& request) const override {
    try {
      return render_harmony_request(request);
    } catch (const ChatRequestError&) {
      throw;
    } catch (const Error& e) {  // the request's shape as a whole: reported on its messages
      throw ChatRequestError(e.what(), "messages");
    }
  }
  ReplyFormat reply_format() const override {
    ReplyFormat f = BuiltinTemplate::reply_format();
    f.tools = ToolCallFormat::kHarmony;
    return f;
  }
};

std::string names_list() {
  std::string s;
  for (const auto& b : builtins()) s += std::string(s.empty() ? "" : ", ") + b.name;
  return s;
}

bool has(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

}  // namespace

std::string chat_text(std::span<const ChatSegment> segments) {
  std::string s;
  for (const ChatSegment& seg : segments) s += seg.text;
  return s;
}

ChatSegments ChatFormat::render_request_segments(const nlohmann::ordered_json&) const {
  throw ChatRequestError("the built-in '" + name() +
                             "' chat template renders only role and content messages (no tools, tool calls or "
                             "chat_template_kwargs)",
                         "messages");
}

std::string ChatFormat::render_request(const nlohmann::ordered_json& request) const {
  return chat_text(render_request_segments(request));
}

ReplyFormat ChatFormat::reply_format() const {
  const std::vector<ChatMessage> exchange = {{"user", "x"}, {"assistant", "y"}};
  ReplyFormat f;
  f.reasoning = detect_reply_format(render(exchange, true)).reasoning;
  return f;
}

std::string ChatFormat::render(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  return chat_text(render_segments(messages, add_generation_prompt));
}

std::string utc_date(int64_t now_unix) {
  const std::time_t now = now_unix < 0 ? std::time(nullptr) : static_cast<std::time_t>(now_unix);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string harmony_system_message(std::string_view model_identity, std::string_view date,
                                   std::string_view reasoning_effort, bool has_tools) {
  std::string s(model_identity);
  s += "\nKnowledge cutoff: 2024-06\nCurrent date: ";
  s += date;
  s += "\n\nReasoning: ";
  s += reasoning_effort;
  s += "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.";
  if (has_tools) s += "\nCalls to these tools must go to the commentary channel: 'functions'.";
  return s;
}

std::vector<std::string> chat_template_names() {
  std::vector<std::string> names;
  for (const auto& b : builtins()) names.push_back(b.name);
  return names;
}

std::optional<std::string> detect_chat_template(std::string_view t) {
  if (has(t, "<|start|>") && has(t, "<|channel|>") && has(t, "<|message|>")) return "harmony";
  if (has(t, "<|turn>") && has(t, "<turn|>")) return "gemma4";
  if (has(t, "<start_of_turn>")) return "gemma";
  if (has(t, "<|start_header_id|>") || has(t, "<|eot_id|>")) return "llama3";
  if (has(t, "<|im_start|>")) return "chatml";
  if (has(t, "<|user|>") && has(t, "<|end|>")) return "phi3";
  if (has(t, "<|user|>") && has(t, "<|assistant|>")) return "zephyr";
  if (has(t, "[INST]") && has(t, "<<SYS>>")) return "llama2";
  if (has(t, "[INST]")) return "mistral";
  return std::nullopt;
}

std::unique_ptr<ChatFormat> make_chat_template(std::string_view name,
                                               const std::optional<std::string>& model_template) {
  std::string n(name);
  if (n == "auto") {
    if (!model_template || trim(*model_template).empty()) n.assign(1, '0');  // (assigning "0" trips a GCC 12 -Wrestrict false positive)
    else {
      auto found = detect_chat_template(*model_template);
      if (!found) {
        std::string head = trim(*model_template).substr(0, 60);
        std::replace(head.begin(), head.end(), '\n', ' ');
        fail("the model's chat template is not one of the built-in formats (it begins '", head,
             "...'); choose one with --chat <name> (", names_list(), ")");
      }
      n = *found;
    }
  }
  if (n == "qwen" || n == "smollm") n = "chatml";
  if (n == "gemma2" || n == "gemma3") n = "gemma";
  if (n == "raw" || n == "none") n = "0";
  if (n == "gpt-oss") n = "harmony";
  for (const auto& b : builtins())
    if (n == b.name) return n == "harmony" ? std::make_unique<HarmonyTemplate>(b) : std::make_unique<BuiltinTemplate>(b);
  fail("--chat: unknown chat template '", name, "' (known: auto, ", names_list(), ")");
}

std::vector<int32_t> chat_stop_ids(const ChatFormat& tmpl, const Tokenizer& tok) {
  std::vector<int32_t> ids = tok.special().stop_ids;
  for (int32_t id : {tok.special().eos, tok.special().eot, tok.special().eom})
    if (id >= 0) ids.push_back(id);
  for (const auto& marker : tmpl.stop_markers())
    if (auto id = tok.find_piece(marker)) ids.push_back(*id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

namespace {
bool is_ascii_whitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
}  // namespace

std::vector<int32_t> encode_chat(const Tokenizer& tok, std::span<const ChatSegment> segments, bool first,
                                 int32_t after_id) {
  std::vector<TextPart> parts;
  parts.reserve(segments.size());
  bool strip = after_id >= 0 && tok.strips_space_after(after_id);
  for (const ChatSegment& seg : segments) {
    std::string_view text = seg.text;
    if (strip) {
      size_t n = 0;
      while (n < text.size() && is_ascii_whitespace(text[n])) ++n;
      text.remove_prefix(n);
      strip = text.empty();  // all whitespace: keep stripping into the next segment
    }
    parts.push_back({text, seg.is_template});
  }
  std::vector<int32_t> ids = tok.encode_parts(parts, /*add_special=*/false);
  const SpecialTokens& sp = tok.special();
  if (first && sp.add_bos && sp.bos >= 0 && (ids.empty() || ids[0] != sp.bos)) ids.insert(ids.begin(), sp.bos);
  return ids;
}

}  // namespace og
