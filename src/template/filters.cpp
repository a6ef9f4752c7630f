// The builtin filters templates use, with jinja2 3.1's arguments and defaults
// (tojson is transformers' json.dumps variant, not jinja2's HTML-safe one).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "template/interp.h"
#include "template/json_dump.h"
#include "template/text.h"

namespace og::jinja {
namespace {

// Binds a filter's arguments by position or by name.
class Args {
 public:
  explicit Args(CallArgs& a, const char* filter) : a_(a), filter_(filter) {}
  Value get(size_t pos, const char* name, Value dflt = Value::none()) const {
    for (const auto& [k, v] : a_.kw)
      if (k == name) return v;
    return pos < a_.pos.size() ? a_.pos[pos] : dflt;
  }
  bool has(size_t pos, const char* name) const {
    for (const auto& kv : a_.kw)
      if (kv.first == name) return true;
    return pos < a_.pos.size();
  }
  CallArgs& raw() { return a_; }

 private:
  CallArgs& a_;
  const char* filter_;
};

Value lower_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(str_lower(v.str()));
  return v;
}

// jinja2's attribute getter: "a.b.0" walks dict keys / attributes / indexes.
Value attr_path(const Value& obj, const Value& attribute) {
  if (!attribute.is_string()) return get_item(obj, attribute);
  Value cur = obj;
  const std::string& path = attribute.str();
  size_t pos = 0;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (cur.is_undefined()) fail_undefined(cur);
    cur = digits ? get_item(cur, Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))))
                 : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

std::vector<Value> sorted(std::vector<Value> items, bool reverse, bool case_sensitive, const Value& attribute) {
  auto key = [&](const Value& v) {
    return lower_key(attribute.is_none() ? v : attr_path(v, attribute), case_sensitive);
  };
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& v : items) keyed.emplace_back(key(v), v);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? less(y.first, x.first) : less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return out;
}

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
  std::vector<std::string> lines = py_splitlines(s);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    if (lines.size() > 1) {
      rv += "\n";
      for (size_t i = 1; i < lines.size(); ++i) rv += (i > 1 ? "\n" : "") + (lines[i].empty() ? "" : ind) + lines[i];
    }
  }
  return first ? ind + rv : rv;
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

