// The reply parser's state machine: reasoning block, content, tool calls, and
// what may be released while the reply is still streaming. The syntax of one
// call per format lives in tool_call_formats.cpp, the choice of format from a
// template's source in reply_format.cpp.
//
// Every decision is made only once the text seen so far fixes it, so feeding
// a reply in any split gives the same result as feeding it whole.
//
// Whitespace that is trimmed (everything else is kept byte for byte):
// - around the reasoning: before its open marker at the start of the reply,
//   at both ends of the reasoning text, and after its close marker;
// - around a well-formed tool call: the whitespace just before its first
//   byte, and whitespace after the last call up to the end of the reply (the
//   templates write "\n" between content and calls and between calls).
#include "chat/reply_parser.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>
#include <utility>

#include "chat/tool_call_formats.h"

namespace og {

using detail::CallRead;
using detail::CallReader;
using detail::CallStatus;
using detail::is_space;

namespace {

struct ReasoningMarkers {
  std::string_view open, close;
  // A header that opens the content directly, with no reasoning before it
  // (harmony's final channel when the model skips analysis); dropped.
  std::string_view content_open;
};

ReasoningMarkers reasoning_markers(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::kThink: return {"<think>", "</think>", {}};
    case ReasoningFormat::kGemma4Channel: return {"<|channel>thought", "<channel|>", {}};
    case ReasoningFormat::kMistralThink: return {"[THINK]", "[/THINK]", {}};
    // gpt-oss: the analysis channel, then the final channel's header (what the model writes between them).
    case ReasoningFormat::kHarmony:
      return {"<|channel|>analysis<|message|>", "<|end|><|start|>assistant<|channel|>final<|message|>",
              "<|channel|>final<|message|>"};
    case ReasoningFormat::kNone: break;
  }
  return {};
}

// The marker that starts a call inside content (Llama 3's calls have none:
// they are the whole reply). Harmony's call is a message: its header starts
// with <|start|>assistant, or (the reply's first message) with <|channel|>;
// call_open_marker2 gives that second marker. (The strict tools' grammars
// under "auto", tool_grammar.cpp, keep free text clear of these markers.)
std::string_view call_open_marker(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes: return detail::kHermesOpen;
    case ToolCallFormat::kMistral: return detail::kMistralCalls;
    case ToolCallFormat::kGemma4: return detail::kGemmaOpen;
    case ToolCallFormat::kHarmony: return detail::kHarmonyStart;
    case ToolCallFormat::kLlama3Json:
    case ToolCallFormat::kNone: break;
  }
  return {};
}
std::string_view call_open_marker2(ToolCallFormat f) {
  return f == ToolCallFormat::kHarmony ? detail::kHarmonyChannel : std::string_view{};
}

// Where the longest suffix of text that is a proper prefix of marker starts
// (text.size() if none): the part that may still become the marker.
size_t partial_marker_start(std::string_view text, std::string_view marker) {
  size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t n = longest; n > 0; --n)
    if (marker.starts_with(text.substr(text.size() - n))) return text.size() - n;
  return text.size();
}

size_t leading_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[n])) ++n;
  return n;
}

// Start of the whitespace run that ends at end.
size_t space_run_start(std::string_view s, size_t end) {
  while (end > 0 && is_space(s[end - 1])) --end;
  return end;
}

bool all_space(std::string_view s) { return leading_space(s) == s.size(); }

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

struct ReplyParser::Impl {
  enum class State {
    kStart,           // nothing read yet: a reasoning block may open
    kReasoning,       // inside the reasoning block
    kAfterReasoning,  // the block closed: whitespace before the content is dropped
    kText,            // content, where a call may start
    kCall,            // a call's text is being read
  };

  explicit Impl(ReplyParserOptions o) : options(o), reader(o.format.tools) {
    if (options.parse_reasoning) reasoning_marks = reasoning_markers(options.format.reasoning);
    if (options.parse_tools) {
      tools = options.format.tools;
      call_open = call_open_marker(tools);
      call_open2 = call_open_marker2(tools);
    }
    if (!reasoning_marks.open.empty())
      state = options.starts_in_reasoning ? State::kReasoning : State::kStart;
    id_state = options.id_seed != 0
                   ? options.id_seed
                   : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                         reinterpret_cast<uintptr_t>(this);
  }

  ReplyParserOptions options;
  ReasoningMarkers reasoning_marks;  // empty: reasoning is not parsed
  ToolCallFormat tools = ToolCallFormat::kNone;  // kNone: calls are not parsed
  std::string_view call_open, call_open2;  // call_open2: a second marker, or empty
  State state = State::kText;

