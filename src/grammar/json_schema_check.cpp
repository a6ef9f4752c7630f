// The one pass that admits a schema into the supported subset (every keyword
// known and well typed, refs local, patterns translatable, no cycle that never
// descends into the instance), local $ref resolution, and JSON Schema's
// notions of equality, integers and formats, shared by compiler and validator.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "grammar/json_schema_internal.h"

namespace og::grammar::detail {

std::string where(const std::string& path) { return path.empty() ? "at the root" : "at " + path; }

void schema_fail(const std::string& path, const std::string& keyword, const std::string& message) {
  throw SchemaError(path, keyword, message);
}

std::string ptr_join(const std::string& path, const std::string& token) {
  std::string t;
  for (char c : token) {
    if (c == '~') t += "~0";
    else if (c == '/') t += "~1";
    else t += c;
  }
  return path + "/" + t;
}

namespace {

const std::set<std::string> kAnnotations = {"title",    "description", "default",  "examples",  "$schema",
                                            "$id",      "$comment",    "deprecated", "readOnly", "writeOnly"};
const std::set<std::string> kObject = {"properties", "required", "additionalProperties"};
const std::set<std::string> kArray = {"items", "prefixItems", "minItems", "maxItems"};
const std::set<std::string> kString = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumber = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
const std::set<std::string> kOther = {"type",  "enum",  "const", "anyOf",  "oneOf",
                                      "allOf", "$ref", "$defs", "definitions"};
const std::set<std::string> kTypes = {"object", "array", "string", "number", "integer", "boolean", "null"};

// Non-negative integer (1.0 counts, as JSON Schema says).
bool is_count(const Json& v) { return json_is_integer(v) && json_number_cmp(v, Json(0)) >= 0; }

int json_depth(const Json& v, int limit) {
  if (limit <= 0) return 1;
  int d = 0;
  if (v.is_array() || v.is_object())
    for (const auto& e : v) d = std::max(d, json_depth(e, limit - 1));
  return d + 1;
}

struct Checker {
  const Json& root;
  const JsonSchemaOptions& o;
  // Schema locations seen, and the edges that do not descend into the
  // instance ($ref, allOf, anyOf, oneOf) for the cycle check.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> edges;  // from -> (to, keyword path)

  void walk(const Json& s, const std::string& path, int depth) {
    if (depth > o.max_depth) schema_fail(path, "", "the schema nests deeper than " + std::to_string(o.max_depth) + " " + where(path));
    edges[path];
    if (s.is_boolean()) return;
    if (!s.is_object()) schema_fail(path, "", "a schema must be an object or a boolean " + where(path) + ", not " + s.dump());
    for (auto it = s.begin(); it != s.end(); ++it) check_keyword(it.key(), it.value(), path, depth);
  }

  [[noreturn]] void bad(const std::string& path, const std::string& kw, const std::string& what) {
    schema_fail(path, kw, "JSON schema keyword '" + kw + "' " + where(path) + " must be " + what);
  }

  void schema_list(const Json& v, const std::string& path, const std::string& kw, int depth, bool descends) {
    if (!v.is_array() || v.empty()) bad(path, kw, "a non-empty array of schemas");
    for (size_t i = 0; i < v.size(); ++i) {
      std::string p = ptr_join(ptr_join(path, kw), std::to_string(i));
      if (!descends) edges[path].push_back({p, ptr_join(path, kw)});
      walk(v[i], p, depth + 1);
    }
  }

