// Numeric bounds as grammars over digits. Integers: the classic digit-range
// construction (split by length, then by leading digit), exact. Numbers: the
// integer part as for integers, the fraction by a small automaton that follows
// the bound's digits (free / still equal / dead), at most 15 digits in all and
// no exponent, so comparing the decimal text is comparing the doubles.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "grammar/json_schema_internal.h"

namespace og::grammar::detail {

Decimal decimal_of(const Json& v) {
  std::string s;
  if (v.is_number_unsigned()) {
    s = std::to_string(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    s = std::to_string(v.get<int64_t>());
  } else {
    char buf[512];
    auto r = std::to_chars(buf, buf + sizeof buf, v.get<double>(), std::chars_format::fixed);
    s.assign(buf, r.ptr);
  }
  Decimal d;
  size_t p = 0;
  if (!s.empty() && s[0] == '-') {
    d.neg = true;
    p = 1;
  }
  size_t dot = s.find('.', p);
  std::string i = s.substr(p, dot == std::string::npos ? std::string::npos : dot - p);
  std::string f = dot == std::string::npos ? "" : s.substr(dot + 1);
  i.erase(0, std::min(i.find_first_not_of('0'), i.size()));
  while (!f.empty() && f.back() == '0') f.pop_back();
  d.i = i.empty() ? "0" : i;
  d.f = f;
  if (d.i == "0" && d.f.empty()) d.neg = false;
  return d;
}

int decimal_significant_digits(const Decimal& d) {
  std::string all = d.i + d.f;
  size_t a = all.find_first_not_of('0');
  if (a == std::string::npos) return 0;
  size_t b = all.find_last_not_of('0');
  return static_cast<int>(b - a + 1);
}

namespace {

const std::string kDigit = "[0-9]";

Expr lit(const std::string& s) { return gbnf_literal(s); }

Expr digit_range(char a, char b) {
  if (a == b) return lit(std::string(1, a));
  std::string r = "[";
  r += a;
  r += '-';
  r += b;
  r += ']';
  return r;
}

// Digit strings of x's length between x and y (x <= y, same length).
Expr same_length_range(const std::string& x, const std::string& y) {
  if (x.empty()) return Expr("");
  if (x == y) return lit(x);
  if (x[0] == y[0]) return g_seq({lit(x.substr(0, 1)), same_length_range(x.substr(1), y.substr(1))});
  size_t r = x.size() - 1;
  bool lo_full = x.find_first_not_of('0', 1) == std::string::npos;
  bool hi_full = y.find_first_not_of('9', 1) == std::string::npos;
  std::vector<Expr> alts;
  if (!lo_full) alts.push_back(g_seq({lit(x.substr(0, 1)), same_length_range(x.substr(1), std::string(r, '9'))}));
  char m1 = lo_full ? x[0] : char(x[0] + 1), m2 = hi_full ? y[0] : char(y[0] - 1);
  if (m1 <= m2) alts.push_back(g_seq({digit_range(m1, m2), g_rep(kDigit, int(r), int(r))}));
  if (!hi_full) alts.push_back(g_seq({lit(y.substr(0, 1)), same_length_range(std::string(r, '0'), y.substr(1))}));
  return g_alt(alts);
}

uint64_t pow10(int n) {
  uint64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// Canonical naturals (no leading zeros) in [a, b].
Expr natural_range(uint64_t a, uint64_t b) {
  if (a > b) return std::nullopt;
  std::vector<Expr> alts;
  int la = static_cast<int>(std::to_string(a).size()), lb = static_cast<int>(std::to_string(b).size());
  for (int len = la; len <= lb; ++len) {
    uint64_t lo = std::max(a, len == 1 ? uint64_t(0) : pow10(len - 1));
    uint64_t hi = std::min(b, pow10(len) - 1);
    // Several complete lengths in a row (10^(L-1) .. 10^L - 1): one alternative.
    if (len > 1 && lo == pow10(len - 1) && hi == pow10(len) - 1) {
      int last = len;
      while (last < lb && b >= pow10(last + 1) - 1) ++last;
      if (last > len) {
        alts.push_back(g_seq({digit_range('1', '9'), g_rep(kDigit, len - 1, last - 1)}));
        len = last;
        continue;
      }
    }
    if (lo <= hi) alts.push_back(same_length_range(std::to_string(lo), std::to_string(hi)));
  }
  return g_alt(alts);
}

// ---- fractions: digit strings s read as 0.s, against the bounds' remaining digits ----

enum class Kind { Free, Dead, Ge, Gt, Le, Lt };
struct State {
  Kind k = Kind::Free;
  std::string t;  // the bound's remaining fraction digits (no trailing zeros)
  bool operator==(const State& o) const { return k == o.k && t == o.t; }
};

bool accepts_empty(const State& s) {
  switch (s.k) {
    case Kind::Free: return true;
    case Kind::Dead: return false;
    case Kind::Ge: return s.t.empty();
    case Kind::Gt: return false;
    case Kind::Le: return true;
    case Kind::Lt: return !s.t.empty();
  }
  return false;
}

State next(const State& s, char c) {
  if (s.k == Kind::Free || s.k == Kind::Dead) return s;
  if (s.t.empty()) {  // the bound's value is used up: what remains of s is >= 0
    switch (s.k) {
      case Kind::Ge: return {Kind::Free, ""};
      case Kind::Gt: return c > '0' ? State{Kind::Free, ""} : s;
      case Kind::Le: return c == '0' ? s : State{Kind::Dead, ""};
      default: return {Kind::Dead, ""};  // Lt: nothing is below 0
    }
  }
  char t0 = s.t[0];
  if (c == t0) return {s.k, s.t.substr(1)};
  bool above = c > t0;
  bool lower_bound = s.k == Kind::Ge || s.k == Kind::Gt;
  return above == lower_bound ? State{Kind::Free, ""} : State{Kind::Dead, ""};
}

Expr digits_nonempty(const State& lo, const State& hi, int budget);

Expr digits_any(const State& lo, const State& hi, int budget) {
  return g_alt({accepts_empty(lo) && accepts_empty(hi) ? Expr("") : std::nullopt, digits_nonempty(lo, hi, budget)});
}

Expr digits_nonempty(const State& lo, const State& hi, int budget) {
  if (budget <= 0) return std::nullopt;
  if (lo.k == Kind::Free && hi.k == Kind::Free) return g_rep(kDigit, 1, budget);
  // Only zeros may follow (<= a bound whose digits ran out): "0"{1,budget}.
  if (lo.k == Kind::Free && hi.k == Kind::Le && hi.t.empty()) return g_rep(lit("0"), 1, budget);
  std::vector<Expr> alts;
  char c = '0';
  while (c <= '9') {
    State nl = next(lo, c), nh = next(hi, c);
    char e = c;
    while (e < '9' && next(lo, char(e + 1)) == nl && next(hi, char(e + 1)) == nh) ++e;
    if (nl.k != Kind::Dead && nh.k != Kind::Dead)
      alts.push_back(g_seq({digit_range(c, e), digits_any(nl, nh, budget - 1)}));
    c = char(e + 1);
  }
  return g_alt(alts);
}

// "" or "." digits, within the states, at most budget digits.
Expr fraction(const State& lo, const State& hi, int budget) {
  return g_alt({accepts_empty(lo) && accepts_empty(hi) ? Expr("") : std::nullopt,
                g_seq({lit("."), digits_nonempty(lo, hi, budget)})});
}

// Non-negative number texts x (integer part and optional fraction, at most
// kMaxBoundedNumberDigits digits) with lo </<= x </<= hi.
Expr non_negative(const std::optional<DecimalBound>& lo, std::optional<DecimalBound> hi) {
  const int D = kMaxBoundedNumberDigits;
  std::string ilo = lo ? lo->d.i : "0";
  State slo = !lo ? State{} : State{lo->exclusive ? Kind::Gt : Kind::Ge, lo->d.f};
  if (slo.k == Kind::Ge && slo.t.empty()) slo = State{};  // >= an integer: any fraction
  if (hi && static_cast<int>(hi->d.i.size()) > D) hi.reset();  // beyond every text we write
  if (static_cast<int>(ilo.size()) > D) return std::nullopt;
  State shi = !hi ? State{} : State{hi->exclusive ? Kind::Lt : Kind::Le, hi->d.f};
  uint64_t a = std::stoull(ilo), top = pow10(D) - 1;
  int la = static_cast<int>(ilo.size());
  std::vector<Expr> alts;
  if (hi) {
    uint64_t b = std::stoull(hi->d.i);
    if (a > b) return std::nullopt;
    if (a == b) return g_seq({lit(ilo), fraction(slo, shi, D - la)});
    top = b - 1;
  }
  alts.push_back(g_seq({lit(ilo), fraction(slo, State{}, D - la)}));
  if (a + 1 <= top) {
    int l1 = static_cast<int>(std::to_string(a + 1).size()), l2 = static_cast<int>(std::to_string(top).size());
    for (int len = l1; len <= l2; ++len) {
      uint64_t lo_n = std::max(a + 1, len == 1 ? uint64_t(0) : pow10(len - 1)), hi_n = std::min(top, pow10(len) - 1);
      if (lo_n <= hi_n)
        alts.push_back(g_seq({same_length_range(std::to_string(lo_n), std::to_string(hi_n)), fraction({}, {}, D - len)}));
    }
  }
  if (hi) alts.push_back(g_seq({lit(hi->d.i), fraction(State{}, shi, D - static_cast<int>(hi->d.i.size()))}));
  return g_alt(alts);
}

int sign(const Decimal& d) { return d.i == "0" && d.f.empty() ? 0 : d.neg ? -1 : 1; }

DecimalBound magnitude(DecimalBound b) {
  b.d.neg = false;
  return b;
}

}  // namespace

Expr integer_range_grammar(int64_t lo, int64_t hi) {
  if (lo > hi) return std::nullopt;
  std::vector<Expr> alts;
  if (lo < 0) {
    uint64_t mlo = hi < 0 ? uint64_t(-hi) : 1, mhi = uint64_t(-lo);
    alts.push_back(g_seq({lit("-"), natural_range(mlo, mhi)}));
  }
  if (hi >= 0) alts.push_back(natural_range(uint64_t(std::max<int64_t>(lo, 0)), uint64_t(hi)));
  return g_alt(alts);
}

Expr number_range_grammar(const std::optional<DecimalBound>& lo, const std::optional<DecimalBound>& hi) {
  std::vector<Expr> alts;
  if (!lo || sign(lo->d) < 0) {  // negative texts: "-" m with m = -x > 0
    std::optional<DecimalBound> mlo = DecimalBound{Decimal{}, true};
    if (hi && sign(hi->d) < 0) mlo = magnitude(*hi);
    std::optional<DecimalBound> mhi;
    if (lo) mhi = magnitude(*lo);
    alts.push_back(g_seq({lit("-"), non_negative(mlo, mhi)}));
  }
  if (!hi || sign(hi->d) > 0 || (sign(hi->d) == 0 && !hi->exclusive)) {
    std::optional<DecimalBound> plo = DecimalBound{Decimal{}, false};
    if (lo && sign(lo->d) >= 0) plo = lo;
    alts.push_back(non_negative(plo, hi));
  }
  return g_alt(alts);
}

}  // namespace og::grammar::detail
