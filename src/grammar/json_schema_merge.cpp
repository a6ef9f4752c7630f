// allOf (and $ref with siblings) as one schema: the parts' keywords merged so
// that the result accepts exactly the values every part accepts. Subschemas
// that meet (a property both parts describe, items, union branches) are not
// merged eagerly but joined as {"allOf": [a, b]} for the compiler to merge
// when it gets there, so recursive schemas merge lazily.
#include <algorithm>
#include <set>

#include "grammar/json_schema_internal.h"

namespace og::grammar::detail {
namespace {

constexpr size_t kMaxProduct = 256;  // branches of anyOf x anyOf after a merge

struct Merger {
  const Json& root;
  const JsonSchemaOptions& o;
  const std::string& path;

  // Both must hold: true is neutral, false absorbs.
  static Json both(const Json& a, const Json& b) {
    if (a.is_boolean() && a.get<bool>()) return b;
    if (b.is_boolean() && b.get<bool>()) return a;
    if (a.is_boolean() || b.is_boolean()) return false;
    return Json{{"allOf", Json::array({a, b})}};
  }

  void flatten(const Json& s, std::vector<Json>& out, int depth) {
    if (depth > o.max_depth)
      schema_fail(path, "allOf", "allOf/$ref " + where(path) + " nest deeper than " + std::to_string(o.max_depth));
    if (s.is_boolean()) {
      out.push_back(s);
      return;
    }
    Json base = Json::object();
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k != "$ref" && k != "allOf" && k != "$defs" && k != "definitions" && !is_annotation(k)) base[k] = it.value();
    }
    out.push_back(std::move(base));
    if (s.contains("$ref")) flatten(*resolve_ref(root, s["$ref"].get<std::string>(), path).first, out, depth + 1);
    if (s.contains("allOf"))
      for (const auto& part : s["allOf"]) flatten(part, out, depth + 1);
  }

  // additionalProperties as it applies to names a schema does not list.
  static Json extra(const Json& s) { return s.contains("additionalProperties") ? s["additionalProperties"] : Json(true); }

  static Json item_at(const Json& s, size_t i) {
    if (s.contains("prefixItems") && i < s["prefixItems"].size()) return s["prefixItems"][i];
    return s.contains("items") ? s["items"] : Json(true);
  }

  void types(const Json& a, const Json& b, Json& out) {
    auto set_of = [](const Json& t) {
      std::set<std::string> s;
      if (t.is_string()) s.insert(t.get<std::string>());
      else for (const auto& x : t) s.insert(x.get<std::string>());
      return s;
    };
    if (!a.contains("type") || !b.contains("type")) {
      if (a.contains("type")) out["type"] = a["type"];
      if (b.contains("type")) out["type"] = b["type"];
      return;
    }
    std::set<std::string> ta = set_of(a["type"]), tb = set_of(b["type"]);
    Json t = Json::array();
    for (const char* name : {"object", "array", "string", "number", "integer", "boolean", "null"}) {
      std::string n = name;
      bool in = ta.count(n) && tb.count(n);
      if (n == "integer") in = in || (ta.count("integer") && tb.count("number")) || (ta.count("number") && tb.count("integer"));
      if (in) t.push_back(n);
    }
    out["type"] = t;
  }

  void properties(const Json& a, const Json& b, Json& out) {
    if (!a.contains("properties") && !b.contains("properties")) return;
    Json pa = a.value("properties", Json::object()), pb = b.value("properties", Json::object());
    Json props = Json::object();
    for (auto it = pa.begin(); it != pa.end(); ++it)
      props[it.key()] = both(it.value(), pb.contains(it.key()) ? pb[it.key()] : extra(b));
    for (auto it = pb.begin(); it != pb.end(); ++it)
      if (!pa.contains(it.key())) props[it.key()] = both(it.value(), extra(a));
    out["properties"] = props;
  }

