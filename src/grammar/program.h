// The compiled form of a grammar (internal to src/grammar): every rule is a
// list of alternatives laid out in one flat element array, and every terminal
// is a set of bytes. Character classes over code points have already been
// turned into alternatives of byte sequences (utf8_ranges.h), so matching is
// purely byte by byte and a token may end in the middle of a character.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace og::grammar::detail {

// 256 bits: a set of bytes, or a set of byte classes.
using Bits256 = std::array<uint64_t, 4>;

inline bool bits_test(const Bits256& b, unsigned i) { return (b[i >> 6] >> (i & 63)) & 1; }
inline void bits_set(Bits256& b, unsigned i) { b[i >> 6] |= uint64_t{1} << (i & 63); }
inline bool bits_subset(const Bits256& a, const Bits256& b) {  // a ⊆ b
  return ((a[0] & ~b[0]) | (a[1] & ~b[1]) | (a[2] & ~b[2]) | (a[3] & ~b[3])) == 0;
}

// Byte values that never loop on their own (every terminal comes from UTF-8
// encodings, so bytes >= 0x80 only loop as parts of whole characters), reused
// as markers in the bulk sets of the mask walk: "valid UTF-8 below" and
// "invalid UTF-8 below".
constexpr unsigned kValidUtf8 = 0x80;
constexpr unsigned kBadUtf8 = 0xFF;

enum ElementKind : uint8_t {
  kEnd = 0,    // end of an alternative: return to the caller
  kBytes = 1,  // one byte from class_sets[arg]
  kRule = 2,   // call rules[arg]
};

struct Element {
  ElementKind kind = kEnd;
  int32_t arg = 0;
};

struct Rule {
  std::string name;           // user rules: their name; generated ones: what made them ("group at 3:7")
  std::vector<int32_t> alts;  // index in Program::elems of each alternative's first element
};

struct Program {
  std::vector<Element> elems;  // alternatives, each ended by kEnd
  std::vector<Rule> rules;
  int32_t root = -1;
  // Bytes that every terminal treats alike share a class; transitions are
  // tabled per class, so a state's table has n_classes entries, not 256.
  std::array<uint8_t, 256> byte_class{};
  int32_t n_classes = 1;
  std::vector<Bits256> class_sets;  // per kBytes element arg: the classes it accepts
};

}  // namespace og::grammar::detail
