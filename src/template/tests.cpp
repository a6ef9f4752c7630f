// The builtin tests (`x is defined`, `is string`, `is divisibleby 3`, ...) and
// the select / reject / selectattr / rejectattr filters that apply them.
#include <cmath>

#include "template/filters.h"
#include "template/text.h"

namespace og::jinja {
namespace {

const Value& arg0(const CallArgs& a, const std::string& test) {
  if (a.pos.empty()) fail("test '", test, "' needs an argument");
  return a.pos[0];
}

bool same(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::List:
    case Value::Kind::Tuple: return &a.items() == &b.items();
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return &a.dict_ref() == &b.dict_ref();
    default: return equals(a, b);
  }
}

bool all_chars(const Value& v, bool (*pred)(char32_t)) {
  if (!v.is_string()) fail("test needs a string");
  bool cased = false;
  for (char32_t c : utf8_decode(v.str())) {
    if (py_isupper(c) || py_islower(c)) {
      cased = true;
      if (!pred(c)) return false;
    }
  }
  return cased;
}

}  // namespace

bool has_test(const std::string& n) {
  static const char* const kTests[] = {
      "defined", "undefined", "none", "boolean", "false", "true", "integer", "float", "number", "string",
      "mapping", "iterable", "sequence", "callable", "sameas", "escaped", "odd", "even", "divisibleby",
      "equalto", "eq", "==", "ne", "!=", "lt", "<", "le", "<=", "gt", ">", "ge", ">=", "greaterthan",
      "lessthan", "in", "lower", "upper", "filter", "test"};
  for (const char* t : kTests)
    if (n == t) return true;
  return false;
}

bool Interp::test(const std::string& n, const Value& v, CallArgs& a) {
  if (n == "defined") return !v.is_undefined();
  if (n == "undefined") return v.is_undefined();
  if (n == "none") return v.is_none();
  if (n == "boolean") return v.is_bool();
  if (n == "false") return v.is_bool() && !v.as_bool();
  if (n == "true") return v.is_bool() && v.as_bool();
  if (n == "integer") return v.is_int();
  if (n == "float") return v.is_float();
  if (n == "number") return v.is_number();
  if (n == "string") return v.is_string();
  if (n == "mapping") return v.is_dict();
  if (n == "iterable") return v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined();
  if (n == "sequence") return v.is_string() || v.is_sequence() || v.is_dict() || v.is_undefined();
  if (n == "callable") return v.is_callable();
  if (n == "sameas") return same(v, arg0(a, n));
  if (n == "escaped") return false;
  if (n == "odd" || n == "even") {
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_number()) fail("unsupported operand type(s) for %: '", v.type_name(), "' and 'int'");
    Value r = binary_op("%", v, Value(int64_t{2}), *this);
    return (r.as_float() == (n == "odd" ? 1 : 0));
  }
  if (n == "divisibleby") {
    Value r = binary_op("%", v, arg0(a, n), *this);
    return r.as_float() == 0;
  }
  if (n == "equalto" || n == "eq" || n == "==") return equals(v, arg0(a, n));
  if (n == "ne" || n == "!=") return !equals(v, arg0(a, n));
  if (n == "lt" || n == "<" || n == "lessthan") return less(v, arg0(a, n));
  if (n == "le" || n == "<=") return !less(arg0(a, n), v);
  if (n == "gt" || n == ">" || n == "greaterthan") return less(arg0(a, n), v);
  if (n == "ge" || n == ">=") return !less(v, arg0(a, n));
  if (n == "in") return contains(arg0(a, n), v);
  if (n == "lower") return all_chars(v, py_islower);
  if (n == "upper") return all_chars(v, py_isupper);
  if (n == "test") return v.is_string() && has_test(v.str());
  if (n == "filter") return v.is_string() && has_filter(v.str());
  fail("No test named '", n, "'.");
}

// select(test, args...) / reject / selectattr(attr, test, args...) / rejectattr.
Value select_items(Interp& in, const Value& v, CallArgs& raw, bool by_attr, bool keep) {
  size_t next = 0;
  Value attribute;
  if (by_attr) {
    if (raw.pos.empty()) fail("Missing parameter for attribute name");
    attribute = raw.pos[next++];
  }
  std::string test_name;
  if (raw.pos.size() > next) {
    if (!raw.pos[next].is_string()) fail("test name must be a string");
    test_name = raw.pos[next++].str();
  }
  CallArgs targs;
  targs.pos.assign(raw.pos.begin() + static_cast<std::ptrdiff_t>(next), raw.pos.end());
  targs.kw = raw.kw;
  std::vector<Value> out;
  if (!v.truthy()) return Value::list();  // jinja2 yields nothing from a falsy sequence
  for (const Value& x : iterate(v)) {
    Value subject = x;
    if (by_attr) {
      const std::string& path = attribute.to_str();
      size_t pos = 0;
      while (true) {
        size_t dot = path.find('.', pos);
        if (subject.is_undefined()) fail_undefined(subject);
        subject = get_item(subject, Value(path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos)));
        if (dot == std::string::npos) break;
        pos = dot + 1;
      }
    }
    bool ok;
    if (test_name.empty()) {
      ok = subject.truthy();
    } else {
      CallArgs copy = targs;
      ok = in.test(test_name, subject, copy);
    }
    if (ok == keep) out.push_back(x);
  }
  return Value::list(std::move(out));
}

}  // namespace og::jinja