  void check_keyword(const std::string& kw, const Json& v, const std::string& path, int depth) {
    if (kAnnotations.count(kw)) {
      if (kw == "$id" && !path.empty())
        schema_fail(path, kw, "'$id' below the root (it changes how $ref resolves) is not supported " + where(path));
      return;
    }
    if (!kObject.count(kw) && !kArray.count(kw) && !kString.count(kw) && !kNumber.count(kw) && !kOther.count(kw))
      schema_fail(path, kw, "unsupported JSON schema keyword '" + kw + "' " + where(path));
    std::string kp = ptr_join(path, kw);
    if (kw == "type") {
      auto one = [&](const Json& t) {
        if (!t.is_string() || !kTypes.count(t.get<std::string>()))
          bad(path, kw, "one of object, array, string, number, integer, boolean, null (or a list of them)");
      };
      if (v.is_array()) {
        if (v.empty()) bad(path, kw, "a type or a non-empty list of types");
        std::set<std::string> seen;
        for (const auto& t : v) {
          one(t);
          if (!seen.insert(t.get<std::string>()).second) bad(path, kw, "a list of distinct types");
        }
      } else {
        one(v);
      }
    } else if (kw == "properties" || kw == "$defs" || kw == "definitions") {
      if (!v.is_object()) bad(path, kw, "an object of schemas");
      for (auto it = v.begin(); it != v.end(); ++it) walk(it.value(), ptr_join(kp, it.key()), depth + 1);
    } else if (kw == "required") {
      if (!v.is_array()) bad(path, kw, "an array of distinct strings");
      std::set<std::string> seen;
      for (const auto& r : v)
        if (!r.is_string() || !seen.insert(r.get<std::string>()).second) bad(path, kw, "an array of distinct strings");
    } else if (kw == "additionalProperties") {
      walk(v, kp, depth + 1);
    } else if (kw == "items") {
      if (v.is_array())
        schema_fail(path, kw, "'items' as an array (draft-07 tuples) is not supported " + where(path) + ": use 'prefixItems'");
      walk(v, kp, depth + 1);
    } else if (kw == "prefixItems") {
      schema_list(v, path, kw, depth, true);
    } else if (kw == "anyOf" || kw == "oneOf" || kw == "allOf") {
      schema_list(v, path, kw, depth, false);
    } else if (kw == "minItems" || kw == "maxItems" || kw == "minLength" || kw == "maxLength") {
      if (!is_count(v)) bad(path, kw, "a non-negative integer");
    } else if (kNumber.count(kw)) {
      if (!v.is_number()) {
        if (v.is_boolean()) bad(path, kw, "a number (the draft-04 boolean form is not supported)");
        bad(path, kw, "a number");
      }
    } else if (kw == "enum") {
      if (!v.is_array()) bad(path, kw, "an array");
      if (json_depth(v, o.max_depth + 2) > o.max_depth + 1) bad(path, kw, "nested at most " + std::to_string(o.max_depth) + " deep");
    } else if (kw == "const") {
      if (json_depth(v, o.max_depth + 1) > o.max_depth) bad(path, kw, "nested at most " + std::to_string(o.max_depth) + " deep");
    } else if (kw == "pattern") {
      if (!v.is_string()) bad(path, kw, "a string");
      regex_parse(v.get<std::string>(), path, o.max_repetition);
    } else if (kw == "format") {
      if (!v.is_string()) bad(path, kw, "a string");
      if (!is_supported_format(v.get<std::string>()))
        schema_fail(path, kw, "unsupported format " + v.dump() + " " + where(path) + " (supported: date, time, date-time, uuid, email)");
    } else if (kw == "$ref") {
      if (!v.is_string()) bad(path, kw, "a string");
      auto target = resolve_ref(root, v.get<std::string>(), path);
      edges[path].push_back({target.second, kp});
    }
  }

  // DFS over the non-descending edges: a cycle would recurse forever.
  void find_cycles() {
    std::map<std::string, int> color;  // 0 new, 1 on stack, 2 done
    for (const auto& [start, unused] : edges) {
      if (color[start]) continue;
      std::vector<std::pair<std::string, size_t>> stack = {{start, 0}};
      color[start] = 1;
      while (!stack.empty()) {
        auto& [node, next] = stack.back();
        const auto& out = edges[node];
        if (next == out.size()) {
          color[node] = 2;
          stack.pop_back();
          continue;
        }
        const auto& [to, via] = out[next++];
        std::string kw = via.substr(via.rfind('/') + 1), at = via.substr(0, via.rfind('/'));
        if (!edges.count(to)) schema_fail(at, kw, "'$ref' " + where(at) + " does not point at a schema");
        if (color[to] == 1)
          schema_fail(at, kw, "'" + kw + "' " + where(at) +
                                  " leads back to the same schema without descending into the instance (an endless loop)");
        if (color[to] == 0) {
          color[to] = 1;
          stack.push_back({to, 0});
        }
      }
    }
  }
};

}  // namespace

bool is_annotation(const std::string& k) { return kAnnotations.count(k) != 0; }
bool is_object_keyword(const std::string& k) { return kObject.count(k) != 0; }
bool is_array_keyword(const std::string& k) { return kArray.count(k) != 0; }
bool is_string_keyword(const std::string& k) { return kString.count(k) != 0; }
bool is_number_keyword(const std::string& k) { return kNumber.count(k) != 0; }

void check_schema(const Json& root, const JsonSchemaOptions& o) {
  Checker c{root, o, {}};
  c.walk(root, "", 0);
  c.find_cycles();
}

Json with_strict_defaults(const Json& s, int max_depth) {
  if (!s.is_object() || max_depth < 0) return s;
  Json out = s;
  bool object = s.contains("properties");
  if (s.contains("type")) {
    const Json& t = s["type"];
    object = object || t == "object" || (t.is_array() && std::find(t.begin(), t.end(), Json("object")) != t.end());
  }
  if (object && !s.contains("additionalProperties")) out["additionalProperties"] = false;
  for (const char* kw : {"properties", "$defs", "definitions"})
    if (out.contains(kw) && out[kw].is_object())
      for (auto& [k, v] : out[kw].items()) v = with_strict_defaults(v, max_depth - 1);
  for (const char* kw : {"additionalProperties", "items"})
    if (out.contains(kw)) out[kw] = with_strict_defaults(out[kw], max_depth - 1);
  for (const char* kw : {"prefixItems", "anyOf", "oneOf", "allOf"})
    if (out.contains(kw) && out[kw].is_array())
      for (auto& v : out[kw]) v = with_strict_defaults(v, max_depth - 1);
  return out;
}

std::pair<const Json*, std::string> resolve_ref(const Json& root, const std::string& ref, const std::string& path) {
  if (ref.empty() || ref[0] != '#')
    schema_fail(path, "$ref", "'$ref' " + Json(ref).dump() + " " + where(path) + " is not a local reference (\"#/...\")");
  // The fragment is percent-encoded (RFC 3986), then a JSON pointer.
  std::string frag;
  for (size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] == '%' && i + 2 < ref.size() && std::isxdigit((unsigned char)ref[i + 1]) &&
        std::isxdigit((unsigned char)ref[i + 2])) {
      frag += char(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      frag += ref[i];
    }
  }
  if (!frag.empty() && frag[0] != '/')
    schema_fail(path, "$ref", "'$ref' " + Json(ref).dump() + " " + where(path) + ": anchors are not supported, only JSON pointers");
  const Json* cur = &root;
  std::string canon;
  size_t pos = 0;
  while (pos < frag.size()) {
    size_t next = frag.find('/', pos + 1);
    std::string raw = frag.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    std::string tok;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        tok += raw[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        tok += raw[i];
      }
    }
    const Json* child = nullptr;
    if (cur->is_object()) {
      auto it = cur->find(tok);
      if (it != cur->end()) child = &*it;
    } else if (cur->is_array() && !tok.empty() && tok.size() < 10 &&
               tok.find_first_not_of("0123456789") == std::string::npos && (tok == "0" || tok[0] != '0')) {
      size_t i = std::stoul(tok);
      if (i < cur->size()) child = &(*cur)[i];
    }
    if (!child) schema_fail(path, "$ref", "'$ref' " + Json(ref).dump() + " " + where(path) + " points at nothing");
    cur = child;
    canon = ptr_join(canon, tok);
    pos = next == std::string::npos ? frag.size() : next;
  }
  return {cur, canon};
}

