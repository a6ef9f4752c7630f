// Request text kept as text in a chat template's render (request_text.h).
#include "chat/request_text.h"

#include <algorithm>

namespace og {

RequestTextSplitter::RequestTextSplitter(const std::vector<std::string>& special_texts) : trie_(1) {
  for (const std::string& t : special_texts) {
    if (t.empty()) continue;
    int32_t node = 0;
    for (char ch : t) {
      int32_t child = step(node, ch);
      if (child < 0) {
        child = static_cast<int32_t>(trie_.size());
        trie_[static_cast<size_t>(node)].next.emplace_back(static_cast<unsigned char>(ch), child);
        trie_.emplace_back();
      }
      node = child;
    }
    trie_[static_cast<size_t>(node)].terminal = true;
    max_len_ = std::max(max_len_, t.size());
  }
}

int32_t RequestTextSplitter::step(int32_t node, char c) const {
  for (const auto& [byte, to] : trie_[static_cast<size_t>(node)].next)
    if (byte == static_cast<unsigned char>(c)) return to;
  return -1;
}

void RequestTextSplitter::mark_occurrences(std::string_view text, size_t begin, size_t end, size_t& scanned,
                                           std::vector<uint8_t>& as_text) const {
  // An occurrence that overlaps [begin, end) starts at most max_len_ - 1
  // bytes before it; starts already scanned for an earlier span are skipped.
  size_t p = std::max(scanned, begin >= max_len_ ? begin - max_len_ + 1 : 0);
  for (; p < end; ++p) {
    int32_t node = 0;
    for (size_t i = p; i < text.size() && i - p < max_len_; ++i) {
      node = step(node, text[i]);
      if (node < 0) break;
      if (trie_[static_cast<size_t>(node)].terminal && i + 1 > begin)
        std::fill(as_text.begin() + static_cast<std::ptrdiff_t>(p), as_text.begin() + static_cast<std::ptrdiff_t>(i + 1), 1);
    }
  }
  scanned = std::max(scanned, p);
}

ChatSegments RequestTextSplitter::split(const std::string& text, const jinja::TaintSpans& taint) const {
  std::vector<uint8_t> as_text(text.size(), 0);
  size_t scanned = 0;
  for (const jinja::TaintSpan& s : taint) {
    if (s.kind == jinja::kTaintContent)
      std::fill(as_text.begin() + static_cast<std::ptrdiff_t>(s.begin), as_text.begin() + static_cast<std::ptrdiff_t>(s.end), 1);
    if (active()) mark_occurrences(text, s.begin, s.end, scanned, as_text);
  }
  ChatSegments out;
  for (size_t i = 0; i < text.size();) {
    size_t j = i;
    while (j < text.size() && as_text[j] == as_text[i]) ++j;
    out.push_back({text.substr(i, j - i), as_text[i] == 0});
    i = j;
  }
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
