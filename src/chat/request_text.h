// Request fields stay text through a Jinja chat template: a special-token
// text ("<|start_header_id|>", "<|eot_id|>", ...) that a request writes into
// tools, tool calls, names, reasoning, chat_template_kwargs values or any
// other field never becomes a control token, while the template's own
// markers still do. (Message contents are kept apart by jinja_chat.cpp's
// placeholder render; this covers every other string of the request.)
//
// How: before the render, every special-token text inside a request string
// (keys included) is wrapped between two private-use code points, the
// markers, and so is a string's head that could end a special token begun by
// the template's text before it, or its tail that could begin one the text
// after it ends. The template computes with the wrapped strings as with the
// real ones (tojson, |string, concatenation, replace, upper keep the
// markers around the text); after it, each wrapped span of the output
// becomes a text segment and the markers are removed. A marker printed as
// Python's repr or tojson(ensure_ascii) spells it ("\ue010") counts as the
// marker. A render that cut a span apart (a slice through it) is an og::Error,
// never a prompt where that text might act as a control token.
//
// The markers of a render are a pair that neither the template's source nor
// any string of the request holds, raw or spelled as \uXXXX, so a request
// cannot forge them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"

namespace og {

class RequestTextGuard {
 public:
  struct Markers {
    char32_t open = 0, close = 0;
  };

  // special_texts: the texts the tokenizer turns into control tokens (see
  // special_token_texts); none: the guard does nothing. source: the
  // template's text, whose private-use code points markers avoid.
  RequestTextGuard(std::vector<std::string> special_texts, std::string_view source);
  bool active() const { return active_; }

  // The markers for a render of `request` (an og::Error when it holds every
  // candidate pair, 64 of them).
  Markers pick(const nlohmann::ordered_json& request) const;
  // `j` with every string (and key) wrapped; with skip_contents, a message
  // list: each message's string "content" is left as it is.
  nlohmann::ordered_json wrap(const nlohmann::ordered_json& j, const Markers& m, bool skip_contents = false) const;
  std::string wrap_text(std::string_view s, const Markers& m) const;
  // The rendered segments with wrapped spans of template text turned into
  // text segments and every marker removed; an og::Error when a span is cut.
  ChatSegments unwrap(const ChatSegments& segments, const Markers& m) const;

 private:
  // A byte trie of the special texts (forward_) and of their reversals
  // (backward_): matching costs at most the longest text's length per byte,
  // however many texts the vocabulary has.
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;
    bool terminal = false;
  };
  static void insert(std::vector<Node>& trie, std::string_view text, bool reversed);
  // The child of `node` by byte c; -1 when none.
  static int32_t step(const std::vector<Node>& trie, int32_t node, char c);
  // The longest special text at s[pos], 0 when none starts there.
  size_t match_at(std::string_view s, size_t pos) const;
  // The longest head of s that is a proper suffix of a special text, and the
  // longest tail that is a proper prefix of one (0: none).
  size_t edge_head(std::string_view s) const;
  size_t edge_tail(std::string_view s) const;

  bool active_ = false;
  std::vector<Node> forward_, backward_;
  size_t max_len_ = 0;
  std::vector<bool> source_uses_;  // candidate code points the template's source holds
};

// The texts of the vocabulary's control (and unknown) tokens: those that
// encode_chat turns into their token inside template text only.
std::vector<std::string> special_token_texts(const Tokenizer& tok);

}  // namespace og
