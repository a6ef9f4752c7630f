// Pre-tokenizer regular expressions through PCRE2 (UTF + UCP, JIT compiled) and
// the split behaviours of Hugging Face's Split pre-tokenizer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace og::tok {

// A half-open byte range [begin, end) into some text.
struct Span {
  uint32_t begin = 0, end = 0;
};

enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };
SplitBehavior parse_split_behavior(std::string_view name);  // "Isolated", ... ; og::Error otherwise

class Regex {
 public:
  // Compiles `pattern` (PCRE2 syntax, UTF + UCP). Invalid UTF-8 in subjects is
  // allowed: such bytes never match and end up in the gaps between matches.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the non-empty matches inside text[span] (absolute offsets) to out.
  void find_all(std::string_view text, Span span, std::vector<Span>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

// Splits text[span] by the matches of `re` (or the gaps, with `invert`) with
// `behavior`, appending the resulting non-empty pieces to out.
void split_span(const Regex& re, std::string_view text, Span span, SplitBehavior behavior, bool invert,
                std::vector<Span>& out, std::vector<Span>& scratch);

// A literal pattern escaped for PCRE2 (HF `{"String": ...}` split patterns).
std::string regex_escape(std::string_view literal);

}  // namespace og::tok