bool json_is_integer(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

int json_number_cmp(const Json& a, const Json& b) {
  static_assert(std::numeric_limits<long double>::digits >= 64, "exact int64/double comparison needs a wide long double");
  auto cmp = [](auto x, auto y) { return x < y ? -1 : x > y ? 1 : 0; };
  if (a.is_number_integer() && b.is_number_integer()) {
    bool an = a.is_number_unsigned() ? false : a.get<int64_t>() < 0;
    bool bn = b.is_number_unsigned() ? false : b.get<int64_t>() < 0;
    if (an != bn) return an ? -1 : 1;
    if (an) return cmp(a.get<int64_t>(), b.get<int64_t>());
    return cmp(a.get<uint64_t>(), b.get<uint64_t>());
  }
  auto wide = [](const Json& v) -> long double {
    if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
    if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
    return static_cast<long double>(v.get<double>());
  };
  return cmp(wide(a), wide(b));
}

bool json_equal(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) return json_number_cmp(a, b) == 0;
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_equal(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto jt = b.find(it.key());
      if (jt == b.end() || !json_equal(it.value(), *jt)) return false;
    }
    return true;
  }
  return a == b;
}

// ---- formats ----

bool is_supported_format(const std::string& f) {
  return f == "date" || f == "time" || f == "date-time" || f == "uuid" || f == "email";
}

const char* format_pattern(const std::string& f) {
  if (f == "time")
    return R"(^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$)";
  if (f == "uuid") return R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)";
  if (f == "email")
    return R"(^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*)"
           R"(@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$)";
  return nullptr;
}

int format_fixed_length(const std::string& f) { return f == "date" ? 10 : f == "uuid" ? 36 : -1; }

namespace {

bool pattern_ok(const char* pattern, const std::string& s) {
  static std::map<std::string, Regex> cache;  // three fixed patterns, built once each
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(pattern);
  if (it == cache.end()) it = cache.emplace(pattern, regex_parse(pattern, "", 100)).first;
  auto cps = utf8_decode(s);
  return cps && regex_search(it->second, *cps);
}

bool date_ok(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9') return false;
  int y = std::stoi(s.substr(0, 4)), m = std::stoi(s.substr(5, 2)), d = std::stoi(s.substr(8, 2));
  if (y < 1 || m < 1 || m > 12 || d < 1) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

}  // namespace

bool format_valid(const std::string& f, const std::string& s) {
  if (f == "date") return date_ok(s);
  if (f == "date-time") return s.size() > 11 && s[10] == 'T' && date_ok(s.substr(0, 10)) && pattern_ok(format_pattern("time"), s.substr(11));
  return pattern_ok(format_pattern(f), s);
}

}  // namespace og::grammar::detail
