// Reading one tool call in each format's syntax (see tool_call_formats.h):
// where it ends as the reply grows, and whether its body is well formed.
#include "chat/tool_call_formats.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace og::detail {

using Json = nlohmann::ordered_json;  // keeps the model's key order in arguments

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

namespace {

size_t skip_space(std::string_view s, size_t p) {
  while (p < s.size() && is_space(s[p])) ++p;
  return p;
}

std::string_view trim_space(std::string_view s) {
  size_t b = skip_space(s, 0), e = s.size();
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Whether brackets outside strings nest deeper than kMaxNesting (the JSON
// parser and dump() recurse; a hostile reply must not exhaust the stack).
bool too_deep(std::string_view json) {
  int depth = 0;
  bool in_string = false, escape = false;
  for (char c : json) {
    if (in_string) {
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxNesting) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

bool parse_json(std::string_view text, Json* out) {
  if (too_deep(text)) return false;
  *out = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded();
}

// Compact JSON text of an object; false if it cannot be written (a string
// with bytes that are not UTF-8, which only Gemma's and Qwen3-Coder's raw
// strings can carry).
bool dump_object(const Json& j, std::string* out) {
  if (!j.is_object()) return false;
  try {
    *out = j.dump();
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

bool call_from_json(const Json& j, bool allow_missing_arguments, ParsedCall* out) {
  if (!j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return false;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  Json object;
  if (args == j.end()) {
    if (!allow_missing_arguments) return false;
    object = Json::object();
  } else if (args->is_object()) {
    object = *args;
  } else if (args->is_string()) {
    if (!parse_json(args->get_ref<const std::string&>(), &object) || !object.is_object()) return false;
  } else {
    return false;
  }
  if (!dump_object(object, &out->arguments)) return false;
  out->name = name->get<std::string>();
  return true;
}

// A Qwen3-Coder parameter's text: the template writes objects and arrays as
// JSON and everything else with Python's str(), so JSON that is not a string
// is taken as that value and anything else as a string (without the schema
// "123" cannot be told from 123; this reads it as the number).
Json xml_value(std::string_view text) {
  Json j;
  if (parse_json(text, &j) && !j.is_string()) return j;
  return Json(std::string(text));
}

// <function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>
bool parse_qwen_xml(std::string_view s, ParsedCall* out) {
  constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
  constexpr std::string_view kParam = "<parameter=", kParamEnd = "</parameter>";
  size_t p = kFunction.size();
  size_t gt = s.find('>', p);
  if (gt == std::string_view::npos || gt == p) return false;
  std::string_view name = s.substr(p, gt - p);
  if (std::any_of(name.begin(), name.end(), [](char c) { return is_space(c) || c == '<'; })) return false;
  Json args = Json::object();
  p = gt + 1;
  for (;;) {
    p = skip_space(s, p);
    if (s.substr(p).starts_with(kFunctionEnd)) {
      p += kFunctionEnd.size();
      break;
    }
    if (!s.substr(p).starts_with(kParam)) return false;
    p += kParam.size();
    gt = s.find('>', p);
    if (gt == std::string_view::npos || gt == p) return false;
    std::string key(s.substr(p, gt - p));
    size_t end = s.find(kParamEnd, gt + 1);
    if (end == std::string_view::npos) return false;
    std::string_view value = s.substr(gt + 1, end - gt - 1);
    if (value.starts_with('\n')) value.remove_prefix(1);
    if (value.ends_with('\n')) value.remove_suffix(1);
    args[key] = xml_value(value);
    p = end + kParamEnd.size();
  }
  if (skip_space(s, p) != s.size()) return false;
  if (!dump_object(args, &out->arguments)) return false;
  out->name = std::string(name);
  return true;
}

// Gemma 4's argument syntax, the inverse of the template's format_argument
// (escape_keys=False): strings <|"|>raw text<|"|>, true / false, numbers as
// Python prints them, None (and null) for null, {key:value,...} with bare
// (or <|"|>-quoted) keys, [value,...]. Whitespace between tokens is allowed.
class GemmaArgs {
 public:
  explicit GemmaArgs(std::string_view s, size_t p) : s_(s), p_(p) {}
  size_t pos() const { return p_; }

  bool value(Json* out) {
    p_ = skip_space(s_, p_);
    if (p_ >= s_.size()) return false;
    if (at(kGemmaQuote)) return string(out);
    if (s_[p_] == '{') return object(out);
    if (s_[p_] == '[') return array(out);
    return scalar(out);
  }

  bool object(Json* out) {
    if (p_ >= s_.size() || s_[p_] != '{' || ++depth_ > kMaxNesting) return false;
    *out = Json::object();
    p_ = skip_space(s_, p_ + 1);
    if (p_ < s_.size() && s_[p_] == '}') return close();
    for (;;) {
      std::string k;
      Json v;
      if (!key(&k)) return false;
      p_ = skip_space(s_, p_);
      if (p_ >= s_.size() || s_[p_] != ':') return false;
      ++p_;
      if (!value(&v)) return false;
      (*out)[k] = std::move(v);
      p_ = skip_space(s_, p_);
      if (p_ >= s_.size()) return false;
      if (s_[p_] == '}') return close();
      if (s_[p_] != ',') return false;
      ++p_;
    }
  }

 private:
  bool at(std::string_view m) const { return s_.substr(p_).starts_with(m); }
  bool close() {
    ++p_;
    --depth_;
    return true;
  }

  bool string(Json* out) {
    size_t b = p_ + kGemmaQuote.size();
    size_t e = s_.find(kGemmaQuote, b);
    if (e == std::string_view::npos) return false;
    *out = std::string(s_.substr(b, e - b));
    p_ = e + kGemmaQuote.size();
    return true;
  }

  bool key(std::string* out) {
    p_ = skip_space(s_, p_);
    if (at(kGemmaQuote)) {
      Json j;
      if (!string(&j)) return false;
      *out = j.get<std::string>();
      return true;
    }
    size_t b = p_;
    while (p_ < s_.size() && s_[p_] != ':' && !is_space(s_[p_]) &&
           std::string_view("{}[],<").find(s_[p_]) == std::string_view::npos)
      ++p_;
    *out = std::string(s_.substr(b, p_ - b));
    return !out->empty();
  }

  bool array(Json* out) {
    if (++depth_ > kMaxNesting) return false;
    *out = Json::array();
    p_ = skip_space(s_, p_ + 1);
    if (p_ < s_.size() && s_[p_] == ']') return close();
    for (;;) {
      Json v;
      if (!value(&v)) return false;
      out->push_back(std::move(v));
      p_ = skip_space(s_, p_);
      if (p_ >= s_.size()) return false;
      if (s_[p_] == ']') return close();
      if (s_[p_] != ',') return false;
      ++p_;
    }
  }

  bool scalar(Json* out) {
    size_t b = p_;
    while (p_ < s_.size() && !is_space(s_[p_]) && std::string_view(",}]<").find(s_[p_]) == std::string_view::npos)
      ++p_;
    std::string_view t = s_.substr(b, p_ - b);
    if (t == "true" || t == "false") {
      *out = (t == "true");
      return true;
    }
    if (t == "None" || t == "null") {
      *out = nullptr;
      return true;
    }
    return !t.empty() && parse_json(t, out) && out->is_number();
  }

  std::string_view s_;
  size_t p_;
  int depth_ = 0;
};

bool is_mistral_name_char(char c) {
  return !is_space(c) && std::string_view("[]{}()\"'<>,;").find(c) == std::string_view::npos;
}

bool is_ascii_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

bool call_from_json_text(std::string_view text, bool allow_missing_arguments, ParsedCall* out) {
  Json j;
  return parse_json(text, &j) && call_from_json(j, allow_missing_arguments, out);
}

bool parse_hermes_body(std::string_view body, ParsedCall* out) {
  body = trim_space(body);
  if (body.starts_with("<function=")) return parse_qwen_xml(body, out);
  return call_from_json_text(body, /*allow_missing_arguments=*/true, out);
}

bool parse_gemma4_body(std::string_view body, ParsedCall* out) {
  constexpr std::string_view kCall = "call:";
  size_t p = skip_space(body, 0);
  if (!body.substr(p).starts_with(kCall)) return false;
  p += kCall.size();
  size_t brace = body.find('{', p);
  if (brace == std::string_view::npos || brace == p) return false;
  std::string_view name = body.substr(p, brace - p);
  if (std::any_of(name.begin(), name.end(), [](char c) {
        return is_space(c) || std::string_view("<>[]},\"").find(c) != std::string_view::npos;
      }))
    return false;
  GemmaArgs g(body, brace);
  Json args;
  if (!g.object(&args) || skip_space(body, g.pos()) != body.size()) return false;
  if (!dump_object(args, &out->arguments)) return false;
  out->name = std::string(name);
  return true;
}

void JsonEnd::reset(size_t start) {
  pos_ = start;
  depth_ = 0;
  in_string_ = escape_ = false;
}

size_t JsonEnd::scan(std::string_view text) {
  for (; pos_ < text.size(); ++pos_) {
    char c = text[pos_];
    if (in_string_) {
      if (escape_) escape_ = false;
      else if (c == '\\') escape_ = true;
      else if (c == '"') in_string_ = false;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && --depth_ == 0) {
      return ++pos_;
    }
  }
  return std::string_view::npos;
}

void CallReader::reset() {
  scanned_ = 0;
  in_string_ = false;
  json_start_ = std::string::npos;
  json_end_.reset(0);
  mistral_list_ = false;
  mistral_name_.clear();
  harmony_name_.clear();
}

CallRead CallReader::read(std::string_view text, bool final) {
  CallRead r;
  size_t marker = 0;
  switch (format_) {
    case ToolCallFormat::kHermes: r = read_hermes(text), marker = kHermesOpen.size(); break;
    case ToolCallFormat::kLlama3Json: r = read_llama(text), marker = text.size(); break;
    case ToolCallFormat::kMistral: r = read_mistral(text), marker = kMistralCalls.size(); break;
    case ToolCallFormat::kGemma4: r = read_gemma(text), marker = kGemmaOpen.size(); break;
    case ToolCallFormat::kHarmony:
      r = read_harmony(text, final);
      marker = text.starts_with(kHarmonyStart) ? kHarmonyStart.size() : kHarmonyChannel.size();
      break;
    case ToolCallFormat::kNone: r.status = CallStatus::kMalformed; break;
  }
  if (r.status == CallStatus::kNeedMore && final) r.status = CallStatus::kMalformed;
  if (r.status == CallStatus::kMalformed) {
    r.end = std::min(marker, text.size());
    r.calls.clear();
  }
  return r;
}

namespace {
CallRead done(size_t end, ParsedCall call) {
  CallRead r;
  r.status = CallStatus::kDone;
  r.end = end;
  r.calls.push_back(std::move(call));
  return r;
}
CallRead status(CallStatus s) {
  CallRead r;
  r.status = s;
  return r;
}
}  // namespace

CallRead CallReader::read_hermes(std::string_view text) {
  size_t from = std::max(kHermesOpen.size(), scanned_);
  size_t q = text.find(kHermesClose, from);
  if (q == std::string_view::npos) {
    // A close marker that is still to come ends after the current text.
    size_t keep = kHermesClose.size() - 1;
    scanned_ = std::max(from, text.size() > keep ? text.size() - keep : 0);
    return status(CallStatus::kNeedMore);
  }
  ParsedCall c;
  if (!parse_hermes_body(text.substr(kHermesOpen.size(), q - kHermesOpen.size()), &c))
    return status(CallStatus::kMalformed);
  return done(q + kHermesClose.size(), std::move(c));
}

CallRead CallReader::read_llama(std::string_view text) {
  if (json_start_ == std::string::npos) {
    size_t p = 0;
    if (text.starts_with(kPythonTag)) p = skip_space(text, kPythonTag.size());
    if (p >= text.size()) return status(CallStatus::kNeedMore);
    if (text[p] != '{') return status(CallStatus::kMalformed);
    json_start_ = p;
    json_end_.reset(p);
  }
  size_t e = json_end_.scan(text);
  if (e == std::string_view::npos) return status(CallStatus::kNeedMore);
  ParsedCall c;
  if (!call_from_json_text(text.substr(json_start_, e - json_start_), /*allow_missing_arguments=*/false, &c))
    return status(CallStatus::kMalformed);
  return done(e, std::move(c));
}

CallRead CallReader::read_mistral(std::string_view text) {
  if (json_start_ == std::string::npos) {
    size_t p = skip_space(text, kMistralCalls.size());
    if (p >= text.size()) return status(CallStatus::kNeedMore);
    if (text[p] == '[') {
      mistral_list_ = true;
    } else {
      // name, then [CALL_ID]id (Mistral Small 3.2's template writes one), then [ARGS]{...}
      size_t b = p;
      while (p < text.size() && is_mistral_name_char(text[p])) ++p;
      if (p >= text.size()) return status(CallStatus::kNeedMore);
      if (p == b) return status(CallStatus::kMalformed);
      mistral_name_ = std::string(text.substr(b, p - b));
      std::string_view rest = text.substr(p);
      if (rest.starts_with(kMistralCallId)) {
        p += kMistralCallId.size();
        while (p < text.size() && is_ascii_alnum(text[p])) ++p;
        if (p >= text.size()) return status(CallStatus::kNeedMore);
        rest = text.substr(p);
      } else if (kMistralCallId.starts_with(rest)) {
        return status(CallStatus::kNeedMore);
      }
      if (!rest.starts_with(kMistralArgs))
        return status(kMistralArgs.starts_with(rest) ? CallStatus::kNeedMore : CallStatus::kMalformed);
      p = skip_space(text, p + kMistralArgs.size());
      if (p >= text.size()) return status(CallStatus::kNeedMore);
      if (text[p] != '{') return status(CallStatus::kMalformed);
    }
    json_start_ = p;
    json_end_.reset(p);
  }
  size_t e = json_end_.scan(text);
  if (e == std::string_view::npos) return status(CallStatus::kNeedMore);
  std::string_view json = text.substr(json_start_, e - json_start_);
  Json j;
  if (!parse_json(json, &j)) return status(CallStatus::kMalformed);
  CallRead r;
  if (mistral_list_) {
    if (!j.is_array() || j.empty()) return status(CallStatus::kMalformed);
    for (const Json& item : j) {
      ParsedCall c;
      if (!call_from_json(item, /*allow_missing_arguments=*/true, &c)) return status(CallStatus::kMalformed);
      r.calls.push_back(std::move(c));
    }
  } else {
    ParsedCall c;
    if (!dump_object(j, &c.arguments)) return status(CallStatus::kMalformed);
    c.name = mistral_name_;
    r.calls.push_back(std::move(c));
  }
  r.status = CallStatus::kDone;
  r.end = e;
  return r;
}

CallRead CallReader::read_gemma(std::string_view text) {
  size_t p = std::max(kGemmaOpen.size(), scanned_);
  while (p < text.size()) {
    std::string_view rest = text.substr(p);
    if (rest.starts_with(kGemmaQuote)) {
      in_string_ = !in_string_;
      p += kGemmaQuote.size();
      continue;
    }
    if (!in_string_ && rest.starts_with(kGemmaClose)) {
      ParsedCall c;
      if (!parse_gemma4_body(text.substr(kGemmaOpen.size(), p - kGemmaOpen.size()), &c))
        return status(CallStatus::kMalformed);
      return done(p + kGemmaClose.size(), std::move(c));
    }
    // The text ends in what may be the start of a quote or of the close marker.
    if ((rest.size() < kGemmaQuote.size() && kGemmaQuote.starts_with(rest)) ||
        (!in_string_ && rest.size() < kGemmaClose.size() && kGemmaClose.starts_with(rest)))
      break;
    ++p;
  }
  scanned_ = p;
  return status(CallStatus::kNeedMore);
}

// The header (up to <|message|>) names the function in "to=functions.NAME",
// before or after the channel; the body is the arguments object itself; the
// call ends at its JSON's end, with the <|call|> that follows (when the
// reply's text holds it: it is the stop token) taken along.
CallRead CallReader::read_harmony(std::string_view text, bool final) {
  if (json_start_ == std::string::npos) {
    const size_t m = text.find(kHarmonyMessage);
    if (m == std::string_view::npos)
      return status(text.size() > kMaxHarmonyHeader ? CallStatus::kMalformed : CallStatus::kNeedMore);
    const std::string_view header = text.substr(0, m);
    const size_t to = header.find(kHarmonyRecipient);
    if (to == std::string_view::npos) return status(CallStatus::kMalformed);  // a message to no function
    size_t e = to + kHarmonyRecipient.size();
    while (e < header.size() && !is_space(header[e]) && header[e] != '<') ++e;
    harmony_name_ = std::string(header.substr(to + kHarmonyRecipient.size(), e - to - kHarmonyRecipient.size()));
    if (harmony_name_.empty()) return status(CallStatus::kMalformed);
    const size_t p = skip_space(text, m + kHarmonyMessage.size());
    if (p >= text.size()) return status(CallStatus::kNeedMore);
    if (text[p] != '{') return status(CallStatus::kMalformed);
    json_start_ = p;
    json_end_.reset(p);
  }
  // scanned_: the JSON's end once found (JsonEnd scans on past it otherwise).
  if (scanned_ == 0) {
    const size_t end = json_end_.scan(text);
    if (end == std::string_view::npos) return status(CallStatus::kNeedMore);
    scanned_ = end;
  }
  const size_t e = scanned_;
  Json j;
  ParsedCall c;
  c.name = harmony_name_;
  if (!parse_json(text.substr(json_start_, e - json_start_), &j) || !dump_object(j, &c.arguments))
    return status(CallStatus::kMalformed);
  const std::string_view rest = text.substr(e);
  if (rest.starts_with(kHarmonyCall)) return done(e + kHarmonyCall.size(), std::move(c));
  if (!final && kHarmonyCall.starts_with(rest)) return status(CallStatus::kNeedMore);
  return done(e, std::move(c));
}

}  // namespace og::detail
