// Taint of request text through a render (taint.h).
#include "template/taint.h"

#include <algorithm>

#include "template/value.h"

namespace og::jinja {

namespace {
constinit thread_local uint8_t g_taint_new = kTaintNone;
}  // namespace

void add_span(TaintSpans& t, size_t begin, size_t end, uint8_t kind) {
  if (begin >= end || kind == kTaintNone) return;
  if (!t.empty() && t.back().end == begin && t.back().kind == kind) {
    t.back().end = end;
    return;
  }
  t.push_back({begin, end, kind});
}

void add_spans(TaintSpans& t, const TaintSpans& src, size_t from, size_t to, size_t at) {
  // The first span that ends after `from` (spans are sorted and disjoint).
  auto it = std::upper_bound(src.begin(), src.end(), from, [](size_t x, const TaintSpan& s) { return x < s.end; });
  for (; it != src.end() && it->begin < to; ++it)
    add_span(t, std::max(it->begin, from) - from + at, std::min(it->end, to) - from + at, it->kind);
}

uint8_t max_kind(const TaintSpans& t) {
  uint8_t k = kTaintNone;
  for (const TaintSpan& s : t) k = std::max(k, s.kind);
  return k;
}

TaintNewStrings::TaintNewStrings(uint8_t kind) : prev_(g_taint_new) { g_taint_new = std::max(prev_, kind); }
TaintNewStrings::~TaintNewStrings() { g_taint_new = prev_; }
uint8_t TaintNewStrings::current() { return g_taint_new; }

void TaintedText::append(std::string_view s, uint8_t kind) {
  add_span(taint_, text_.size(), text_.size() + s.size(), kind);
  text_.append(s);
}

void TaintedText::add(const Value& v) {
  if (!v.is_string()) {
    append(v.to_str(), v.taint_kind());
    return;
  }
  add(v, 0, v.str().size());
}

void TaintedText::add(const Value& v, size_t begin, size_t end) {
  if (const TaintSpans* t = v.taint()) add_spans(taint_, *t, begin, end, text_.size());
  text_.append(v.str(), begin, end - begin);
}

Value TaintedText::take() { return Value::text(std::move(text_), std::move(taint_)); }

}  // namespace og::jinja
