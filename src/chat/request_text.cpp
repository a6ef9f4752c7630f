// Request fields kept as text through a Jinja chat template (request_text.h).
#include "chat/request_text.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace og {

namespace {

using Json = nlohmann::ordered_json;

// Marker candidates: pair k is (kFirst + 2k, kFirst + 2k + 1), private-use
// code points apart from jinja_chat.cpp's content placeholders (U+E000, U+E001).
constexpr char32_t kFirst = 0xE010;
constexpr size_t kCandidates = 128;

bool is_candidate(char32_t c) { return c >= kFirst && c < kFirst + kCandidates; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code point spelled at s[i]: a 3-byte UTF-8 sequence or a \uXXXX escape
// (as Python's repr and json.dumps(ensure_ascii) write one); `len` its size.
// 0 when neither starts there.
char32_t code_at(std::string_view s, size_t i, size_t& len) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  if (b(i) >= 0xE0 && b(i) < 0xF0 && i + 2 < s.size() && (b(i + 1) & 0xC0) == 0x80 && (b(i + 2) & 0xC0) == 0x80) {
    len = 3;
    return static_cast<char32_t>(((b(i) & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F));
  }
  if (s[i] == '\\' && i + 5 < s.size() && s[i + 1] == 'u') {
    char32_t c = 0;
    for (size_t k = 2; k < 6; ++k) {
      const int d = hex_digit(s[i + k]);
      if (d < 0) return 0;
      c = c * 16 + static_cast<char32_t>(d);
    }
    len = 6;
    return c;
  }
  return 0;
}

void note_uses(std::string_view s, std::vector<bool>& used) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c != 0xEE && c != '\\') continue;  // every candidate's UTF-8 starts with 0xEE
    size_t len = 0;
    const char32_t cp = code_at(s, i, len);
    if (is_candidate(cp)) used[cp - kFirst] = true;
  }
}

void note_json_uses(const Json& j, std::vector<bool>& used) {
  if (j.is_string()) {
    note_uses(std::string_view(j.get_ref<const std::string&>()), used);
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      note_uses(std::string_view(it.key()), used);
      note_json_uses(it.value(), used);
    }
  } else if (j.is_array()) {
    for (const Json& e : j) note_json_uses(e, used);
  }
}

void append_utf8(std::string& out, char32_t c) {  // candidates are 3-byte code points
  out += static_cast<char>(0xE0 | (c >> 12));
  out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
  out += static_cast<char>(0x80 | (c & 0x3F));
}

void push(ChatSegments& out, std::string_view text, bool is_template) {
  if (text.empty()) return;
  if (!out.empty() && out.back().is_template == is_template) out.back().text += text;
  else out.push_back({std::string(text), is_template});
}

}  // namespace

RequestTextGuard::RequestTextGuard(std::vector<std::string> special_texts, std::string_view source)
    : forward_(1), backward_(1), source_uses_(kCandidates, false) {
  for (const std::string& t : special_texts) {
    if (t.empty()) continue;
    active_ = true;
    insert(forward_, t, false);
    insert(backward_, t, true);
    max_len_ = std::max(max_len_, t.size());
  }
  note_uses(source, source_uses_);
}

void RequestTextGuard::insert(std::vector<Node>& trie, std::string_view text, bool reversed) {
  int32_t node = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char b = static_cast<unsigned char>(reversed ? text[text.size() - 1 - i] : text[i]);
    int32_t child = -1;
    for (const auto& [byte, to] : trie[static_cast<size_t>(node)].next)
      if (byte == b) child = to;
    if (child < 0) {
      child = static_cast<int32_t>(trie.size());
      trie[static_cast<size_t>(node)].next.emplace_back(b, child);
      trie.emplace_back();
    }
    node = child;
  }
  trie[static_cast<size_t>(node)].terminal = true;
}

int32_t RequestTextGuard::step(const std::vector<Node>& trie, int32_t node, char c) {
  for (const auto& [byte, to] : trie[static_cast<size_t>(node)].next)
    if (byte == static_cast<unsigned char>(c)) return to;
  return -1;
}

RequestTextGuard::Markers RequestTextGuard::pick(const Json& request) const {
  std::vector<bool> used = source_uses_;
  note_json_uses(request, used);
  for (size_t k = 0; k + 1 < kCandidates; k += 2)
    if (!used[k] && !used[k + 1])
      return {static_cast<char32_t>(kFirst + k), static_cast<char32_t>(kFirst + k + 1)};
  fail("the request's text holds every private-use code point from U+E010 to U+E08F, which the server needs "
       "free to keep request fields as text");
}

size_t RequestTextGuard::match_at(std::string_view s, size_t pos) const {
  size_t best = 0;
  int32_t node = 0;
  for (size_t i = pos; i < s.size() && i - pos < max_len_; ++i) {
    node = step(forward_, node, s[i]);
    if (node < 0) break;
    if (forward_[static_cast<size_t>(node)].terminal) best = i - pos + 1;
  }
  return best;
}

