// Taint: which bytes of a string came from a chat request rather than from
// the template's own text. The chat layer (chat/request_text.h) turns the
// render's tainted bytes into text that never becomes a control token.
//
// The rule, the same for every operation: a string value carries the byte
// spans that came from the request, each with a kind (kTaintField: a
// request field; kTaintContent: a message's content, which is kept apart as
// a segment of its own). Literal text of the template is untainted. The
// operations that move text (concatenation, ~, %, format, join, slices,
// indexing, iteration over characters, strip/trim, replace, repetition,
// upper/lower of ASCII text, output, macro and block captures) carry each
// byte's taint to where the byte lands. Every other operation that builds a
// string (tojson, repr, split, title, indent, a filter or method on a value
// that holds taint anywhere, ...) taints all of its result with the highest
// kind among its inputs: it cannot launder request text into template text.
// Control flow is not tracked: `{% if x == 'a' %}<|tok|>{% endif %}` prints
// the template's own text, chosen by the request, and that is the
// template's to decide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace og::jinja {

class Value;

constexpr uint8_t kTaintNone = 0;
constexpr uint8_t kTaintField = 1;
constexpr uint8_t kTaintContent = 2;

struct TaintSpan {
  size_t begin = 0, end = 0;
  uint8_t kind = kTaintField;
  bool operator==(const TaintSpan&) const = default;
};
// Sorted, disjoint; adjacent spans of one kind are merged.
using TaintSpans = std::vector<TaintSpan>;

// Appends [begin, end) of `kind` to t (which ends at or before begin).
void add_span(TaintSpans& t, size_t begin, size_t end, uint8_t kind);
// The spans of src within [from, to), shifted so that `from` lands at `at`.
void add_spans(TaintSpans& t, const TaintSpans& src, size_t from, size_t to, size_t at);
// The highest kind in t (kTaintNone when empty).
uint8_t max_kind(const TaintSpans& t);

// New strings built while one lives are tainted whole with `kind` (the
// engine's default for operations that do not carry taint byte by byte);
// kTaintNone leaves the current setting.
class TaintNewStrings {
 public:
  explicit TaintNewStrings(uint8_t kind);
  ~TaintNewStrings();
  TaintNewStrings(const TaintNewStrings&) = delete;
  TaintNewStrings& operator=(const TaintNewStrings&) = delete;
  static uint8_t current();

 private:
  uint8_t prev_;
};

// A string being built with its taint: template text appended untainted,
// values with theirs.
class TaintedText {
 public:
  void append(std::string_view s) { text_.append(s); }  // untainted
  void append(std::string_view s, uint8_t kind);
  // v's str() (a string) or to_str() (anything else, tainted whole with v's kind).
  void add(const Value& v);
  // Bytes [begin, end) of the string v.
  void add(const Value& v, size_t begin, size_t end);
  const std::string& text() const { return text_; }
  const TaintSpans& taint() const { return taint_; }
  size_t size() const { return text_.size(); }
  // The bytes its spans take, for memory bounds.
  size_t taint_bytes() const { return taint_.size() * sizeof(TaintSpan); }
  Value take();
  std::string take_text() { return std::move(text_); }
  TaintSpans take_taint() { return std::move(taint_); }

 private:
  std::string text_;
  TaintSpans taint_;
};

}  // namespace og::jinja
