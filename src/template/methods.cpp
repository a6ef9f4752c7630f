// Attribute and item access as jinja2's immutable sandbox does it: dict keys by
// `.key` or `[key]`, list and string indexing, and the str / dict / list methods
// templates call. Mutating methods (append, update, ...) are refused as jinja2
// refuses them; names beginning with "_" reach nothing.
#include <algorithm>

#include "template/interp.h"
#include "template/text.h"

namespace og::jinja {
namespace {

// A value in an error message or an undefined's hint: errors stay one short line
// even when the value is megabytes long.
std::string brief_repr(const Value& v) {
  std::string r = v.repr();
  constexpr size_t kMax = 200;
  if (r.size() <= kMax) return r;
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(r[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return r.substr(0, cut) + "...";
}

std::u32string strip_set(const CallArgs& a, size_t idx) {
  if (a.pos.size() > idx && a.pos[idx].is_string()) return utf8_decode(a.pos[idx].str());
  if (a.pos.size() > idx && !a.pos[idx].is_none()) fail("strip arg must be None or str");
  return U"";
}

// The stripped text keeps its bytes' taint (pick_chars).
Value do_strip(const Value& v, const CallArgs& a, bool left, bool right) {
  std::u32string chars = strip_set(a, 0);
  bool ws = a.pos.empty() || a.pos[0].is_none();
  std::u32string u = utf8_decode(v.str());
  auto drop = [&](char32_t c) { return ws ? py_isspace(c) : chars.find(c) != std::u32string::npos; };
  size_t b = 0, e = u.size();
  if (left)
    while (b < e && drop(u[b])) ++b;
  if (right)
    while (e > b && drop(u[e - 1])) --e;
  if (!v.taint()) return Value(utf8_encode(std::u32string_view(u).substr(b, e - b)));
  std::vector<size_t> idx(e - b);
  for (size_t i = b; i < e; ++i) idx[i - b] = i;
  return pick_chars(v, u, idx);
}

int64_t maxsplit_arg(const CallArgs& a) {
  for (const auto& [k, v] : a.kw)
    if (k == "maxsplit") return to_int_arg(v, "maxsplit");
  return a.pos.size() > 1 ? to_int_arg(a.pos[1], "maxsplit") : -1;
}

const Value* sep_arg(const CallArgs& a) {
  for (const auto& [k, v] : a.kw)
    if (k == "sep") return &v;
  return a.pos.empty() ? nullptr : &a.pos[0];
}

Value do_split(const std::string& s, const CallArgs& a, bool reverse) {
  const Value* sep = sep_arg(a);
  int64_t maxsplit = maxsplit_arg(a);
  std::vector<std::string> parts;
  if (!sep || sep->is_none()) {
    // Runs of whitespace separate; no empty strings.
    std::u32string u = utf8_decode(s);
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < u.size()) {
      while (i < u.size() && py_isspace(u[i])) ++i;
      if (i >= u.size()) break;
      size_t b = i;
      while (i < u.size() && !py_isspace(u[i])) ++i;
      words.emplace_back(b, i);
      check_items(words.size());  // each becomes a value: stop before holding millions
    }
    if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
      if (!reverse) {
        size_t last = static_cast<size_t>(maxsplit);
        size_t e = u.size();
        while (e > words[last].first && py_isspace(u[e - 1])) --e;
        words.resize(last + 1);
        words[last].second = e;
      } else {
        size_t first = words.size() - static_cast<size_t>(maxsplit) - 1;
        size_t b = 0;
        while (b < words[first].second && py_isspace(u[b])) ++b;
        words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(first));
        words[0].first = b;
      }
    }
    std::vector<Value> out;
    for (auto [b, e] : words) out.emplace_back(utf8_encode(std::u32string_view(u).substr(b, e - b)));
    return Value::list(std::move(out));
  }
  if (!sep->is_string()) fail("must be str or None, not ", sep->type_name());
  const std::string& d = sep->str();
  if (d.empty()) fail("empty separator");
  // The parts are checked against the render's size bound as they are found
  // ('x,' * 8000000 splits into 8 million values, a gigabyte).
  size_t text = 0;
  auto add = [&](std::string part) {
    text += part.size();
    parts.push_back(std::move(part));
    check_items(parts.size(), text);
  };
  if (!reverse) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      size_t f = text_find(s, d, pos);
      if (f == std::string::npos) break;
      add(s.substr(pos, f - pos));
      pos = f + d.size();
    }
    add(s.substr(pos));
  } else {
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < d.size()) break;
      size_t f = text_rfind(s, d, end - d.size());
      if (f == std::string::npos) break;
      add(s.substr(f + d.size(), end - f - d.size()));
      end = f;
    }
    add(s.substr(0, end));
    std::reverse(parts.begin(), parts.end());
  }
  std::vector<Value> out;
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

