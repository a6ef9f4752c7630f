// Unicode and Python formatting helpers (see text.h). Case mapping covers the
// scripts chat templates meet in practice (Latin-1, Latin Extended-A, Greek,
// Cyrillic); other characters have no case here.
#include "template/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "template/meter.h"

namespace og::jinja {

std::u32string utf8_decode(std::string_view s) {
  charge_work(static_cast<int64_t>(s.size()));
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    int n = (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + n >= s.size()) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    char32_t cp = c & (0x3F >> n);
    bool ok = true;
    for (int k = 1; k <= n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) { ok = false; break; }
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) { out.push_back(0xFFFD); ++i; continue; }
    out.push_back(cp);
    i += n + 1;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string utf8_encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  charge_work(static_cast<int64_t>(s.size()));
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

size_t utf8_length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  return utf8_decode(s).size();
}

bool py_isspace(char32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> lines;
  for_each_line(s, [&](std::string line) { lines.push_back(std::move(line)); });
  return lines;
}

void for_each_line(std::string_view s, const std::function<void(std::string)>& fn) {
  std::u32string u = utf8_decode(s);
  std::u32string cur;
  for (size_t i = 0; i < u.size(); ++i) {
    char32_t c = u[i];
    bool brk = c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
               c == 0x2028 || c == 0x2029;
    if (!brk) {
      cur.push_back(c);
      continue;
    }
    if (c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ++i;
    fn(utf8_encode(cur));
    cur.clear();
  }
  if (!cur.empty()) fn(utf8_encode(cur));
}

namespace {

// Search work is charged in chunks: often enough for the deadline, rarely
// enough to cost nothing.
constexpr int64_t kSearchFlush = 1 << 16;

}  // namespace

size_t text_find(std::string_view h, std::string_view n, size_t from) {
  if (from > h.size()) return std::string_view::npos;
  if (n.empty()) return from;
  if (h.size() < n.size()) return std::string_view::npos;
  const size_t last = h.size() - n.size();
  int64_t work = 0;
  for (size_t i = from; i <= last;) {
    const void* p = std::memchr(h.data() + i, n[0], last - i + 1);
    if (!p) {
      work += static_cast<int64_t>(last - i + 1);
      break;
    }
    const size_t at = static_cast<size_t>(static_cast<const char*>(p) - h.data());
    size_t k = 1;
    while (k < n.size() && h[at + k] == n[k]) ++k;
    work += static_cast<int64_t>(at - i + k);
    if (k == n.size()) {
      charge_work(work);
      return at;
    }
    if (work > kSearchFlush) {
      charge_work(work);
      work = 0;
    }
    i = at + 1;
  }
  charge_work(work);
  return std::string_view::npos;
}

size_t text_rfind(std::string_view h, std::string_view n, size_t last_start) {
  if (h.size() < n.size()) return std::string_view::npos;
  size_t at = std::min(last_start, h.size() - n.size());
  if (n.empty()) return at;
  int64_t work = 0;
  for (;; --at) {
    size_t k = 0;
    while (k < n.size() && h[at + k] == n[k]) ++k;
    work += static_cast<int64_t>(k + 1);
    if (k == n.size()) break;
    if (work > kSearchFlush) {
      charge_work(work);
      work = 0;
    }
    if (at == 0) {
      charge_work(work);
      return std::string_view::npos;
    }
  }
  charge_work(work);
  return at;
}

bool py_isprintable(char32_t c) {
  if (c == ' ') return true;
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (py_isspace(c)) return false;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E) return false;
  if ((c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x206F)) return false;
  if (c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB) || (c >= 0xD800 && c <= 0xF8FF)) return false;
  if (c >= 0xE0000 && c <= 0xE007F) return false;
  if (c >= 0xF0000 || c == 0xFFFE || c == 0xFFFF) return false;
  return true;
}

