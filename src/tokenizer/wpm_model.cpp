// BERT pre-processing (ICU character classes) and WordPiece longest match.
#include "tokenizer/wpm_model.h"

#include <string>

#include <unicode/uchar.h>

#include "tokenizer/unicode_text.h"

namespace og::tok {

namespace {

bool is_cjk(int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_punct(int32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  return (U_GET_GC_MASK(c) & U_GC_P_MASK) != 0;
}

// Other (C*) characters except tab / newline / carriage return.
bool is_control(int32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  return (U_GET_GC_MASK(c) & U_GC_C_MASK) != 0;
}

bool is_space(int32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(c); }

}  // namespace

WpmModel::WpmModel(const Vocab& vocab, int32_t unk, bool lowercase, bool strip_accents)
    : vocab_(vocab), unk_(unk), lowercase_(lowercase), strip_accents_(strip_accents) {
  for (const std::string& p : vocab.pieces) max_piece_ = std::max(max_piece_, p.size());
}

void WpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  const std::string norm = strip_accents_ ? normalize_unicode(text, NormForm::kNfd) : std::string(text);
  std::string word;
  auto flush = [&] {
    if (!word.empty()) encode_word(word, out);
    word.clear();
  };
  for (size_t i = 0; i < norm.size();) {
    int32_t c;
    i += utf8_decode(norm, i, c);
    if (c < 0 || c == 0 || c == 0xFFFD || is_control(c)) continue;  // invalid bytes are dropped too
    if (is_space(c)) {
      flush();
      continue;
    }
    if (strip_accents_ && u_charType(c) == U_NON_SPACING_MARK) continue;
    if (lowercase_) c = u_tolower(c);
    if (is_punct(c) || is_cjk(c)) {
      flush();
      utf8_append(word, static_cast<uint32_t>(c));
      flush();
    } else {
      utf8_append(word, static_cast<uint32_t>(c));
    }
  }
  flush();
}

void WpmModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  constexpr size_t kMaxWordChars = 100;  // longer words are [UNK]
  size_t n_chars = 0;
  for (size_t i = 0; i < word.size(); i += utf8_unit_len(word, i)) ++n_chars;
  const size_t at = out.size();
  if (n_chars <= kMaxWordChars) {
    const std::string w = "\xE2\x96\x81" + std::string(word);
    for (size_t i = 0; i < w.size();) {
      int32_t found = -1;
      size_t len = std::min(max_piece_, w.size() - i);
      for (; len > 0; --len) {
        // Only whole UTF-8 characters: the piece must end on a boundary.
        if (i + len < w.size() && (static_cast<uint8_t>(w[i + len]) & 0xC0) == 0x80) continue;
        found = vocab_.find(std::string_view(w).substr(i, len));
        if (found >= 0) break;
      }
      if (found < 0) {
        out.resize(at);
        break;
      }
      out.push_back(found);
      i += len;
    }
  }
  if (out.size() == at && unk_ >= 0) out.push_back(unk_);
}

}  // namespace og::tok