size_t RequestTextGuard::edge_tail(std::string_view s) const {
  // Earliest start first: the longest tail. A node with children is a proper prefix.
  for (size_t p = s.size() > max_len_ ? s.size() - max_len_ + 1 : 0; p < s.size(); ++p) {
    int32_t node = 0;
    for (size_t i = p; i < s.size() && node >= 0; ++i) node = step(forward_, node, s[i]);
    if (node >= 0 && !forward_[static_cast<size_t>(node)].next.empty()) return s.size() - p;
  }
  return 0;
}

size_t RequestTextGuard::edge_head(std::string_view s) const {
  for (size_t k = std::min(max_len_ - 1, s.size()); k > 0; --k) {
    int32_t node = 0;
    for (size_t i = k; i-- > 0 && node >= 0;) node = step(backward_, node, s[i]);
    if (node >= 0 && !backward_[static_cast<size_t>(node)].next.empty()) return k;
  }
  return 0;
}

std::string RequestTextGuard::wrap_text(std::string_view s, const Markers& m) const {
  if (!active_ || s.empty()) return std::string(s);
  std::vector<std::pair<size_t, size_t>> spans;
  // A head that ends a special text the template's text before it could begin.
  if (const size_t k = edge_head(s)) spans.emplace_back(0, k);
  for (size_t pos = 0; pos < s.size();) {
    const size_t n = match_at(s, pos);
    if (n == 0) {
      ++pos;
      continue;
    }
    spans.emplace_back(pos, pos + n);
    pos += n;
  }
  // A tail that begins a special text the template's text after it could end.
  if (const size_t k = edge_tail(s)) spans.emplace_back(s.size() - k, s.size());
  if (spans.empty()) return std::string(s);
  std::sort(spans.begin(), spans.end());
  std::string out;
  out.reserve(s.size() + 6 * spans.size());
  size_t at = 0;
  for (size_t i = 0; i < spans.size();) {
    size_t begin = spans[i].first, end = spans[i].second;
    for (++i; i < spans.size() && spans[i].first <= end; ++i) end = std::max(end, spans[i].second);  // merge
    out.append(s.substr(at, begin - at));
    append_utf8(out, m.open);
    out.append(s.substr(begin, end - begin));
    append_utf8(out, m.close);
    at = end;
  }
  out.append(s.substr(at));
  return out;
}

Json RequestTextGuard::wrap(const Json& j, const Markers& m, bool skip_contents) const {
  if (j.is_string()) return wrap_text(j.get_ref<const std::string&>(), m);
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[wrap_text(it.key(), m)] = wrap(it.value(), m);
    return out;
  }
  if (!j.is_array()) return j;
  Json out = Json::array();
  for (const Json& e : j) {
    if (!skip_contents || !e.is_object()) {
      out.push_back(wrap(e, m));
      continue;
    }
    Json msg = Json::object();  // contents stay as they are: jinja_chat.cpp keeps them apart
    for (auto it = e.begin(); it != e.end(); ++it)
      msg[wrap_text(it.key(), m)] = it.key() == "content" && it.value().is_string() ? it.value() : wrap(it.value(), m);
    out.push_back(std::move(msg));
  }
  return out;
}

ChatSegments RequestTextGuard::unwrap(const ChatSegments& segments, const Markers& m) const {
  ChatSegments out;
  int depth = 0;
  for (const ChatSegment& seg : segments) {
    const std::string_view s = seg.text;
    size_t from = 0;
    auto flush = [&](size_t to) {
      push(out, s.substr(from, to - from), seg.is_template && depth == 0);
    };
    for (size_t i = 0; i < s.size();) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      size_t len = 0;
      const char32_t cp = c == 0xEE || c == '\\' ? code_at(s, i, len) : 0;
      if (cp != m.open && cp != m.close) {
        ++i;
        continue;
      }
      flush(i);
      if (cp == m.open) {
        ++depth;
      } else {
        OG_CHECK(depth > 0, "the chat template cut apart a special-token text of the request's fields (it sliced "
                            "or split through it), so it cannot be kept as text; leave such texts out of the request");
        --depth;
      }
      i += len;
      from = i;
    }
    flush(s.size());
  }
  OG_CHECK(depth == 0, "the chat template cut apart a special-token text of the request's fields (it sliced or "
                       "split through it), so it cannot be kept as text; leave such texts out of the request");
  return out;
}

std::vector<std::string> special_token_texts(const Tokenizer& tok) {
  std::vector<std::string> out;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    const TokenType t = tok.token_type(id);
    if (t == TokenType::kControl || t == TokenType::kUnknown) out.push_back(tok.piece(id));
  }
  return out;
}

}  // namespace og
