// The builtin filters on strings and numbers, with jinja2 3.1's arguments and
// defaults (tojson is transformers' json.dumps variant, not jinja2's HTML-safe
// one), and the dispatch over every filter.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "template/filters.h"
#include "template/json_dump.h"
#include "template/text.h"

namespace og::jinja {
namespace {

// jinja2's title filter: each piece after "-", whitespace or an opening bracket starts upper-case.
std::string jinja_title(const std::string& s) {
  std::u32string u = utf8_decode(s);
  std::string out;
  bool start = true;
  for (char32_t c : u) {
    bool delim = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c);
    if (delim) {
      utf8_append(out, c);
      start = true;
      continue;
    }
    utf8_append(out, start ? py_upper(c) : py_lower(c));
    start = false;
  }
  return out;
}

std::string do_indent(std::string s, const Value& width, bool first, bool blank) {
  std::string ind = width.is_string() ? width.str() : std::string(static_cast<size_t>(std::clamp<int64_t>(to_int_arg(width, "indent"), 0, 10000)), ' ');
  s += "\n";
  // Line by line, checked as it grows: a long indent times many lines is big.
  std::string rv = first ? ind : "";
  size_t i = 0;
  for_each_line(s, [&](std::string line) {
    if (i++ > 0) {
      rv += "\n";
      if (blank || !line.empty()) rv += ind;
    }
    rv += line;
    check_bytes(rv.size());
  });
  return rv;
}

Value to_int(const Value& v, const Value& dflt, int64_t base) {
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    if (!std::isfinite(v.as_float()) || std::fabs(v.as_float()) > 9.2e18) return dflt;
    return Value(static_cast<int64_t>(v.as_float()));
  }
  if (v.is_string()) {
    std::string s;
    for (char c : v.str())
      if (c != '_') s.push_back(c);
    const char* b = s.c_str();
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(b, &end, static_cast<int>(base));
    while (*end && py_isspace(static_cast<unsigned char>(*end))) ++end;
    if (end != b && !*end && errno == 0) return Value(static_cast<int64_t>(n));
    double d = std::strtod(b, &end);
    while (*end && py_isspace(static_cast<unsigned char>(*end))) ++end;
    if (end != b && !*end && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(static_cast<int64_t>(d));
  }
  return dflt;
}

Value to_float(const Value& v, const Value& dflt) {
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string()) {
    const char* b = v.str().c_str();
    char* end = nullptr;
    double d = std::strtod(b, &end);
    while (*end && py_isspace(static_cast<unsigned char>(*end))) ++end;
    if (end != b && !*end) return Value(d);
  }
  return dflt;
}

Value py_round(const Value& v, int64_t precision, const std::string& method) {
  if (!v.is_number()) fail("round: '", v.type_name(), "' is not a number");
  double x = v.as_float();
  double p = std::pow(10.0, static_cast<double>(precision));
  if (method == "ceil") return Value(std::ceil(x * p) / p);
  if (method == "floor") return Value(std::floor(x * p) / p);
  if (method != "common") fail("method must be common, ceil or floor");
  if (!v.is_float() && precision >= 0) return Value(v.as_int());  // Python's round(int, n) is that int
  if (!std::isfinite(x)) return Value(x);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), x);
  double r = std::strtod(buf, nullptr);
  if (precision < 0) r = std::nearbyint(x * p) / p;
  return Value(r);
}

std::string center(const std::string& s, int64_t width) {
  int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return s;
  width = std::min<int64_t>(width, 1 << 20);
  int64_t marg = width - len;
  int64_t left = marg / 2 + (marg & width & 1);
  return std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' ');
}

int64_t word_count(const std::string& s) {
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8_decode(s)) {
    bool w = py_isalnum(c) || c == '_' || (c >= 0x80 && !py_isspace(c) && py_isprintable(c) && c != 0xB7);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return n;
}

Value f_tojson(Interp&, const Value& v, FilterArgs& a) {
  JsonFormat f;
  Value indent = a.get(1, "indent");
  Value separators = a.get(2, "separators");
  f.ensure_ascii = a.get(0, "ensure_ascii", Value(false)).truthy();
  f.sort_keys = a.get(3, "sort_keys", Value(false)).truthy();
  if (indent.is_string()) f.indent = indent.str();
  else if (indent.is_int()) f.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent.as_int(), 0, 1000)), ' ');
  else if (!indent.is_none()) fail("tojson: indent must be an int or a string");
  if (f.indent) f.item_sep = ",";
  if (separators.is_sequence()) {
    if (separators.items().size() != 2 || !separators.items()[0].is_string() || !separators.items()[1].is_string())
      fail("tojson: separators must be a pair of strings");
    f.item_sep = separators.items()[0].str();
    f.key_sep = separators.items()[1].str();
  }
  return Value(to_json(v, f));
}

// markupsafe keeps a safe string safe through these filters.
Value keep_markup(const Value& in, Value out) { return in.is_markup() ? out.as_markup() : out; }

// ASCII text keeps its bytes' places through a case change, and so its taint;
// other text is tainted whole by the filter (taint.h).
Value case_changed(const Value& v, std::string changed) {
  const Value s = as_text(v);
  if (s.taint() && is_ascii(s.str())) return Value::text(std::move(changed), *s.taint());
  return Value(std::move(changed));
}

