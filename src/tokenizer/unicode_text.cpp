// UTF-8 decoding, the GPT-2 byte map and ICU-backed normalization.
#include "tokenizer/unicode_text.h"

#include <array>
#include <vector>

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include "base/error.h"

namespace og::tok {

size_t utf8_decode(std::string_view s, size_t pos, int32_t& cp) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  cp = -1;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t n = 0;
  uint32_t v = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, v = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, v = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, v = b0 & 0x07, min = 0x10000;
  } else {
    return 1;
  }
  if (pos + n > s.size()) return 1;
  for (size_t i = 1; i < n; ++i) {
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return 1;
    v = (v << 6) | (b & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 1;
  cp = static_cast<int32_t>(v);
  return n;
}

size_t utf8_unit_len(std::string_view s, size_t pos) {
  if (static_cast<uint8_t>(s[pos]) < 0x80) return 1;
  int32_t cp;
  return utf8_decode(s, pos, cp);
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool utf8_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    int32_t cp;
    i += utf8_decode(s, i, cp);
    if (cp < 0) return false;
  }
  return true;
}

namespace {

// GPT-2's table: printable Latin-1 bytes map to themselves, the other 68 bytes
// to U+0100 + k in byte order.
struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> from_cp{};  // indexed by code point (< 0x144)
  ByteMap() {
    from_cp.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = keep ? static_cast<uint32_t>(b) : next++;
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

uint32_t byte_to_unicode(uint8_t b) { return byte_map().to_cp[b]; }

int byte_from_unicode(uint32_t cp) { return cp < 324 ? byte_map().from_cp[cp] : -1; }

bool byte_level_decode(std::string_view piece, std::string& out) {
  for (size_t i = 0; i < piece.size();) {
    int32_t cp;
    i += utf8_decode(piece, i, cp);
    const int b = cp < 0 ? -1 : byte_from_unicode(static_cast<uint32_t>(cp));
    if (b < 0) return false;
    out += static_cast<char>(b);
  }
  return true;
}

std::string byte_level_encode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) utf8_append(out, byte_to_unicode(static_cast<uint8_t>(c)));
  return out;
}

int parse_byte_piece(std::string_view p) {
  if (p.size() != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(p[3]), lo = hex(p[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

namespace {

// Applies `fn` (UTF-16 in, UTF-16 out) to every valid UTF-8 stretch of s.
template <class Fn>
std::string map_valid_stretches(std::string_view s, Fn fn, const char* what) {
  std::string out;
  out.reserve(s.size());
  std::vector<UChar> in16, out16;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size()) {
      int32_t cp;
      const size_t n = utf8_decode(s, j, cp);
      if (cp < 0) break;
      j += n;
    }
    if (j > i) {
      UErrorCode err = U_ZERO_ERROR;
      int32_t len16 = 0;
      in16.resize(j - i + 1);
      u_strFromUTF8(in16.data(), static_cast<int32_t>(in16.size()), &len16, s.data() + i,
                    static_cast<int32_t>(j - i), &err);
      OG_CHECK(U_SUCCESS(err), "tokenizer: ", what, " failed to convert text to UTF-16: ", u_errorName(err));
      in16.resize(len16);
      fn(in16, out16);
      int32_t len8 = 0;
      err = U_ZERO_ERROR;
      u_strToUTF8(nullptr, 0, &len8, out16.data(), static_cast<int32_t>(out16.size()), &err);
      const size_t at = out.size();
      out.resize(at + len8);
      err = U_ZERO_ERROR;
      u_strToUTF8(out.data() + at, len8, &len8, out16.data(), static_cast<int32_t>(out16.size()), &err);
      OG_CHECK(U_SUCCESS(err), "tokenizer: ", what, " failed to convert text to UTF-8: ", u_errorName(err));
    }
    if (j < s.size()) out += s[j++];  // an invalid byte is kept as it is
    i = j;
  }
  return out;
}

}  // namespace

std::string normalize_unicode(std::string_view s, NormForm form) {
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* norm = nullptr;
  switch (form) {
    case NormForm::kNfc: norm = unorm2_getNFCInstance(&err); break;
    case NormForm::kNfd: norm = unorm2_getNFDInstance(&err); break;
    case NormForm::kNfkc: norm = unorm2_getNFKCInstance(&err); break;
    case NormForm::kNfkd: norm = unorm2_getNFKDInstance(&err); break;
  }
  OG_CHECK(U_SUCCESS(err) && norm, "tokenizer: ICU normalizer unavailable: ", u_errorName(err));
  return map_valid_stretches(
      s,
      [norm](const std::vector<UChar>& in, std::vector<UChar>& out) {
        out.resize(in.size() * 3 + 16);
        UErrorCode e = U_ZERO_ERROR;
        int32_t n = unorm2_normalize(norm, in.data(), static_cast<int32_t>(in.size()), out.data(),
                                     static_cast<int32_t>(out.size()), &e);
        if (e == U_BUFFER_OVERFLOW_ERROR) {
          out.resize(n);
          e = U_ZERO_ERROR;
          n = unorm2_normalize(norm, in.data(), static_cast<int32_t>(in.size()), out.data(), n, &e);
        }
        OG_CHECK(U_SUCCESS(e), "tokenizer: Unicode normalization failed: ", u_errorName(e));
        out.resize(n);
      },
      "normalization");
}

std::string lowercase_unicode(std::string_view s) {
  return map_valid_stretches(
      s,
      [](const std::vector<UChar>& in, std::vector<UChar>& out) {
        out.resize(in.size() * 2 + 16);
        UErrorCode e = U_ZERO_ERROR;
        int32_t n = u_strToLower(out.data(), static_cast<int32_t>(out.size()), in.data(),
                                 static_cast<int32_t>(in.size()), "", &e);
        if (e == U_BUFFER_OVERFLOW_ERROR) {
          out.resize(n);
          e = U_ZERO_ERROR;
          n = u_strToLower(out.data(), n, in.data(), static_cast<int32_t>(in.size()), "", &e);
        }
        OG_CHECK(U_SUCCESS(e), "tokenizer: lowercasing failed: ", u_errorName(e));
        out.resize(n);
      },
      "lowercase");
}

}  // namespace og::tok