bool affix_match(const std::string& s, const Value& arg, bool prefix) {
  auto one = [&](const Value& v) {
    if (!v.is_string()) fail(prefix ? "startswith" : "endswith", " first arg must be str or a tuple of str");
    const std::string& x = v.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (arg.kind() == Value::Kind::Tuple) {
    for (const Value& v : arg.items())
      if (one(v)) return true;
    return false;
  }
  return one(arg);
}

const Value& arg(const CallArgs& a, size_t i, const char* method) {
  if (a.pos.size() <= i) fail(method, "() takes at least ", i + 1, " argument(s)");
  return a.pos[i];
}

const std::string& str_arg(const CallArgs& a, size_t i, const char* method) {
  const Value& v = arg(a, i, method);
  if (!v.is_string()) fail(method, "() argument must be str, not ", v.type_name());
  return v.str();
}

int64_t cp_index(const std::string& s, size_t byte) {
  return static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, byte)));
}

// The kept text and each inserted `new` keep their taint.
Value str_replace(const Value& sv, CallArgs& a) {
  const std::string& s = sv.str();
  const std::string& from = str_arg(a, 0, "replace");
  const std::string& to = str_arg(a, 1, "replace");
  const Value& to_value = a.pos[1];
  int64_t count = a.pos.size() > 2 ? to_int_arg(a.pos[2], "replace") : -1;
  std::string out;
  int64_t done = 0;
  if (from.empty()) {  // Python inserts `to` between every character and at both ends
    std::u32string u = utf8_decode(s);
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < u.size()) utf8_append(out, u[i]);
      check_bytes(out.size());
    }
    // Python's every-gap insertion is rare: its result is tainted whole when any of it is.
    return Value(std::move(out)).tainted_whole(std::max(sv.taint_kind(), to_value.taint_kind()));
  }
  TaintedText t;
  size_t pos = 0;
  while (count < 0 || done < count) {
    size_t f = text_find(s, from, pos);
    if (f == std::string::npos) break;
    t.add(sv, pos, f);
    t.add(to_value);
    pos = f + from.size();
    ++done;
    check_bytes(t.size());
  }
  t.add(sv, pos, s.size());
  check_bytes(t.size());
  return t.take();
}

Value str_find(const std::string& s, const std::string& name, CallArgs& a) {
  const std::string& x = str_arg(a, 0, name.c_str());
  size_t f = name[0] == 'r' ? text_rfind(s, x) : text_find(s, x);
  if (f == std::string::npos) {
    if (name.find("index") != std::string::npos) fail("substring not found");
    return Value(int64_t{-1});
  }
  return Value(cp_index(s, f));
}

Value str_count(const std::string& s, CallArgs& a) {
  const std::string& x = str_arg(a, 0, "count");
  if (x.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
  int64_t n = 0;
  for (size_t f = text_find(s, x); f != std::string::npos; f = text_find(s, x, f + x.size())) ++n;
  return Value(n);
}

Value str_join(const Value& sep, CallArgs& a) {
  TaintedText out;
  std::vector<Value> items = iterate(arg(a, 0, "join"));
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) fail("sequence item ", i, ": expected str instance, ", items[i].type_name(), " found");
    if (i) out.add(sep);
    out.add(items[i]);
    check_bytes(out.size());
  }
  return out.take();
}