  std::string buf;            // received and not yet released
  bool reasoning_lead = true;  // no reasoning byte released yet (leading whitespace is dropped)
  bool content_seen = false;   // content released: a Llama 3 reply is no longer a call
  bool after_call = false;     // the last thing released was a call
  size_t call_space = 0;       // kCall: whitespace in buf before the call's first byte
  CallReader reader;

  uint64_t id_state = 0;
  std::unordered_set<std::string> ids;

  std::string reasoning, content;
  std::vector<ToolCall> calls;
  ReplyDelta out;

  void emit_reasoning(std::string_view s) {
    reasoning += s;
    out.reasoning += s;
  }

  void emit_content(std::string_view s) {
    if (s.empty()) return;
    content += s;
    out.content += s;
    content_seen = true;
    after_call = false;
  }

  // "call_" + 24 letters and digits; Mistral: 9 (its templates reject any
  // other id when the call is sent back in history).
  std::string new_id() {
    static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    bool mistral = tools == ToolCallFormat::kMistral;
    for (;;) {
      std::string id = mistral ? "" : "call_";
      for (int i = 0, n = mistral ? 9 : 24; i < n; ++i) id += kAlnum[splitmix64(&id_state) % 62];
      if (ids.insert(id).second) return id;
    }
  }

  void emit_call(detail::ParsedCall&& c) {
    if (!options.parallel_tool_calls && !calls.empty()) {  // one call asked for: the rest are dropped
      after_call = true;
      return;
    }
    ToolCall call{new_id(), std::move(c.name), std::move(c.arguments)};
    int index = static_cast<int>(calls.size());
    out.tool_calls.push_back({index, call.id, call.name, ""});
    out.tool_calls.push_back({index, "", "", call.arguments});
    calls.push_back(std::move(call));
    after_call = true;
  }

  void run(bool final) {
    for (;;) {
      bool more = false;
      switch (state) {
        case State::kStart: more = start(final); break;
        case State::kReasoning: more = in_reasoning(final); break;
        case State::kAfterReasoning: more = after_reasoning(final); break;
        case State::kText: more = text(final); break;
        case State::kCall: more = call(final); break;
      }
      if (!more) return;
    }
  }

  // Each step below consumes what it can and returns whether to go on (a
  // state change), or false when it waits for more text (at final it never
  // waits: it leaves buf empty).

  bool start(bool final) {
    size_t n = leading_space(buf);
    std::string_view rest = std::string_view(buf).substr(n);
    if (rest.starts_with(reasoning_marks.open)) {
      buf.erase(0, n + reasoning_marks.open.size());
      state = State::kReasoning;
      return true;
    }
    const std::string_view content_open = reasoning_marks.content_open;
    if (!content_open.empty() && rest.starts_with(content_open)) {
      buf.erase(0, n + content_open.size());
      state = State::kAfterReasoning;
      return true;
    }
    if (!final && (reasoning_marks.open.starts_with(rest) || (!content_open.empty() && content_open.starts_with(rest))))
      return false;
    state = State::kText;
    return true;
  }

  bool in_reasoning(bool final) {
    if (reasoning_lead) {
      buf.erase(0, leading_space(buf));
      if (!buf.empty()) reasoning_lead = false;
    }
    std::string_view b = buf;
    size_t close = b.find(reasoning_marks.close);
    if (tools == ToolCallFormat::kHarmony && harmony_call_ends_analysis(b, close, final)) return true;
    if (close != std::string_view::npos) {
      emit_reasoning(b.substr(0, space_run_start(b, close)));
      buf.erase(0, close + reasoning_marks.close.size());
      state = State::kAfterReasoning;
      return true;
    }
    if (final) {  // never closed: all of it is reasoning
      emit_reasoning(b.substr(0, space_run_start(b, b.size())));
      buf.clear();
      state = State::kText;
      return false;
    }
    size_t keep = space_run_start(b, partial_marker_start(b, reasoning_marks.close));
    emit_reasoning(b.substr(0, keep));
    buf.erase(0, keep);
    return false;
  }

  // Harmony with tools: the analysis message may end (<|end|>) before a
  // message that is not the final channel's, a call: the reasoning is done
  // and that message, from its <|start|>assistant, is read as a call (or as
  // content, if it is none). false: not such an end (yet).
  bool harmony_call_ends_analysis(std::string_view b, size_t close, bool final) {
    const std::string next = std::string(detail::kHarmonyEnd) + std::string(detail::kHarmonyStart);
    const size_t at = b.find(next);
    if (at == std::string_view::npos || (close != std::string_view::npos && close <= at)) return false;
    if (!final && reasoning_marks.close.starts_with(b.substr(at))) return false;  // may still be the final header
    emit_reasoning(b.substr(0, space_run_start(b, at)));
    buf.erase(0, at + detail::kHarmonyEnd.size());
    state = State::kAfterReasoning;
    return true;
  }

