// The validator: JSON Schema 2020-12 over the supported subset, written
// plainly from the specification so the compiler has an independent twin.
#include "grammar/json_validate.h"

#include <map>

#include "grammar/json_schema_internal.h"

namespace og::grammar {
namespace detail {
namespace {

constexpr int kMaxInstanceDepth = 1000;

struct Validator {
  const Json& root;
  const JsonSchemaOptions& o;
  std::map<std::string, Regex> regexes;
  int depth = 0;

  static std::string at(const std::string& ip, const std::string& what) { return (ip.empty() ? "/" : ip) + ": " + what; }
  // A value in a message: its JSON, cut at 60 bytes (a whole UTF-8 character kept).
  static std::string show(const Json& v) {
    std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (s.size() <= 60) return s;
    size_t cut = 60;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return s.substr(0, cut) + "...";
  }

  static bool type_is(const Json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") return json_is_integer(v);
    if (t == "boolean") return v.is_boolean();
    return v.is_null();
  }

  std::string run(const Json& v, const Json& s, const std::string& ip) {
    struct Depth {
      int& d;
      ~Depth() { --d; }
    } guard{++depth};
    if (depth > kMaxInstanceDepth) return at(ip, "nested deeper than " + std::to_string(kMaxInstanceDepth));
    if (s.is_boolean()) return s.get<bool>() ? "" : at(ip, "no value is allowed here (schema false)");
    std::string e;
    if (s.contains("$ref")) {
      e = run(v, *resolve_ref(root, s["$ref"].get<std::string>(), "").first, ip);
      if (!e.empty()) return e;
    }
    if (s.contains("allOf"))
      for (const auto& part : s["allOf"])
        if (!(e = run(v, part, ip)).empty()) return e;
    if (s.contains("anyOf")) {
      bool ok = false;
      for (const auto& part : s["anyOf"]) ok = ok || run(v, part, ip).empty();
      if (!ok) return at(ip, "matches no branch of anyOf");
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const auto& part : s["oneOf"]) n += run(v, part, ip).empty();
      if (n != 1) return at(ip, "matches " + std::to_string(n) + " branches of oneOf, not exactly one");
    }
    if (s.contains("enum")) {
      bool ok = false;
      for (const auto& x : s["enum"]) ok = ok || json_equal(v, x);
      if (!ok) return at(ip, show(v) + " is not one of the enum values");
    }
    if (s.contains("const") && !json_equal(v, s["const"])) return at(ip, show(v) + " is not the const " + show(s["const"]));
    if (s.contains("type")) {
      const Json& t = s["type"];
      bool ok = false;
      if (t.is_string()) ok = type_is(v, t.get<std::string>());
      else for (const auto& x : t) ok = ok || type_is(v, x.get<std::string>());
      if (!ok) return at(ip, show(v) + " is not of type " + t.dump());
    }
    if (v.is_string()) e = string_keywords(v.get<std::string>(), s, ip);
    else if (v.is_number()) e = number_keywords(v, s, ip);
    else if (v.is_object()) e = object_keywords(v, s, ip);
    else if (v.is_array()) e = array_keywords(v, s, ip);
    return e;
  }

  std::string string_keywords(const std::string& str, const Json& s, const std::string& ip) {
    int64_t len = 0;
    for (unsigned char c : str) len += (c & 0xC0) != 0x80;
    if (s.contains("minLength") && json_number_cmp(Json(len), s["minLength"]) < 0)
      return at(ip, "shorter than minLength " + s["minLength"].dump());
    if (s.contains("maxLength") && json_number_cmp(Json(len), s["maxLength"]) > 0)
      return at(ip, "longer than maxLength " + s["maxLength"].dump());
    if (s.contains("pattern")) {
      const std::string& p = s["pattern"].get_ref<const std::string&>();
      auto it = regexes.find(p);
      if (it == regexes.end()) it = regexes.emplace(p, regex_parse(p, "", o.max_repetition)).first;
      auto cps = utf8_decode(str);
      if (!cps || !regex_search(it->second, *cps)) return at(ip, "does not match the pattern " + s["pattern"].dump());
    }
    if (s.contains("format") && !format_valid(s["format"].get<std::string>(), str))
      return at(ip, show(Json(str)) + " is not a valid " + s["format"].get<std::string>());
    return "";
  }

  static std::string number_keywords(const Json& v, const Json& s, const std::string& ip) {
    if (s.contains("minimum") && json_number_cmp(v, s["minimum"]) < 0)
      return at(ip, show(v) + " is below the minimum " + s["minimum"].dump());
    if (s.contains("exclusiveMinimum") && json_number_cmp(v, s["exclusiveMinimum"]) <= 0)
      return at(ip, show(v) + " is not above the exclusiveMinimum " + s["exclusiveMinimum"].dump());
    if (s.contains("maximum") && json_number_cmp(v, s["maximum"]) > 0)
      return at(ip, show(v) + " is above the maximum " + s["maximum"].dump());
    if (s.contains("exclusiveMaximum") && json_number_cmp(v, s["exclusiveMaximum"]) >= 0)
      return at(ip, show(v) + " is not below the exclusiveMaximum " + s["exclusiveMaximum"].dump());
    return "";
  }

  std::string object_keywords(const Json& v, const Json& s, const std::string& ip) {
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return at(ip, "the required property " + r.dump() + " is missing");
    const Json* props = s.contains("properties") ? &s["properties"] : nullptr;
    const Json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::string child = ptr_join(ip, it.key());
      std::string e;
      if (props && props->contains(it.key())) {
        e = run(it.value(), (*props)[it.key()], child);
      } else if (extra) {
        if (extra->is_boolean() && !extra->get<bool>()) return at(ip, "the additional property " + Json(it.key()).dump() + " is not allowed");
        e = run(it.value(), *extra, child);
      }
      if (!e.empty()) return e;
    }
    return "";
  }

  std::string array_keywords(const Json& v, const Json& s, const std::string& ip) {
    Json n(static_cast<uint64_t>(v.size()));
    if (s.contains("minItems") && json_number_cmp(n, s["minItems"]) < 0) return at(ip, "fewer items than minItems " + s["minItems"].dump());
    if (s.contains("maxItems") && json_number_cmp(n, s["maxItems"]) > 0) return at(ip, "more items than maxItems " + s["maxItems"].dump());
    size_t k = s.contains("prefixItems") ? s["prefixItems"].size() : 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const Json* item = i < k ? &s["prefixItems"][i] : s.contains("items") ? &s["items"] : nullptr;
      if (!item) break;
      std::string e = run(v[i], *item, ptr_join(ip, std::to_string(i)));
      if (!e.empty()) return e;
    }
    return "";
  }
};

}  // namespace

std::string validate_at(const Json& instance, const Json& schema, const Json& root, const JsonSchemaOptions& o) {
  Validator val{root, o, {}, 0};
  return val.run(instance, schema, "");
}

}  // namespace detail

ValidationResult validate_json(const nlohmann::ordered_json& instance, const nlohmann::ordered_json& schema,
                               const JsonSchemaOptions& o) {
  using namespace detail;
  Json s = o.strict ? with_strict_defaults(schema, o.max_depth + 1) : schema;
  check_schema(s, o);
  std::string e = validate_at(instance, s, s, o);
  return {e.empty(), e};
}

}  // namespace og::grammar