Value f_safe(Interp&, const Value& v, FilterArgs&) { return v.is_markup() ? v : as_text(v).as_markup(); }
Value f_string(Interp&, const Value& v, FilterArgs&) { return v.is_markup() ? v : as_text(v); }
Value f_escape(Interp&, const Value& v, FilterArgs&) { return v.is_markup() ? v : Value::markup(html_escape(v.to_str())); }
Value f_forceescape(Interp&, const Value& v, FilterArgs&) { return Value::markup(html_escape(v.to_str())); }
Value f_lower(Interp&, const Value& v, FilterArgs&) { return keep_markup(v, case_changed(v, str_lower(v.to_str()))); }
Value f_upper(Interp&, const Value& v, FilterArgs&) { return keep_markup(v, case_changed(v, str_upper(v.to_str()))); }
Value f_capitalize(Interp&, const Value& v, FilterArgs&) { return keep_markup(v, Value(str_capitalize(v.to_str()))); }
Value f_title(Interp&, const Value& v, FilterArgs&) { return keep_markup(v, Value(jinja_title(v.to_str()))); }
Value f_wordcount(Interp&, const Value& v, FilterArgs&) { return Value(word_count(v.to_str())); }
Value f_pprint(Interp&, const Value& v, FilterArgs&) { return Value(v.repr()); }

Value f_trim(Interp&, const Value& v, FilterArgs& a) {
  CallArgs sa;
  sa.pos.push_back(a.get(0, "chars"));
  return keep_markup(v, get_attr(as_text(v), "strip").fn().fn(sa));
}

Value f_replace(Interp& in, const Value& v, FilterArgs& a) {
  CallArgs ra;
  ra.pos = {a.get(0, "old"), a.get(1, "new")};
  if (a.has(2, "count")) ra.pos.push_back(a.get(2, "count"));
  Value r = get_attr(as_text(v), "replace").fn().fn(ra);
  in.check_size(r.str().size());
  return r;
}

Value f_indent(Interp& in, const Value& v, FilterArgs& a) {
  std::string r = do_indent(v.to_str(), a.get(0, "width", Value(int64_t{4})), a.flag(1, "first"), a.flag(2, "blank"));
  in.check_size(r.size());
  return Value(std::move(r));
}

Value f_center(Interp&, const Value& v, FilterArgs& a) {
  return Value(center(v.to_str(), to_int_arg(a.get(0, "width", Value(int64_t{80})), "center")));
}

Value f_format(Interp& in, const Value& v, FilterArgs& a) {
  Value r;
  if (!a.raw().kw.empty()) {
    Dict d;
    for (auto& [k, x] : a.raw().kw) d.set(Value(k), x);
    r = percent_format(as_text(v), Value::dict(std::move(d)));
  } else {
    r = percent_format(as_text(v), Value::tuple(a.raw().pos));
  }
  in.check_size(r.str().size());
  return r;
}

Value f_int(Interp&, const Value& v, FilterArgs& a) {
  return to_int(v, a.get(0, "default", Value(int64_t{0})), to_int_arg(a.get(1, "base", Value(int64_t{10})), "int"));
}

Value f_float(Interp&, const Value& v, FilterArgs& a) { return to_float(v, a.get(0, "default", Value(0.0))); }

Value f_abs(Interp&, const Value& v, FilterArgs&) {
  if (!v.is_number()) fail("bad operand type for abs(): '", v.type_name(), "'");
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.as_int() == INT64_MIN) fail("integer overflow");
  return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
}

Value f_round(Interp&, const Value& v, FilterArgs& a) {
  return py_round(v, to_int_arg(a.get(0, "precision", Value(int64_t{0})), "round"),
                  a.get(1, "method", Value("common")).to_str());
}

Value f_default(Interp&, const Value& v, FilterArgs& a) {
  if (v.is_undefined() || (a.flag(1, "boolean") && !v.truthy())) return a.get(0, "default_value", Value(""));
  return v;
}

Value f_attr(Interp&, const Value& v, FilterArgs& a) { return get_attr(v, a.get(0, "name").to_str()); }

constexpr FilterEntry kStringFilters[] = {
    {"tojson", f_tojson},   {"safe", f_safe},         {"string", f_string},   {"e", f_escape},
    {"escape", f_escape},   {"forceescape", f_forceescape}, {"lower", f_lower}, {"upper", f_upper},
    {"capitalize", f_capitalize}, {"title", f_title}, {"wordcount", f_wordcount}, {"pprint", f_pprint},
    {"trim", f_trim},       {"replace", f_replace},   {"indent", f_indent},   {"center", f_center},
    {"format", f_format},   {"int", f_int},           {"float", f_float},     {"abs", f_abs},
    {"round", f_round},     {"default", f_default},   {"d", f_default},       {"attr", f_attr},
    {nullptr, nullptr}};

FilterFn find_filter(const std::string& name) {
  for (const FilterEntry* table : {kStringFilters, sequence_filters()})
    for (const FilterEntry* e = table; e->name; ++e)
      if (name == e->name) return e->fn;
  return nullptr;
}

}  // namespace

bool has_filter(const std::string& name) { return find_filter(name) != nullptr; }

Value Interp::filter(const std::string& name, const Value& v, CallArgs& raw) {
  FilterFn fn = find_filter(name);
  if (!fn) fail("No filter named '", name, "'.");
  FilterArgs a(raw);
  TaintNewStrings taint(std::max(v.taint_kind(), taint_of(raw)));
  return fn(*this, v, a);
}

}  // namespace og::jinja
