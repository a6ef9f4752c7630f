// json.dumps semantics (see json_dump.h): floats as Python's repr, NaN and
// Infinity spelled as Python writes them, non-string keys converted to strings.
#include "template/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "template/meter.h"
#include "template/text.h"

namespace og::jinja {

std::string json_quote(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  auto hex = [&](unsigned c) {
    char buf[16];  // "\\uXXXX" for c < 0x10000; room for more so GCC sees no truncation
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    out += buf;
  };
  size_t checked = 0;
  for (char32_t c : utf8_decode(s)) {
    if (out.size() > checked + 4096) {  // escapes grow the text up to 6 times
      check_bytes(out.size());
      checked = out.size();
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          hex(c);
        } else if (ensure_ascii && c >= 0x7F) {
          if (c >= 0x10000) {
            char32_t v = c - 0x10000;
            hex(0xD800 + (v >> 10));
            hex(0xDC00 + (v & 0x3FF));
          } else {
            hex(c);
          }
        } else {
          utf8_append(out, c);
        }
    }
  }
  return out + "\"";
}

namespace {

std::string float_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-Infinity" : "Infinity";
  return py_float_repr(v);
}

std::string key_text(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String: return k.str();
    case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
    case Value::Kind::None: return "null";
    case Value::Kind::Int: return std::to_string(k.as_int());
    case Value::Kind::Float: return float_json(k.as_float());
    default: fail("keys must be str, int, float, bool or None, not ", k.type_name());
  }
}

// Every value written is charged, and the text is checked against the render's
// size bound as it grows: a list that holds one big list many times would
// otherwise print hundreds of megabytes before anything looked at its size.
void dump(const Value& v, const JsonFormat& f, int level, std::string& out) {
  OG_CHECK(level < 512, "tojson: value nests too deeply");
  charge_work(kElementWork);
  check_bytes(out.size());
  auto newline = [&](int lv) {
    if (!f.indent) return;
    out.push_back('\n');
    for (int i = 0; i < lv; ++i) out += *f.indent;
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: out += float_json(v.as_float()); return;
    case Value::Kind::String: out += json_quote(v.str(), f.ensure_ascii); return;
    case Value::Kind::List:
    case Value::Kind::Tuple: {
      if (v.is_dict_view()) fail("Object of type ", v.hint(), " is not JSON serializable");
      const auto& items = v.items();
      if (items.empty()) { out += "[]"; return; }
      out.push_back('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += f.item_sep;
        newline(level + 1);
        dump(items[i], f, level + 1, out);
      }
      newline(level);
      out.push_back(']');
      return;
    }
    case Value::Kind::Dict: {
      std::vector<std::pair<std::string, const Value*>> entries;
      for (const auto& kv : v.dict_ref().items) entries.emplace_back(key_text(kv.first), &kv.second);
      if (entries.empty()) { out += "{}"; return; }
      if (f.sort_keys)
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      out.push_back('{');
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += f.item_sep;
        newline(level + 1);
        out += json_quote(entries[i].first, f.ensure_ascii);
        out += f.key_sep;
        dump(*entries[i].second, f, level + 1, out);
      }
      newline(level);
      out.push_back('}');
      return;
    }
    default: fail("Object of type ", v.type_name(), " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonFormat& fmt) {
  std::string out;
  dump(v, fmt, 0, out);
  check_bytes(out.size());
  return out;
}

}  // namespace og::jinja
