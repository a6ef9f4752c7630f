// Code point ranges -> UTF-8 byte-range sequences (see utf8_ranges.h).
#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace og::grammar::detail {

namespace {

int encoded_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void encode_fixed(uint32_t cp, int len, uint8_t* b) {
  switch (len) {
    case 1:
      b[0] = static_cast<uint8_t>(cp);
      break;
    case 2:
      b[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
      b[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    case 3:
      b[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
      b[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      b[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    default:
      b[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
      b[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
      b[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      b[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
  }
}

// [lo, hi] holds no surrogate and every code point in it has the same
// encoded length. Splits it until, for every trailing group of continuation
// bytes, either lo and hi agree on everything before the group or the group
// runs from its minimum (lo) to its maximum (hi): then the byte-wise ranges
// between lo's and hi's encodings are exactly the range.
void split_same_len(uint32_t lo, uint32_t hi, std::vector<Utf8Seq>& out) {
  const int len = encoded_len(lo);
  for (int i = 1; i < len; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      split_same_len(lo, lo | m, out);
      split_same_len((lo | m) + 1, hi, out);
      return;
    }
    if ((hi & m) != m) {
      split_same_len(lo, (hi & ~m) - 1, out);
      split_same_len(hi & ~m, hi, out);
      return;
    }
  }
  uint8_t a[4], b[4];
  encode_fixed(lo, len, a);
  encode_fixed(hi, len, b);
  Utf8Seq s;
  s.len = static_cast<uint8_t>(len);
  for (int k = 0; k < len; ++k) s.r[k] = {a[k], b[k]};
  out.push_back(s);
}

}  // namespace

void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<Utf8Seq>& out) {
  if (hi > 0x10FFFF) hi = 0x10FFFF;
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {  // surrogates have no UTF-8 encoding
    if (lo < 0xD800) utf8_sequences(lo, 0xD7FF, out);
    if (hi > 0xDFFF) utf8_sequences(0xE000, hi, out);
    return;
  }
  for (uint32_t edge : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= edge && hi > edge) {
      utf8_sequences(lo, edge, out);
      utf8_sequences(edge + 1, hi, out);
      return;
    }
  }
  split_same_len(lo, hi, out);
}

void utf8_encode(uint32_t cp, std::string& out) {
  uint8_t b[4];
  const int len = encoded_len(cp);
  encode_fixed(cp, len, b);
  out.append(reinterpret_cast<const char*>(b), len);
}

size_t utf8_decode_one(const std::string& s, size_t pos, uint32_t& cp) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t c = at(pos);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  size_t len;
  uint32_t min;
  if ((c & 0xE0) == 0xC0) {
    len = 2, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (pos + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((at(pos + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (at(pos + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::vector<std::pair<uint32_t, uint32_t>> normalize_ranges(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                            bool negate) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  if (!negate) return merged;
  std::vector<std::pair<uint32_t, uint32_t>> inv;
  uint32_t next = 0;
  for (const auto& r : merged) {
    if (r.first > next) inv.push_back({next, r.first - 1});
    next = r.second + 1;
  }
  if (next <= 0x10FFFF) inv.push_back({next, 0x10FFFF});
  return inv;
}

}  // namespace og::grammar::detail
