// Code point ranges -> UTF-8 byte-range sequences, so that a character class
// can be matched one byte at a time. Each sequence is 1..4 byte ranges whose
// cartesian product is exactly the encodings of a sub-range of code points;
// together they cover every valid encoding of the input ranges and nothing
// else (no overlong forms, no surrogates U+D800..U+DFFF).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace og::grammar::detail {

struct ByteRange {
  uint8_t lo = 0, hi = 0;
};

struct Utf8Seq {
  ByteRange r[4];
  uint8_t len = 0;
};

// Appends the sequences for code points [lo, hi] (hi <= 0x10FFFF).
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<Utf8Seq>& out);

// Appends the UTF-8 encoding of cp (cp <= 0x10FFFF).
void utf8_encode(uint32_t cp, std::string& out);

// Decodes one UTF-8 character at s[pos]; returns its length, or 0 when the
// bytes there are not a valid, complete, shortest-form encoding.
size_t utf8_decode_one(const std::string& s, size_t pos, uint32_t& cp);

// Sorts and merges ranges; with negate, returns the complement in [0, 0x10FFFF].
std::vector<std::pair<uint32_t, uint32_t>> normalize_ranges(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                            bool negate);

}  // namespace og::grammar::detail