// isdigit(), isspace(), ...: true when s is not empty and every character qualifies.
Value str_predicate(const std::string& s, const std::string& name) {
  bool (*pred)(char32_t) = nullptr;
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") pred = [](char32_t c) { return c >= '0' && c <= '9'; };
  else if (name == "isspace") pred = py_isspace;
  else if (name == "isalnum") pred = py_isalnum;
  else if (name == "isalpha") pred = [](char32_t c) { return py_isalnum(c) && !(c >= '0' && c <= '9'); };
  else if (name == "isupper") pred = [](char32_t c) { return !py_islower(c); };
  else if (name == "islower") pred = [](char32_t c) { return !py_isupper(c); };
  else fail("'str' object has no attribute '", name, "'");
  std::u32string u = utf8_decode(s);
  if (u.empty()) return Value(false);
  for (char32_t c : u)
    if (!pred(c)) return Value(false);
  return Value(true);
}

// str.format() with {} / {0} / {name} fields and {{ }} escapes; a format spec or
// conversion is refused rather than rendered differently from Python.
Value str_format(const Value& format, CallArgs& a) {
  const std::string& s = format.str();
  TaintedText out;
  size_t auto_index = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out.append(std::string_view(&s[i], 1));
      ++i;
      continue;
    }
    if (c == '}') fail("Single '}' encountered in format string");
    if (c != '{') {
      out.append(std::string_view(&s[i], 1));
      continue;
    }
    size_t end = s.find('}', i);
    if (end == std::string::npos) fail("Single '{' encountered in format string");
    std::string field = s.substr(i + 1, end - i - 1);
    if (field.find_first_of(":!{[.") != std::string::npos) fail("str.format: only plain {} fields are supported");
    const Value* v = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t idx = field.empty() ? auto_index++ : std::stoul(field.substr(0, 9));
      if (idx >= a.pos.size()) fail("Replacement index ", idx, " out of range for positional args tuple");
      v = &a.pos[idx];
    } else {
      for (const auto& [k, x] : a.kw)
        if (k == field) v = &x;
      if (!v) fail("KeyError: '", field, "'");
    }
    out.add(*v);
    check_bytes(out.size());
    i = end;
  }
  // A format string with request text in it is tainted whole (see percent_format).
  return out.take().tainted_whole(format.taint_kind());
}

Value string_method(const Value& v, const std::string& name, CallArgs& a) {
  const std::string& s = v.str();
  if (name == "format") return str_format(v, a);
  if (name == "strip") return do_strip(v, a, true, true);
  if (name == "lstrip") return do_strip(v, a, true, false);
  if (name == "rstrip") return do_strip(v, a, false, true);
  if (name == "split") return do_split(s, a, false);
  if (name == "rsplit") return do_split(s, a, true);
  if (name == "startswith") return Value(affix_match(s, arg(a, 0, "startswith"), true));
  if (name == "endswith") return Value(affix_match(s, arg(a, 0, "endswith"), false));
  if (name == "upper" || name == "lower") {
    std::string r = name == "upper" ? str_upper(s) : str_lower(s);
    // ASCII keeps its bytes' places, and so their taint (else the call taints it whole).
    if (v.taint() && is_ascii(s)) return Value::text(std::move(r), *v.taint());
    return Value(std::move(r));
  }
  if (name == "title") return Value(str_title(s));
  if (name == "capitalize") return Value(str_capitalize(s));
  if (name == "replace") return str_replace(v, a);
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") return str_find(s, name, a);
  if (name == "count") return str_count(s, a);
  if (name == "join") return str_join(v, a);
  if (name == "splitlines") {
    std::vector<Value> out;
    size_t text = 0;
    for_each_line(s, [&](std::string line) {
      text += line.size();
      out.emplace_back(std::move(line));
      check_items(out.size(), text);
    });
    return Value::list(std::move(out));
  }
  return str_predicate(s, name);
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {
      "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower",
      "title", "capitalize", "replace", "find", "rfind", "index", "rindex", "count", "join",
      "splitlines", "format", "isdigit", "isnumeric", "isdecimal", "isspace", "isalnum", "isalpha", "isupper", "islower"};
  for (const char* k : kNames)
    if (n == k) return true;
  return false;
}

