// Python's operators over engine values: arithmetic (int64 with overflow
// errors, Python's floor division and modulo), concatenation, repetition,
// `in`, iteration, and printf-style "%" formatting.
#include <cmath>
#include <cstdio>

#include "template/interp.h"
#include "template/text.h"

namespace og::jinja {

void fail_undefined(const Value& v) {
  fail(v.hint().empty() ? std::string("value is undefined") : v.hint());
}

int64_t to_int_arg(const Value& v, const char* what) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_undefined()) fail_undefined(v);
  fail(what, ": '", v.type_name(), "' object cannot be interpreted as an integer");
}

std::string html_escape(const std::string& s) {
  std::string out;
  charge_work(static_cast<int64_t>(s.size()));
  size_t checked = 0;
  for (char c : s) {
    if (out.size() > checked + 4096) {  // entities grow the text up to 5 times
      check_bytes(out.size());
      checked = out.size();
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("unsupported operand type(s) for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'");
}

Value int_op(const std::string& op, int64_t x, int64_t y) {
  int64_t r = 0;
  bool overflow = false;
  if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
  else if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
  else if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
  else if (op == "/") {
    if (y == 0) fail("division by zero");
    return Value(static_cast<double>(x) / static_cast<double>(y));
  } else if (op == "//" || op == "%") {
    if (y == 0) fail("integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) fail("integer overflow");
    int64_t q = x / y, m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      q -= 1;
      m += y;
    }
    return Value(op == "//" ? q : m);
  } else if (op == "**") {
    if (y < 0) return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
    r = 1;
    int64_t base = x;
    while (y > 0 && !overflow) {
      if (y & 1) overflow = __builtin_mul_overflow(r, base, &r);
      y >>= 1;
      if (y > 0 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
    }
  }
  if (overflow) fail("integer overflow in '", op, "'");
  return Value(r);
}

Value float_op(const std::string& op, double x, double y) {
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "/") {
    if (y == 0) fail("float division by zero");
    return Value(x / y);
  }
  if (op == "//" || op == "%") {
    if (y == 0) fail("float modulo");
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    if (op == "%") return Value(m);
    return Value(std::floor(x / y));
  }
  return Value(std::pow(x, y));
}

// a * n, saturating: n may be huge and the product must not wrap.
size_t times(size_t a, int64_t n) {
  const auto u = static_cast<size_t>(n);
  return a != 0 && u > SIZE_MAX / a ? SIZE_MAX : a * u;
}

Value repeat(const Value& seq, int64_t n, const Interp& in) {
  if (n < 0) n = 0;
  // An empty operand repeats to itself: no loop of n rounds ('' * 10**18).
  if (seq.is_string() ? seq.str().empty() : seq.items().empty()) n = 0;
  if (seq.is_string()) {
    in.check_size(times(seq.str().size(), n));
    TaintedText out;
    for (int64_t i = 0; i < n; ++i) out.add(seq);
    return out.take();
  }
  check_items(times(seq.items().size(), n));
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
  return seq.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b, const Interp& in) {
  // What these operations build from tainted operands is tainted whole,
  // unless they carry taint byte by byte as ~, + and % of strings and
  // repetition do (taint.h).
  TaintNewStrings taint(std::max(a.taint_kind(), b.taint_kind()));
  if (op == "~") {
    TaintedText out;
    out.add(a);
    out.add(b);
    in.check_size(out.size());
    return out.take();
  }
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float() || (op == "/")) {
      if (op == "/" && !a.is_float() && !b.is_float()) return int_op(op, a.as_int(), b.as_int());
      return float_op(op, a.as_float(), b.as_float());
    }
    return int_op(op, a.as_int(), b.as_int());
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      in.check_size(a.str().size() + b.str().size());
      if (a.is_markup() || b.is_markup()) {
        // The plain operand is escaped piece by piece, each keeping its taint.
        TaintedText out;
        for (const Value* x : {&a, &b}) {
          if (x->is_markup()) {
            out.add(*x);
            continue;
          }
          size_t at = 0;
          const std::string_view str = x->str();
          for (const TaintSpan& t : x->taint() ? *x->taint() : TaintSpans{}) {
            out.append(html_escape(std::string(str.substr(at, t.begin - at))));
            out.append(html_escape(std::string(str.substr(t.begin, t.end - t.begin))), t.kind);
            at = t.end;
          }
          out.append(html_escape(std::string(str.substr(at))));
        }
        return out.take().as_markup();
      }
      TaintedText out;
      out.add(a);
      out.add(b);
      return out.take();
    }
    if (a.is_sequence() && b.kind() == a.kind()) {
      check_items(a.items().size() + b.items().size());
      std::vector<Value> out = a.items();
      out.insert(out.end(), b.items().begin(), b.items().end());
      return a.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_sequence()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), in);
    if ((b.is_string() || b.is_sequence()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), in);
  }
  if (op == "%" && a.is_string()) {
    Value s = percent_format(a, b);
    in.check_size(s.str().size());
    return s;
  }
  unsupported(op, a, b);
}

