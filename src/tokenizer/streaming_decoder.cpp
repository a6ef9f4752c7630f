// StreamingDecoder: token_bytes() of each pushed id, with skipped control
// tokens, the SentencePiece leading-space rule and UTF-8 completion applied so
// that the streamed text equals Tokenizer::decode() of the whole sequence.
#include "tokenizer/streaming_decoder.h"

#include "base/error.h"

namespace og {
namespace {

// Length of the UTF-8 sequence at s[i]: its full length when well formed, the
// length of its maximal ill-formed subpart (>= 1) when not, and 0 when it is a
// well-formed prefix cut short by the end of s (more bytes may complete it).
size_t utf8_sequence(std::string_view s, size_t i, bool* valid) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  *valid = false;
  if (c < 0x80) {
    *valid = true;
    return 1;
  }
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 1;  // continuation byte or a byte that never starts a character
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return 0;
    unsigned char x = b(i + k);
    bool ok = k == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xBF);
    if (!ok) return k;
  }
  *valid = true;
  return len;
}

// Bytes of s that can be emitted now: everything but a trailing well-formed
// prefix of a character that later bytes may complete.
size_t utf8_complete_prefix(std::string_view s) {
  size_t i = 0;
  bool valid = false;
  while (i < s.size()) {
    size_t n = utf8_sequence(s, i, &valid);
    if (n == 0) break;
    i += n;
  }
  return i;
}

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tok, bool skip_special)
    : tok_(tok), skip_special_(skip_special) {}

std::string StreamingDecoder::push(int32_t id) {
  OG_CHECK(id >= 0 && id < tok_.n_vocab(), "streaming decode: token id ", id, " is out of range [0, ",
           tok_.n_vocab(), ")");
  if (skipped(id)) return {};
  std::string bytes = tok_.token_bytes(id);
  if (bytes.empty()) return {};
  if (at_start_) {
    at_start_ = false;
    if (tok_.strips_leading_space() && bytes[0] == ' ') bytes.erase(0, 1);
  }
  held_ += bytes;
  return take_complete();
}

// decode() passes bytes through as they are (ill-formed UTF-8 included), so
// only a possibly-unfinished character at the end is held back.
// Whether decode() leaves token `id` out (control tokens, and whatever else the
// tokenizer's decode drops): a kept token contributes its bytes to decode([id, id])
// (at most one leading space is stripped there), a skipped one nothing. Cached per id.
bool StreamingDecoder::skipped(int32_t id) {
  if (skip_cache_.empty()) skip_cache_.assign(static_cast<size_t>(tok_.n_vocab()), -1);
  int8_t& c = skip_cache_[static_cast<size_t>(id)];
  if (c < 0) {
    const int32_t pair[2] = {id, id};
    c = !tok_.token_bytes(id).empty() && tok_.decode(pair, skip_special_).empty() ? 1 : 0;
  }
  return c == 1;
}

std::string StreamingDecoder::take_complete() {
  size_t done = utf8_complete_prefix(held_);
  std::string out = held_.substr(0, done);
  held_.erase(0, done);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  out.swap(held_);
  at_start_ = true;
  return out;
}

void StreamingDecoder::reset() {
  held_.clear();
  at_start_ = true;
}

void StreamingDecoder::reset_continuation() {
  held_.clear();
  at_start_ = false;
}

}  // namespace og
