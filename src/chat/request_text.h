// Request text stays text in a Jinja chat template's render: the engine
// tracks which bytes of the render came from the request (taint, see
// src/template/taint.h: every string operation carries it, byte by byte or,
// for an operation that does not map bytes, over its whole result), and
// RequestTextSplitter turns the tainted render into prompt segments:
//
// - a message's content (kTaintContent) is a text segment of its own,
//   wherever the template moved or cut it;
// - every other request byte (kTaintField: tools, tool calls, names, roles,
//   reasoning, chat_template_kwargs values, keys) is text wherever it is
//   part of a special-token text of the vocabulary: each occurrence of such
//   a text in the render that holds at least one request byte becomes a
//   text segment whole, its template bytes included (a control token formed
//   partly from request text is text, at either boundary). The rest stays
//   in the template's text, so a prompt whose fields hold no special-token
//   text tokenizes exactly as the one rendered string does.
//
// encode_chat matches control tokens only inside template segments, and no
// such segment then holds a special-token text that touches a request byte.
// With no special texts (no vocabulary given) field bytes are left as
// template text, as before there was a vocabulary to check them against.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/chat_template.h"
#include "template/taint.h"

namespace og {

class RequestTextSplitter {
 public:
  // special_texts: the texts the tokenizer turns into control tokens (see
  // special_token_texts).
  explicit RequestTextSplitter(const std::vector<std::string>& special_texts);
  bool active() const { return max_len_ > 0; }

  // A render and its taint as segments (see above).
  ChatSegments split(const std::string& text, const jinja::TaintSpans& taint) const;

 private:
  // A byte trie of the special texts: finding every occurrence that starts
  // at a byte costs at most the longest text's length.
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;
    bool terminal = false;
  };
  int32_t step(int32_t node, char c) const;
  // Marks every special-text occurrence in `text` that overlaps [begin, end).
  void mark_occurrences(std::string_view text, size_t begin, size_t end, size_t& scanned,
                        std::vector<uint8_t>& as_text) const;

  std::vector<Node> trie_;
  size_t max_len_ = 0;
};

// The texts of the vocabulary's control (and unknown) tokens: those that
// encode_chat turns into their token inside template text only.
std::vector<std::string> special_token_texts(const Tokenizer& tok);

}  // namespace og