namespace {

// Pairs of ranges where lower = upper + offset.
struct CaseRange {
  char32_t upper_first, upper_last;
  int offset;
  bool alternate;  // pairs alternate upper, lower (Latin Extended-A)
};
constexpr CaseRange kCase[] = {
    {'A', 'Z', 32, false},       {0xC0, 0xD6, 32, false},     {0xD8, 0xDE, 32, false},
    {0x100, 0x12F, 1, true},     {0x132, 0x137, 1, true},     {0x139, 0x148, 1, true},
    {0x14A, 0x177, 1, true},     {0x391, 0x3A1, 32, false},   {0x3A3, 0x3AB, 32, false},
    {0x410, 0x42F, 32, false},   {0x400, 0x40F, 80, false},   {0x460, 0x481, 1, true},
    {0x48A, 0x4BF, 1, true},
};

}  // namespace

char32_t py_lower(char32_t c) {
  for (const CaseRange& r : kCase) {
    if (c < r.upper_first || c > r.upper_last) continue;
    if (r.alternate) return ((c - r.upper_first) % 2 == 0) ? c + 1 : c;
    return c + r.offset;
  }
  return c;
}

char32_t py_upper(char32_t c) {
  for (const CaseRange& r : kCase) {
    if (r.alternate) {
      if (c > r.upper_first && c <= r.upper_last + 1 && (c - r.upper_first) % 2 == 1) return c - 1;
      continue;
    }
    if (c >= r.upper_first + r.offset && c <= r.upper_last + r.offset) return c - r.offset;
  }
  if (c == 0x3C2) return 0x3A3;  // final sigma
  if (c == 0xFF) return 0x178;
  return c;
}

bool py_isupper(char32_t c) { return py_lower(c) != c; }
bool py_islower(char32_t c) { return py_upper(c) != c || c == 0xDF; }

bool py_isalnum(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return py_isupper(c) || py_islower(c) || (c >= 0x4E00 && c <= 0x9FFF);
}

std::string str_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  if (is_ascii(s)) {  // (is_ascii charges the bytes)
    for (char c : s) out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c);
    return out;
  }
  for (char32_t c : utf8_decode(s)) {
    if (c == 0xDF) { out += "SS"; continue; }
    utf8_append(out, py_upper(c));
  }
  return out;
}

std::string str_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  if (is_ascii(s)) {
    for (char c : s) out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    return out;
  }
  for (char32_t c : utf8_decode(s)) utf8_append(out, py_lower(c));
  return out;
}

// Python's str.title(): a cased character after an uncased one is upper-cased,
// every other cased character lower-cased.
std::string str_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : utf8_decode(s)) {
    bool cased = py_isupper(c) || py_islower(c);
    utf8_append(out, cased ? (prev_cased ? py_lower(c) : py_upper(c)) : c);
    prev_cased = cased;
  }
  return out;
}

std::string str_capitalize(std::string_view s) {
  std::u32string u = utf8_decode(s);
  std::string out;
  for (size_t i = 0; i < u.size(); ++i) utf8_append(out, i == 0 ? py_upper(u[i]) : py_lower(u[i]));
  return out;
}

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci looks like "-1.2345e+17": split into sign, digits and exponent.
  size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  int exp = std::atoi(sci.c_str() + e + 1);
  bool neg = !mant.empty() && mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits.push_back(c);
  std::string out = neg ? "-" : "";
  if (exp >= -5 + 1 && exp < 16) {
    // Fixed notation: exp in [-4, 16).
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else {
      size_t int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out += digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + eb;
}

std::string py_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  size_t checked = 0;
  for (char32_t c : utf8_decode(s)) {
    if (out.size() > checked + 4096) {  // escapes grow the text up to 10 times
      check_bytes(out.size());
      checked = out.size();
    }
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!py_isprintable(c)) {
      char buf[16];
      if (c < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    } else {
      utf8_append(out, c);
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace og::jinja