Value min_max(const Value& v, Args& a, bool want_max) {
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined(want_max ? "No aggregated item, sequence was empty." : "No aggregated item, sequence was empty.");
  bool cs = a.get(0, "case_sensitive", Value(false)).truthy();
  Value attribute = a.get(1, "attribute");
  size_t best = 0;
  auto key = [&](const Value& x) { return lower_key(attribute.is_none() ? x : attr_path(x, attribute), cs); };
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (want_max ? less(best_key, k) : less(k, best_key)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Value tojson(const Value& v, Args& a) {
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

}  // namespace

Value select_items(Interp& in, const Value& v, CallArgs& args, bool by_attr, bool keep);

Value Interp::filter(const std::string& name, const Value& v, CallArgs& raw) {
  Args a(raw, name.c_str());
  auto need_str = [&]() -> std::string { return v.to_str(); };
  if (name == "tojson") return tojson(v, a);
  if (name == "safe") return v.is_markup() ? v : Value::markup(v.to_str());
  if (name == "string") return v.is_markup() ? v : Value(v.to_str());
  if (name == "e" || name == "escape" || name == "forceescape")
    return v.is_markup() && name != "forceescape" ? v : Value::markup(html_escape(need_str()));
  auto keep_markup = [&](Value r) { return v.is_markup() ? Value::markup(r.str()) : r; };
  if (name == "trim") {
    CallArgs sa;
    sa.pos.push_back(a.get(0, "chars"));
    return keep_markup(get_attr(Value(need_str()), "strip").fn().fn(sa));
  }
  if (name == "length" || name == "count") {
    if (v.is_string()) return Value(static_cast<int64_t>(utf8_length(v.str())));
    if (v.is_sequence()) return Value(static_cast<int64_t>(v.items().size()));
    if (v.is_dict()) return Value(static_cast<int64_t>(v.dict_ref().items.size()));
    if (v.is_undefined()) return Value(int64_t{0});
    fail("object of type '", v.type_name(), "' has no len()");
  }
  if (name == "first" || name == "last") {
    std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined(cat("No ", name, " item, sequence was empty."));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "default" || name == "d") {
    bool boolean = a.get(1, "boolean", Value(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return a.get(0, "default_value", Value(""));
    return v;
  }
  if (name == "join") {
    Value d = a.get(0, "d", Value(""));
    Value attribute = a.get(1, "attribute");
    std::string sep = d.to_str(), out;
    std::vector<Value> items = iterate(v);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += sep;
      out += (attribute.is_none() ? items[i] : attr_path(items[i], attribute)).to_str();
      check_size(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "map") {
    std::vector<Value> out;
    if (!v.truthy()) return Value::list();
    if (a.has(99, "attribute")) {
      Value attribute = a.get(99, "attribute");
      Value dflt = a.get(99, "default", Value());
      for (const Value& x : iterate(v)) {
        Value r = attr_path(x, attribute);
        out.push_back(r.is_undefined() && a.has(99, "default") ? dflt : r);
      }
    } else {
      if (raw.pos.empty() || !raw.pos[0].is_string()) fail("map requires a filter name or attribute=");
      std::string fname = raw.pos[0].str();
      CallArgs rest;
      rest.pos.assign(raw.pos.begin() + 1, raw.pos.end());
      rest.kw = raw.kw;
      for (const Value& x : iterate(v)) {
        CallArgs copy = rest;
        out.push_back(filter(fname, x, copy));
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "select" || name == "reject") return select_items(*this, v, raw, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select_items(*this, v, raw, true, name == "selectattr");
  if (name == "items") {
    if (v.is_undefined()) return Value::list();
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    CallArgs none;
    return get_attr(v, "items").fn().fn(none);
  }
  if (name == "list") return Value::list(iterate(v));
  if (name == "int") return to_int(v, a.get(0, "default", Value(int64_t{0})), to_int_arg(a.get(1, "base", Value(int64_t{10})), "int"));
  if (name == "float") return to_float(v, a.get(0, "default", Value(0.0)));
  if (name == "abs") {
    if (!v.is_number()) fail("bad operand type for abs(): '", v.type_name(), "'");
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.as_int() == INT64_MIN) fail("integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (name == "round")
    return py_round(v, to_int_arg(a.get(0, "precision", Value(int64_t{0})), "round"), a.get(1, "method", Value("common")).to_str());
  if (name == "lower") return keep_markup(Value(str_lower(need_str())));
  if (name == "upper") return keep_markup(Value(str_upper(need_str())));
  if (name == "capitalize") return keep_markup(Value(str_capitalize(need_str())));
  if (name == "title") return keep_markup(Value(jinja_title(need_str())));
  if (name == "replace") {
    CallArgs ra;
    ra.pos = {a.get(0, "old"), a.get(1, "new")};
    if (a.has(2, "count")) ra.pos.push_back(a.get(2, "count"));
    Value r = get_attr(Value(need_str()), "replace").fn().fn(ra);
    check_size(r.str().size());
    return r;
  }
  if (name == "indent") {
    std::string r = do_indent(need_str(), a.get(0, "width", Value(int64_t{4})), a.get(1, "first", Value(false)).truthy(),
                              a.get(2, "blank", Value(false)).truthy());
    check_size(r.size());
    return Value(std::move(r));
  }
  if (name == "unique") {
    bool cs = a.get(0, "case_sensitive", Value(false)).truthy();
    Value attribute = a.get(1, "attribute");
    std::vector<Value> out, seen;
    for (const Value& x : iterate(v)) {
      Value k = lower_key(attribute.is_none() ? x : attr_path(x, attribute), cs);
      bool dup = false;
      for (const Value& s : seen) dup = dup || equals(s, k);
      if (dup) continue;
      seen.push_back(k);
      out.push_back(x);
    }
    return Value::list(std::move(out));
  }
  if (name == "sort")
    return Value::list(sorted(iterate(v), a.get(0, "reverse", Value(false)).truthy(),
                              a.get(1, "case_sensitive", Value(false)).truthy(), a.get(2, "attribute")));
  if (name == "dictsort") {
    if (!v.is_dict()) fail("You can only sort by either \"key\" or \"value\"");
    bool cs = a.get(0, "case_sensitive", Value(false)).truthy();
    bool by_value = a.get(1, "by", Value("key")).to_str() == "value";
    bool reverse = a.get(2, "reverse", Value(false)).truthy();
    std::vector<std::pair<Value, Value>> pairs;
    for (const auto& kv : v.dict_ref().items) pairs.emplace_back(lower_key(by_value ? kv.second : kv.first, cs), Value::tuple({kv.first, kv.second}));
    std::stable_sort(pairs.begin(), pairs.end(), [&](const auto& x, const auto& y) {
      return reverse ? less(y.first, x.first) : less(x.first, y.first);
    });
    std::vector<Value> out;
    for (auto& p : pairs) out.push_back(p.second);
    return Value::list(std::move(out));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::u32string u = utf8_decode(v.str());
      std::reverse(u.begin(), u.end());
      return Value(utf8_encode(u));
    }
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "wordcount") return Value(word_count(need_str()));
  if (name == "center") return Value(center(need_str(), to_int_arg(a.get(0, "width", Value(int64_t{80})), "center")));
  if (name == "batch") {
    int64_t n = to_int_arg(a.get(0, "linecount"), "batch");
    if (n <= 0) fail("batch: linecount must be positive");
    bool fill = a.has(1, "fill_with");
    Value fill_with = a.get(1, "fill_with");
    std::vector<Value> out, cur;
    for (const Value& x : iterate(v)) {
      cur.push_back(x);
      if (static_cast<int64_t>(cur.size()) == n) out.push_back(Value::list(std::exchange(cur, {})));
    }
    if (!cur.empty()) {
      while (fill && static_cast<int64_t>(cur.size()) < n) cur.push_back(fill_with);
      out.push_back(Value::list(std::move(cur)));
    }
    return Value::list(std::move(out));
  }
  if (name == "min" || name == "max") return min_max(v, a, name == "max");
  if (name == "sum") {
    Value attribute = a.get(0, "attribute");
    Value total = a.get(1, "start", Value(int64_t{0}));
    for (const Value& x : iterate(v)) total = binary_op("+", total, attribute.is_none() ? x : attr_path(x, attribute), *this);
    return total;
  }
  if (name == "format") {
    if (!raw.kw.empty()) {
      Dict d;
      for (auto& [k, x] : raw.kw) d.set(Value(k), x);
      return Value(percent_format(need_str(), Value::dict(std::move(d))));
    }
    return Value(percent_format(need_str(), Value::tuple(raw.pos)));
  }
  if (name == "attr") return get_attr(v, a.get(0, "name").to_str());
  if (name == "pprint") return Value(v.repr());
  fail("No filter named '", name, "'.");
}

}  // namespace og::jinja