  bool after_reasoning(bool final) {
    buf.erase(0, leading_space(buf));
    if (buf.empty() && !final) return false;
    state = State::kText;
    return true;
  }

  bool text(bool final) {
    if (tools == ToolCallFormat::kLlama3Json && !content_seen) return llama_start(final);
    std::string_view b = buf;
    if (!call_open.empty()) {
      size_t open = b.find(call_open);
      if (!call_open2.empty()) open = std::min(open, b.find(call_open2));
      if (open != std::string_view::npos) {
        size_t space = space_run_start(b, open);
        emit_content(b.substr(0, space));
        buf.erase(0, space);
        return begin_call(open - space);
      }
    }
    if (final) {
      if (!(after_call && all_space(b))) emit_content(b);
      buf.clear();
      return false;
    }
    size_t keep = b.size();
    if (!call_open.empty()) {
      size_t partial = partial_marker_start(b, call_open);
      if (!call_open2.empty()) partial = std::min(partial, partial_marker_start(b, call_open2));
      keep = space_run_start(b, partial);
    }
    emit_content(b.substr(0, keep));
    buf.erase(0, keep);
    return false;
  }

  // Llama 3: a call is the whole reply, '{' or <|python_tag|> first; calls
  // may be separated by ';'. Anything else makes the rest content. (The
  // strict tools' grammar under "auto", tool_grammar.cpp, follows this split.)
  bool llama_start(bool final) {
    std::string_view b = buf;
    size_t p = leading_space(b);
    bool separator = false;
    if (after_call && p < b.size() && b[p] == ';') {
      separator = true;
      p += 1 + leading_space(b.substr(p + 1));
    }
    std::string_view rest = b.substr(p);
    if (rest.empty()) {
      if (!final) return false;
      if (!(after_call && !separator)) emit_content(b);
      buf.clear();
      return false;
    }
    if (rest[0] == '{' || rest.starts_with(detail::kPythonTag)) return begin_call(p);
    if (!final && detail::kPythonTag.starts_with(rest)) return false;
    emit_content(b.substr(0, p));  // not a call: the rest of the reply is content
    buf.erase(0, p);
    content_seen = true;
    return true;
  }

  bool begin_call(size_t space) {
    call_space = space;
    reader.reset();
    state = State::kCall;
    return true;
  }

  bool call(bool final) {
    CallRead r = reader.read(std::string_view(buf).substr(call_space), final);
    switch (r.status) {
      case CallStatus::kNeedMore: return false;
      case CallStatus::kDone:
        buf.erase(0, call_space + r.end);
        for (detail::ParsedCall& c : r.calls) emit_call(std::move(c));
        break;
      case CallStatus::kMalformed:
        if (tools == ToolCallFormat::kLlama3Json) {
          content_seen = true;  // the reply is not a call: all of the rest is content
          emit_content(buf);
          buf.clear();
        } else {
          // The open marker is content; what follows it is read again as
          // content, so a well-formed call inside a broken one is still found.
          emit_content(std::string_view(buf).substr(0, call_space + r.end));
          buf.erase(0, call_space + r.end);
        }
        break;
    }
    state = State::kText;
    return true;
  }
};

ReplyParser::ReplyParser(ReplyParserOptions options) : impl_(new Impl(options)) {}
ReplyParser::~ReplyParser() { delete impl_; }
ReplyParser::ReplyParser(ReplyParser&& o) noexcept : impl_(std::exchange(o.impl_, nullptr)) {}
ReplyParser& ReplyParser::operator=(ReplyParser&& o) noexcept {
  if (this != &o) {
    delete impl_;
    impl_ = std::exchange(o.impl_, nullptr);
  }
  return *this;
}

ReplyDelta ReplyParser::feed(std::string_view text) {
  impl_->buf.append(text);
  impl_->run(false);
  return std::exchange(impl_->out, ReplyDelta{});
}

ReplyDelta ReplyParser::finish() {
  impl_->run(true);
  return std::exchange(impl_->out, ReplyDelta{});
}

const std::string& ReplyParser::reasoning() const { return impl_->reasoning; }
const std::string& ReplyParser::content() const { return impl_->content; }
const std::vector<ToolCall>& ReplyParser::tool_calls() const { return impl_->calls; }

ParsedReply parse_reply(std::string_view text, const ReplyParserOptions& options) {
  ReplyParser p(options);
  p.feed(text);
  p.finish();
  return {p.reasoning(), p.content(), p.tool_calls()};
}

bool prompt_opens_reasoning(std::string_view rendered_prompt, ReasoningFormat f) {
  ReasoningMarkers m = reasoning_markers(f);
  if (m.open.empty()) return false;
  size_t open = rendered_prompt.rfind(m.open);
  return open != std::string_view::npos && all_space(rendered_prompt.substr(open + m.open.size()));
}

}  // namespace og