  void bound(const Json& a, const Json& b, Json& out, const char* kw, bool take_max) {
    if (!a.contains(kw) && !b.contains(kw)) return;
    if (!a.contains(kw) || !b.contains(kw)) {
      out[kw] = a.contains(kw) ? a[kw] : b[kw];
      return;
    }
    int c = json_number_cmp(a[kw], b[kw]);
    out[kw] = (c >= 0) == take_max ? a[kw] : b[kw];
  }

  Json merge(const Json& a, const Json& b) {
    if (a.is_boolean() || b.is_boolean()) return both(a, b);
    Json out = Json::object();
    types(a, b, out);
    if (out.contains("type") && out["type"].is_array() && out["type"].empty()) return false;
    properties(a, b, out);
    if (a.contains("additionalProperties") || b.contains("additionalProperties"))
      out["additionalProperties"] = both(extra(a), extra(b));
    if (a.contains("required") || b.contains("required")) {
      Json req = a.value("required", Json::array());
      for (const auto& r : b.value("required", Json::array()))
        if (std::find(req.begin(), req.end(), r) == req.end()) req.push_back(r);
      out["required"] = req;
    }
    if (a.contains("prefixItems") || b.contains("prefixItems")) {
      size_t n = std::max(a.value("prefixItems", Json::array()).size(), b.value("prefixItems", Json::array()).size());
      Json p = Json::array();
      for (size_t i = 0; i < n; ++i) p.push_back(both(item_at(a, i), item_at(b, i)));
      out["prefixItems"] = p;
    }
    if (a.contains("items") || b.contains("items")) out["items"] = both(a.value("items", Json(true)), b.value("items", Json(true)));
    for (const char* kw : {"minItems", "minLength", "minimum", "exclusiveMinimum"}) bound(a, b, out, kw, true);
    for (const char* kw : {"maxItems", "maxLength", "maximum", "exclusiveMaximum"}) bound(a, b, out, kw, false);
    if (a.contains("const") && b.contains("const") && !json_equal(a["const"], b["const"])) return false;
    if (a.contains("const") || b.contains("const")) out["const"] = a.contains("const") ? a["const"] : b["const"];
    if (a.contains("enum") && b.contains("enum")) {
      Json e = Json::array();
      for (const auto& x : a["enum"])
        for (const auto& y : b["enum"])
          if (json_equal(x, y)) {
            e.push_back(x);
            break;
          }
      out["enum"] = e;
    } else if (a.contains("enum") || b.contains("enum")) {
      out["enum"] = a.contains("enum") ? a["enum"] : b["enum"];
    }
    for (const char* kw : {"pattern", "format"}) {
      if (a.contains(kw) && b.contains(kw) && a[kw] != b[kw])
        schema_fail(path, kw, std::string("allOf ") + where(path) + " joins two different '" + kw + "' values (" +
                                  a[kw].dump() + " and " + b[kw].dump() + "): not supported");
      if (a.contains(kw) || b.contains(kw)) out[kw] = a.contains(kw) ? a[kw] : b[kw];
    }
    for (const char* kw : {"anyOf", "oneOf"}) {
      if (a.contains(kw) && b.contains(kw)) {
        if (a[kw].size() * b[kw].size() > kMaxProduct)
          schema_fail(path, kw, std::string("allOf ") + where(path) + " joins two '" + kw + "' with more than " +
                                    std::to_string(kMaxProduct) + " combinations");
        Json p = Json::array();
        for (const auto& x : a[kw])
          for (const auto& y : b[kw]) p.push_back(both(x, y));
        out[kw] = p;
      } else if (a.contains(kw) || b.contains(kw)) {
        out[kw] = a.contains(kw) ? a[kw] : b[kw];
      }
    }
    return out;
  }
};

}  // namespace

Json merge_parts(const std::vector<Json>& parts, const Json& root, const JsonSchemaOptions& o, const std::string& path) {
  Merger m{root, o, path};
  std::vector<Json> flat;
  for (const auto& p : parts) m.flatten(p, flat, 0);
  Json out = true;
  for (const auto& f : flat) out = m.merge(out, f);
  return out;
}

}  // namespace og::grammar::detail