namespace {

size_t utf8_size(char32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

}  // namespace

std::vector<size_t> char_offsets(std::string_view s, const std::u32string& u) {
  // A string that may not be valid UTF-8 (it decodes to U+FFFD) keeps no
  // per-byte map: what is picked from it is tainted whole.
  if (u.find(0xFFFD) != std::u32string::npos) return {};
  charge_work(static_cast<int64_t>(u.size()));
  std::vector<size_t> at(u.size() + 1, 0);
  for (size_t i = 0; i < u.size(); ++i) at[i + 1] = at[i] + utf8_size(u[i]);
  if (at.back() != s.size()) return {};
  return at;
}

Value pick_chars(const Value& v, const std::u32string& u, const std::vector<size_t>& idx) {
  std::u32string picked;
  picked.reserve(idx.size());
  for (size_t i : idx) picked.push_back(u[i]);
  if (!v.taint()) return Value(utf8_encode(picked));
  const std::vector<size_t> at = char_offsets(v.str(), u);
  if (at.empty()) return Value(utf8_encode(picked)).tainted_whole(v.taint_kind());
  TaintedText t;
  for (size_t i : idx) t.add(v, at[i], at[i + 1]);
  return t.take();
}

bool contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::String:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not ", item.type_name());
      return text_find(c.str(), item.str()) != std::string::npos;
    case Value::Kind::List:
    case Value::Kind::Tuple:
      for (const Value& v : c.items())
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::Dict: return c.dict_ref().find(item) != nullptr;
    case Value::Kind::Undefined: return false;
    default: fail("argument of type '", c.type_name(), "' is not iterable");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List:
    case Value::Kind::Tuple: charge_work(static_cast<int64_t>(v.items().size()) * kElementWork); return v.items();
    case Value::Kind::Dict: {
      charge_work(static_cast<int64_t>(v.dict_ref().items.size()) * kElementWork);
      std::vector<Value> keys;
      for (const auto& kv : v.dict_ref().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::String: {
      std::u32string u = utf8_decode(v.str());
      check_items(u.size());  // one value a character: check before building them
      charge_work(static_cast<int64_t>(u.size()) * kElementWork);
      std::vector<Value> chars;
      chars.reserve(u.size());
      if (!v.taint()) {
        for (char32_t c : u) chars.emplace_back(utf8_encode(std::u32string(1, c)));
        return chars;
      }
      const std::vector<size_t> at = char_offsets(v.str(), u);  // once, not per character
      for (size_t i = 0; i < u.size(); ++i) {
        if (at.empty()) {
          chars.push_back(Value(utf8_encode(std::u32string(1, u[i]))).tainted_whole(v.taint_kind()));
          continue;
        }
        TaintedText t;
        t.add(v, at[i], at[i + 1]);
        chars.push_back(t.take());
      }
      return chars;
    }
    default: fail("'", v.type_name(), "' object is not iterable");
  }
}

namespace {

std::string format_one(char conv, const std::string& flags, int width, int prec, const Value& v) {
  std::string body;
  switch (conv) {
    case 's': body = v.to_str(); break;
    case 'r': body = v.repr(); break;
    case 'd':
    case 'i':
    case 'x':
    case 'X':
    case 'o': {
      if (!v.is_number()) fail("%", conv, " format: a real number is required, not ", v.type_name());
      int64_t n = v.is_float() ? static_cast<int64_t>(v.as_float()) : v.as_int();
      char buf[64];
      const char* f = conv == 'x' ? "%llx" : conv == 'X' ? "%llX" : conv == 'o' ? "%llo" : "%lld";
      std::snprintf(buf, sizeof buf, f, static_cast<long long>(n < 0 && conv != 'd' && conv != 'i' ? -n : n));
      body = (n < 0 && conv != 'd' && conv != 'i' ? "-" : "") + std::string(buf);
      if (flags.find('+') != std::string::npos && n >= 0) body = "+" + body;
      break;
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G': {
      if (!v.is_number()) fail("must be real number, not ", v.type_name());
      char buf[512];
      std::string f = "%" + flags + "." + std::to_string(prec < 0 ? 6 : std::min(prec, 100)) + conv;
      std::snprintf(buf, sizeof buf, f.c_str(), v.as_float());
      body = buf;
      break;
    }
    default: fail("unsupported format character '", conv, "'");
  }
  if (conv == 's' || conv == 'r') {
    if (prec >= 0 && static_cast<size_t>(prec) < body.size()) body = body.substr(0, static_cast<size_t>(prec));
  }
  int len = static_cast<int>(utf8_length(body));
  if (width > len) {
    std::string pad(static_cast<size_t>(width - len), flags.find('0') != std::string::npos && conv != 's' ? '0' : ' ');
    body = flags.find('-') != std::string::npos ? body + pad : pad + body;
  }
  return body;
}

}  // namespace

Value percent_format(const Value& format, const Value& args) {
  const std::string& fmt = format.str();
  std::vector<Value> list = args.kind() == Value::Kind::Tuple ? args.items() : std::vector<Value>{args};
  size_t next = 0;
  TaintedText out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.append(std::string_view(&fmt[i], 1));
      continue;
    }
    if (++i >= fmt.size()) fail("incomplete format");
    if (fmt[i] == '%') {
      out.append("%");
      continue;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags.push_back(fmt[i++]);
    int width = 0, prec = -1;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])) && width < 100000) width = width * 10 + (fmt[i++] - '0');
    if (i < fmt.size() && fmt[i] == '.') {
      prec = 0;
      ++i;
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i])) && prec < 100000) prec = prec * 10 + (fmt[i++] - '0');
    }
    if (i >= fmt.size()) fail("incomplete format");
    if (next >= list.size()) fail("not enough arguments for format string");
    const Value& arg = list[next++];
    // A field's text is tainted whole as its argument (padding included).
    out.append(format_one(fmt[i], flags, std::min(width, 100000), prec, arg), arg.taint_kind());
    check_bytes(out.size());  // many fields may each print a big value
  }
  if (next < list.size() && args.kind() == Value::Kind::Tuple) fail("not all arguments converted during string formatting");
  // A format string with request text in it: the whole result is tainted
  // (its literal bytes are not mapped one by one).
  return out.take().tainted_whole(format.taint_kind());
}

}  // namespace og::jinja