Value dict_method(const Value& d, const std::string& name, CallArgs& a) {
  const Dict& dict = d.dict_ref();
  if (name == "items") {
    std::vector<Value> out;
    for (const auto& kv : dict.items) out.push_back(Value::tuple({kv.first, kv.second}));
    return Value::dict_view(std::move(out), "dict_items");
  }
  if (name == "keys" || name == "values") {
    std::vector<Value> out;
    for (const auto& kv : dict.items) out.push_back(name == "keys" ? kv.first : kv.second);
    return Value::dict_view(std::move(out), name == "keys" ? "dict_keys" : "dict_values");
  }
  // get
  const Value* v = dict.find(arg(a, 0, "get"));
  if (v) return *v;
  return a.pos.size() > 1 ? a.pos[1] : Value::none();
}

Value list_method(const Value& l, const std::string& name, CallArgs& a) {
  const Value& x = arg(a, 0, name.c_str());
  int64_t n = 0;
  for (size_t i = 0; i < l.items().size(); ++i) {
    if (!equals(l.items()[i], x)) continue;
    if (name == "index") return Value(static_cast<int64_t>(i));
    ++n;
  }
  if (name == "index") fail(brief_repr(x), " is not in list");
  return Value(n);
}

bool is_mutating(const Value& obj, const std::string& n) {
  if (obj.is_sequence())
    return n == "append" || n == "extend" || n == "insert" || n == "pop" || n == "remove" || n == "clear" ||
           n == "sort" || n == "reverse";
  if (obj.is_dict())
    return n == "update" || n == "pop" || n == "popitem" || n == "setdefault" || n == "clear";
  return false;
}

Value bound(const Value& obj, const std::string& name, Value (*fn)(const Value&, const std::string&, CallArgs&)) {
  return Value::callable(
      name, [obj, name, fn](CallArgs& a) { return fn(obj, name, a); }, /*builtin=*/true, obj.taint_kind());
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name) {
  if (!name.empty() && name[0] != '_') {
    if (obj.is_string() && is_string_method(name))
      return bound(obj, name, [](const Value& o, const std::string& n, CallArgs& a) {
        Value r = string_method(o, n, a);
        // markupsafe keeps these methods' results safe
        bool keeps = n == "strip" || n == "lstrip" || n == "rstrip" || n == "upper" || n == "lower" ||
                     n == "title" || n == "capitalize" || n == "replace";
        return o.is_markup() && keeps ? r.as_markup() : r;
      });
    if (obj.is_dict() && (name == "items" || name == "keys" || name == "values" || name == "get"))
      return bound(obj, name, dict_method);
    if (obj.is_sequence() && (name == "index" || name == "count")) return bound(obj, name, list_method);
    if (is_mutating(obj, name))
      return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
  }
  if (obj.is_dict() || obj.is_namespace()) {
    if (const Value* v = obj.dict_ref().find(std::string_view(name))) return *v;
  }
  if (!name.empty() && name[0] == '_')
    return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
  return Value::undefined("'" + std::string(obj.is_namespace() ? "Namespace" : obj.type_name() + " object") +
                          "' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_dict() || obj.is_namespace()) {
    if (const Value* v = obj.dict_ref().find(key)) return *v;
    if (key.is_string()) return get_attr(obj, key.str());
    return Value::undefined("'" + obj.type_name() + " object' has no attribute " + brief_repr(key));
  }
  if ((obj.is_sequence() || obj.is_string()) && !obj.is_dict_view() && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_string()) {
      if (is_ascii(obj.str())) {
        int64_t n = static_cast<int64_t>(obj.str().size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined("'str object' has no attribute " + brief_repr(key));
        return obj.sub(static_cast<size_t>(i), static_cast<size_t>(i) + 1);  // its byte's taint kept
      }
      std::u32string u = utf8_decode(obj.str());
      int64_t n = static_cast<int64_t>(u.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined("'str object' has no attribute " + brief_repr(key));
      return pick_chars(obj, u, {static_cast<size_t>(i)});
    }
    int64_t n = static_cast<int64_t>(obj.items().size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined("'" + obj.type_name() + " object' has no attribute " + brief_repr(key));
    return obj.items()[static_cast<size_t>(i)];
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined("'" + obj.type_name() + " object' has no attribute " + brief_repr(key));
}

}  // namespace og::jinja
