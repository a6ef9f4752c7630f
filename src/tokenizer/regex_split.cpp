// PCRE2 regex matching and HF Split behaviours.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex_split.h"

#include <pcre2.h>

#include "base/error.h"

namespace og::tok {

SplitBehavior parse_split_behavior(std::string_view name) {
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  fail("tokenizer: unsupported split behavior '", name, "'");
}

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE err_off = 0;
  const uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), opts, &err,
                                   &err_off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    fail("tokenizer: cannot compile pre-tokenizer regex '", pattern, "' at offset ", err_off, ": ",
         reinterpret_cast<const char*>(msg));
  }
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

namespace {

// Per-thread match data and JIT stack, grown on demand (encode is const and may
// run on several threads at once).
struct MatchScratch {
  pcre2_match_data* md = nullptr;
  pcre2_match_context* mctx = nullptr;
  pcre2_jit_stack* stack = nullptr;
  size_t stack_size = 0;
  MatchScratch() {
    md = pcre2_match_data_create(32, nullptr);
    mctx = pcre2_match_context_create(nullptr);
    grow(256 * 1024);
  }
  ~MatchScratch() {
    pcre2_match_data_free(md);
    pcre2_match_context_free(mctx);
    if (stack) pcre2_jit_stack_free(stack);
  }
  void grow(size_t size) {
    if (stack) pcre2_jit_stack_free(stack);
    stack = pcre2_jit_stack_create(32 * 1024, size, nullptr);
    stack_size = size;
    pcre2_jit_stack_assign(mctx, nullptr, stack);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

}  // namespace

void Regex::find_all(std::string_view text, Span span, std::vector<Span>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  MatchScratch& ms = scratch();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // The subject ends at span.end so that look-aheads and $ see the piece's end.
  const PCRE2_SIZE len = span.end;
  PCRE2_SIZE pos = span.begin;
  while (pos < len) {
    int rc = jit_ ? pcre2_jit_match(code, subject, len, pos, 0, ms.md, ms.mctx)
                  : pcre2_match(code, subject, len, pos, 0, ms.md, ms.mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && ms.stack_size < (64u << 20)) {
      ms.grow(ms.stack_size * 4);
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof(msg));
      fail("tokenizer: regex '", pattern_, "' failed: ", reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ms.md);
    const PCRE2_SIZE b = ov[0], e = ov[1];
    if (e > b) {
      out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e)});
      pos = e;
    } else {
      // Empty match: step one UTF-8 unit (or one invalid byte) forward.
      size_t step = 1;
      while (b + step < len && (static_cast<uint8_t>(text[b + step]) & 0xC0) == 0x80) ++step;
      pos = b + step;
    }
  }
}

void split_span(const Regex& re, std::string_view text, Span span, SplitBehavior behavior, bool invert,
                std::vector<Span>& out, std::vector<Span>& scratch) {
  scratch.clear();
  re.find_all(text, span, scratch);
  // Segments in order: gaps (is_match=false) and matches (is_match=true).
  struct Seg {
    Span s;
    bool match;
  };
  thread_local std::vector<Seg> segs;
  segs.clear();
  uint32_t at = span.begin;
  for (const Span& m : scratch) {
    if (m.begin > at) segs.push_back({{at, m.begin}, invert});
    segs.push_back({m, !invert});
    at = m.end;
  }
  if (at < span.end) segs.push_back({{at, span.end}, invert});

  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Seg& g : segs) out.push_back(g.s);
      break;
    case SplitBehavior::kRemoved:
      for (const Seg& g : segs)
        if (!g.match) out.push_back(g.s);
      break;
    case SplitBehavior::kMergedWithPrevious: {
      // A match is glued to the piece before it.
      bool prev_open = false;
      for (const Seg& g : segs) {
        if (g.match && prev_open) {
          out.back().end = g.s.end;
        } else {
          out.push_back(g.s);
        }
        prev_open = !g.match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      // A match starts a new piece that absorbs the gap after it.
      bool pending = false;
      for (const Seg& g : segs) {
        if (!g.match && pending) {
          out.back().end = g.s.end;
          pending = false;
        } else {
          out.push_back(g.s);
          pending = g.match;
        }
      }
      break;
    }
    case SplitBehavior::kContiguous: {
      bool prev_match = false;
      for (const Seg& g : segs) {
        if (g.match && prev_match) {
          out.back().end = g.s.end;
        } else {
          out.push_back(g.s);
        }
        prev_match = g.match;
      }
      break;
    }
  }
}

std::string regex_escape(std::string_view literal) {
  std::string out = "\\Q";
  for (size_t i = 0; i < literal.size(); ++i) {
    if (literal.substr(i, 2) == "\\E") {
      out += "\\E\\\\E\\Q";
      ++i;
    } else {
      out += literal[i];
    }
  }
  out += "\\E";
  return out;
}

}  // namespace og::tok
