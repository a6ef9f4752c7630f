// The JSON schema compiler: walks a checked schema and writes one GBNF rule
// per subschema (deduplicated by body), $ref targets as named rules so
// recursion is just a rule that names itself. Keyword semantics and the
// canonical layout it writes are described in json_schema.h.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "grammar/json_schema_internal.h"

namespace og::grammar {

namespace {
JsonSchemaLimits g_schema_limits;
}  // namespace

const JsonSchemaLimits& json_schema_limits() { return g_schema_limits; }
void set_json_schema_limits(const JsonSchemaLimits& limits) { g_schema_limits = limits; }
namespace {

using namespace detail;

// Rule names the compiler writes itself; a schema's hints never take them.
const std::set<std::string> kReserved = {
    "root",   "ws",         "value",     "object",         "array",     "string",  "char",
    "number", "integer",    "boolean",   "null",           "key-char",  "date",    "date-year",
    "date-leap-year", "time", "date-time", "uuid",         "email"};

std::string sanitize(const std::string& hint) {
  std::string o;
  for (char c : hint) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (ok) o += c;
    else if (!o.empty() && o.back() != '-') o += '-';
  }
  while (!o.empty() && o.back() == '-') o.pop_back();
  if (o.size() > 40) o.resize(40);
  return o.empty() ? "r" : o;
}

class Compiler {
 public:
  Compiler(const Json& root, const JsonSchemaOptions& o) : root_(root), o_(o) {}

  std::string schema_grammar() {
    ref_names_[""] = "root";
    reserve_exact("root");
    Expr body = compile(root_, "", "root");
    if (!body) schema_fail("", "", "the schema matches no value");
    define("root", *body);
    std::vector<std::pair<std::string, std::string>> written;
    for (const auto& r : rules_)
      if (!r.body.empty()) written.push_back({r.name, r.body});
    std::vector<std::string> dead = unproductive_rules(written);
    if (!dead.empty()) {  // name the $ref target whose values would be infinitely deep, if one is
      std::string rule = dead[0], p;
      for (const auto& d : dead)
        if (rule_paths_.count(d)) {
          rule = d;
          p = rule_paths_[d];
          break;
        }
      schema_fail(p, "$ref", "the schema " + where(p) +
                                 " matches no finite value: it requires itself again at every level (grammar rule '" +
                                 rule + "')");
    }
    return text();
  }

  std::string object_grammar() {
    reserve_exact("root");
    define("root", prim("object"));
    return text();
  }

 private:
  struct Rule {
    std::string name, body;
  };
  const Json& root_;
  const JsonSchemaOptions& o_;
  std::vector<Rule> rules_;
  std::unordered_map<std::string, size_t> index_;           // name -> rules_
  std::unordered_map<std::string, std::string> by_body_;    // body -> name
  std::map<std::string, std::string> ref_names_;            // pointer -> rule ("" while it matches nothing)
  std::set<std::string> ref_used_;                          // ref rules named before they were defined
  std::map<std::string, std::string> rule_paths_;           // ref rule -> the schema's pointer (for errors)
  size_t bytes_ = 0;
  int depth_ = 0;
  int64_t work_ = 0;  // against o_.max_work

  // Counts n units of work (a subschema compiled, an enum value, a property):
  // the bound on compile time, whatever the schema's shape.
  void charge(size_t n, const std::string& path, const std::string& keyword) {
    work_ += static_cast<int64_t>(n);
    if (o_.work_spent) *o_.work_spent += static_cast<int64_t>(n);
    if (work_ > o_.max_work)
      schema_fail(path, keyword, "the schema is too large to compile: more than " + std::to_string(o_.max_work) +
                                     " subschemas, enum values and properties (max_work)");
  }
  void check_count(size_t n, int limit, const std::string& path, const std::string& keyword, const char* what,
                   const char* option) {
    if (n > static_cast<size_t>(limit))
      schema_fail(path, keyword, "'" + keyword + "' " + where(path) + " has " + std::to_string(n) + " " + what +
                                     ", above the limit " + std::to_string(limit) + " (" + option + ")");
  }

  std::string text() const {
    std::string out;
    for (const auto& r : rules_)
      if (!r.body.empty()) out += r.name + " ::= " + r.body + "\n";
    return out;
  }

  void reserve_exact(const std::string& name) {
    index_[name] = rules_.size();
    rules_.push_back({name, ""});
  }

  std::string reserve(const std::string& hint) {
    std::string base = sanitize(hint), name = base;
    for (int i = 1; index_.count(name) || kReserved.count(name); ++i) name = base + "-" + std::to_string(i);
    reserve_exact(name);
    return name;
  }

  void define(const std::string& name, const std::string& body) {
    bytes_ += name.size() + body.size() + 6;
    if (bytes_ > o_.max_grammar_bytes)
      schema_fail("", "", "the grammar for this schema grows past " + std::to_string(o_.max_grammar_bytes) + " bytes");
    rules_[index_.at(name)].body = body;
    by_body_.emplace(body, name);
  }

  // A rule for body (an existing one when the body is just a name or seen before).
  std::string rule(const std::string& hint, const std::string& body) {
    if (!body.empty() && body.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") ==
                             std::string::npos)
      return body;
    auto it = by_body_.find(body);
    if (it != by_body_.end()) return it->second;
    std::string name = reserve(hint);
    define(name, body);
    return name;
  }
  Expr rule(const std::string& hint, const Expr& body) {
    if (!body) return std::nullopt;
    if (body->empty()) return Expr("");
    return rule(hint, *body);
  }

  bool gemma() const { return o_.syntax == JsonSyntax::kGemma4; }
  std::string quote() const { return gbnf_literal(gemma() ? kGemmaQuote : "\""); }
  std::string ws() { return o_.max_whitespace > 0 && !gemma() ? prim("ws") : ""; }
  Expr sep() { return g_seq({ws(), gbnf_literal(","), ws()}); }

  std::string prim(const std::string& name);
  Expr compile(const Json& s, const std::string& path, const std::string& hint);
  Expr compile_flat(const Json& s, const std::string& path, const std::string& hint);
  Expr ref_rule(const std::string& ref, const std::string& path);
  Expr compile_values(const Json& s, const std::string& path);
  Expr literal(const Json& v);
  Expr compile_types(const Json& s, const std::string& path, const std::string& hint);
  Expr compile_object(const Json& s, const std::string& path, const std::string& hint);
  Expr object_members(const std::vector<Expr>& kvs, const std::vector<bool>& req, const Expr& extra_kv,
                      const std::string& hint);
  Expr key_not_in(const std::set<std::u32string>& names);
  Expr compile_array(const Json& s, const std::string& path, const std::string& hint);
  Expr compile_string(const Json& s, const std::string& path, const std::string& hint);
  Expr pattern_expr(const Regex& re, const std::string& hint);
  Expr regex_node(const RegexNode& n, const std::string& hint);
  Expr charset(const CharRanges& set, const std::string& hint);
  Expr format_expr(const std::string& f);
  Expr compile_number(const Json& s, const std::string& path, bool integer);
};

std::string Compiler::prim(const std::string& name) {
  if (index_.count(name)) return name;
  reserve_exact(name);  // before its dependencies: value, object and array name each other
  std::string w = o_.max_whitespace > 0 && !gemma() ? "ws" : "";
  auto s = [](std::vector<Expr> parts) { return *g_seq(parts); };
  std::string body;
  // Dependencies first, so rules appear before their users where possible.
  if (name == "ws") {
    body = "[ \\t\\n]{0," + std::to_string(o_.max_whitespace) + "}";
  } else if (name == "value") {
    for (const char* d : {"object", "array", "string", "number", "boolean", "null"}) prim(d);
    body = "object | array | string | number | boolean | null";
  } else if (name == "object") {
    const std::string key = gemma() ? prim("key-char") + "+" : prim("string");  // Gemma: bare keys
    if (!w.empty()) prim("ws");
    std::string kv = s({key, w, "\":\"", w, "value"});
    std::string more = "(" + s({w, "\",\"", w, kv}) + ")*";
    body = s({"\"{\"", w, "(" + s({kv, more, w}) + ")?", "\"}\""});
    prim("value");
  } else if (name == "array") {
    if (!w.empty()) prim("ws");
    std::string more = "(" + s({w, "\",\"", w, "value"}) + ")*";
    body = s({"\"[\"", w, "(" + s({"value", more, w}) + ")?", "\"]\""});
    prim("value");
  } else if (name == "string") {
    prim("char");
    body = quote() + " char* " + quote();
  } else if (name == "char" && gemma()) {
    body = "[^\"]";  // raw text; no '"', so the <|"|> marker is never spelled inside
  } else if (name == "key-char" && gemma()) {
    body = "[a-zA-Z0-9_-]";
  } else if (name == "null" && gemma()) {
    body = "\"null\" | \"None\"";
  } else if (name == "char") {
    // Any character raw but " \ and controls, or an escape; \u escapes of
    // UTF-16 surrogates are left out so lengths count code points.
    body = "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-CefEF] [0-9a-fA-F]{3,3} | [dD] [0-7] "
           "[0-9a-fA-F]{2,2}))";
  } else if (name == "key-char") {
    body = "[^\"\\\\\\x00-\\x1F]";
  } else if (name == "number") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?";
  } else if (name == "integer") {
    body = "\"-\"? (\"0\" | [1-9] [0-9]{0," + std::to_string(kMaxIntegerDigits - 1) + "})";
  } else if (name == "boolean") {
    body = "\"true\" | \"false\"";
  } else if (name == "null") {
    body = "\"null\"";
  } else if (name == "date-year") {
    body = "\"000\" [1-9] | \"00\" [1-9] [0-9] | \"0\" [1-9] [0-9]{2,2} | [1-9] [0-9]{3,3}";
  } else if (name == "date-leap-year") {
    const char* leap = "(\"0\" [48] | [2468] [048] | [13579] [26])";
    body = std::string("[0-9]{2,2} ") + leap + " | " + leap + " \"00\"";
  } else if (name == "date") {
    prim("date-year");
    prim("date-leap-year");
    body = "date-year \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
           "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | "
           "\"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])) | date-leap-year \"-02-29\"";
  } else if (name == "time" || name == "uuid" || name == "email") {
    Regex re = regex_parse(format_pattern(name), "", 100);
    body = *pattern_expr(re, name);
  } else if (name == "date-time") {
    prim("date");
    prim("time");
    body = "date \"T\" time";
  }
  define(name, body);
  return name;
}

Expr Compiler::compile(const Json& s, const std::string& path, const std::string& hint) {
  struct Depth {
    int& d;
    ~Depth() { --d; }
  } guard{++depth_};
  charge(1, path, "");
  if (depth_ > 4 * o_.max_depth)
    schema_fail(path, "", "the schema nests (through $ref, allOf, anyOf) deeper than " +
                              std::to_string(4 * o_.max_depth) + " " + where(path));
  if (s.is_object() && (s.contains("$ref") || s.contains("allOf"))) {
    bool only_ref = !s.contains("allOf");
    for (auto it = s.begin(); only_ref && it != s.end(); ++it)
      only_ref = it.key() == "$ref" || it.key() == "$defs" || it.key() == "definitions" || is_annotation(it.key());
    if (only_ref) return ref_rule(s["$ref"].get<std::string>(), path);
    return compile_flat(merge_parts({s}, root_, o_, path), path, hint);
  }
  return compile_flat(s, path, hint);
}

Expr Compiler::ref_rule(const std::string& ref, const std::string& path) {
  auto [target, ptr] = resolve_ref(root_, ref, path);
  auto it = ref_names_.find(ptr);
  if (it != ref_names_.end()) {
    if (it->second.empty()) return std::nullopt;
    ref_used_.insert(it->second);
    return it->second;
  }
  std::string name = reserve(ptr.substr(ptr.rfind('/') + 1));
  ref_names_[ptr] = name;
  rule_paths_[name] = ptr;
  Expr body = compile(*target, ptr, name);
  if (!body) {
    if (ref_used_.count(name))
      schema_fail(ptr, "$ref", "the schema " + where(ptr) + " (named by '$ref') matches no finite value");
    ref_names_[ptr] = "";  // the reserved rule stays empty and is not written
    return std::nullopt;
  }
  define(name, body->empty() ? "\"\"" : *body);
  return name;
}

Expr Compiler::compile_flat(const Json& s, const std::string& path, const std::string& hint) {
  if (s.is_boolean()) return s.get<bool>() ? Expr(prim("value")) : std::nullopt;
  bool any = s.contains("anyOf"), one = s.contains("oneOf");
  if (any || one) {
    Json branches = Json::array();
    std::string kw = any ? "anyOf" : "oneOf";
    if (any && one) {
      check_count(s["anyOf"].size() * s["oneOf"].size(), o_.max_branches, path, kw, "branches (with oneOf)",
                  "max_branches");
      for (const auto& x : s["anyOf"])
        for (const auto& y : s["oneOf"]) branches.push_back(Json{{"allOf", Json::array({x, y})}});
    } else {
      branches = s[kw];
    }
    check_count(branches.size(), o_.max_branches, path, kw, "branches", "max_branches");
    Json siblings = Json::object();
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it.key() != "anyOf" && it.key() != "oneOf" && it.key() != "$defs" && it.key() != "definitions" &&
          !is_annotation(it.key()))
        siblings[it.key()] = it.value();
    std::vector<Expr> alts;
    for (size_t i = 0; i < branches.size(); ++i) {
      std::string bp = ptr_join(ptr_join(path, kw), std::to_string(i)), bh = hint + "-" + std::to_string(i);
      alts.push_back(rule(bh, siblings.empty() ? compile(branches[i], bp, bh)
                                               : compile_flat(merge_parts({siblings, branches[i]}, root_, o_, bp), bp, bh)));
    }
    return g_alt(alts);
  }
  if (s.contains("enum") || s.contains("const")) return compile_values(s, path);
  return compile_types(s, path, hint);
}

Expr Compiler::compile_values(const Json& s, const std::string& path) {
  Json rest = Json::object();
  for (auto it = s.begin(); it != s.end(); ++it)
    if (it.key() != "enum" && it.key() != "const") rest[it.key()] = it.value();
  std::vector<Json> candidates;
  if (s.contains("const")) candidates.push_back(s["const"]);
  else candidates.assign(s["enum"].begin(), s["enum"].end());
  if (s.contains("const") && s.contains("enum")) {
    bool in = false;
    for (const auto& e : s["enum"]) in = in || json_equal(e, s["const"]);
    if (!in) candidates.clear();
  }
  check_count(candidates.size(), o_.max_enum_values, path, "enum", "values", "max_enum_values");
  charge(candidates.size(), path, "enum");
  // Scalars (every value in Gemma's syntax) go into one trie; objects and
  // arrays, whose layout has whitespace, stay alternatives of their own.
  std::vector<std::string> texts;
  std::vector<Expr> alts;
  size_t bytes = 0;
  for (const auto& v : candidates) {
    if (!validate_at(v, rest, root_, o_).empty()) continue;
    Expr e = literal(v);
    if (!e) continue;  // a Gemma string holding its own quote marker
    bytes += e->size();
    if (bytes > o_.max_grammar_bytes)
      schema_fail(path, "enum", "the values " + where(path) + " grow the grammar past " +
                                    std::to_string(o_.max_grammar_bytes) + " bytes");
    if (gemma()) texts.push_back(*gemma_value_text(v));
    else if (v.is_object() || v.is_array()) alts.push_back(e);
    else texts.push_back(v.dump());
  }
  check_count(alts.size(), o_.max_branches, path, "enum", "object and array values", "max_branches");
  alts.push_back(literal_trie(std::move(texts), [&](const std::string& body) { return rule("enum", body); }));
  return g_alt(alts);
}

Expr Compiler::literal(const Json& v) {
  if (gemma()) {
    const std::optional<std::string> t = gemma_value_text(v);
    return t ? Expr(gbnf_literal(*t)) : std::nullopt;
  }
  if (v.is_object() || v.is_array()) {
    bool obj = v.is_object();
    std::vector<Expr> parts = {gbnf_literal(obj ? "{" : "["), ws()};
    size_t i = 0;
    for (auto it = v.begin(); it != v.end(); ++it, ++i) {
      if (i) parts.push_back(sep());
      if (obj) {
        parts.insert(parts.end(), {gbnf_literal(Json(it.key()).dump()), ws(), gbnf_literal(":"), ws()});
      }
      parts.push_back(literal(it.value()));
    }
    if (i) parts.push_back(ws());
    parts.push_back(gbnf_literal(obj ? "}" : "]"));
    return g_seq(parts);
  }
  return gbnf_literal(v.dump());
}

Expr Compiler::compile_types(const Json& s, const std::string& path, const std::string& hint) {
  std::set<std::string> types = {"object", "array", "string", "number", "boolean", "null"};
  if (s.contains("type")) {
    types.clear();
    if (s["type"].is_string()) types.insert(s["type"].get<std::string>());
    else for (const auto& t : s["type"]) types.insert(t.get<std::string>());
  }
  bool constrained = s.contains("type");
  for (auto it = s.begin(); it != s.end() && !constrained; ++it)
    constrained = is_object_keyword(it.key()) || is_array_keyword(it.key()) || is_string_keyword(it.key()) ||
                  is_number_keyword(it.key());
  if (!constrained) return prim("value");
  std::vector<Expr> alts;
  // One type: its expression; several: a rule each.
  bool one = types.size() == 1 || (types.size() == 2 && types.count("number") && types.count("integer"));
  auto part = [&](const char* type, const Expr& e) { return one ? e : rule(hint + "-" + type, e); };
  if (types.count("object")) alts.push_back(part("object", compile_object(s, path, hint)));
  if (types.count("array")) alts.push_back(part("array", compile_array(s, path, hint)));
  if (types.count("string")) alts.push_back(part("string", compile_string(s, path, hint)));
  if (types.count("number")) alts.push_back(part("number", compile_number(s, path, false)));
  else if (types.count("integer")) alts.push_back(part("integer", compile_number(s, path, true)));
  if (types.count("boolean")) alts.push_back(prim("boolean"));
  if (types.count("null")) alts.push_back(prim("null"));
  return g_alt(alts);
}

bool nullable(const RegexNode& n) {
  switch (n.kind) {
    case RegexNode::Kind::Set: return false;
    case RegexNode::Kind::Seq:
      return std::all_of(n.kids.begin(), n.kids.end(), [](const RegexNode& k) { return nullable(k); });
    case RegexNode::Kind::Alt:
      return std::any_of(n.kids.begin(), n.kids.end(), [](const RegexNode& k) { return nullable(k); });
    case RegexNode::Kind::Repeat: return n.min == 0 || n.max == 0 || nullable(n.kids[0]);
  }
  return false;
}

// The same language without the empty string.
RegexNode nonempty(const RegexNode& n) {
  RegexNode out;
  switch (n.kind) {
    case RegexNode::Kind::Set:
      return n;
    case RegexNode::Kind::Alt:
      out.kind = RegexNode::Kind::Alt;
      for (const auto& k : n.kids) out.kids.push_back(nonempty(k));
      return out;
    case RegexNode::Kind::Seq: {
      if (!nullable(n)) return n;
      if (n.kids.empty()) {  // only "": nothing is left
        out.kind = RegexNode::Kind::Set;
        return out;
      }
      // a rest minus "" = (a minus "") rest | (rest minus "")   (a and rest both match "")
      RegexNode rest;
      rest.kind = RegexNode::Kind::Seq;
      rest.kids.assign(n.kids.begin() + 1, n.kids.end());
      RegexNode first;
      first.kind = RegexNode::Kind::Seq;
      first.kids.push_back(nonempty(n.kids[0]));
      first.kids.insert(first.kids.end(), rest.kids.begin(), rest.kids.end());
      out.kind = RegexNode::Kind::Alt;
      out.kids.push_back(std::move(first));
      out.kids.push_back(nonempty(rest));
      return out;
    }
    case RegexNode::Kind::Repeat:
      out = n;
      if (n.max == 0) {
        out = RegexNode();
        out.kind = RegexNode::Kind::Set;
        return out;
      }
      if (nullable(n.kids[0])) {
        out.kids[0] = nonempty(n.kids[0]);
        out.min = 1;
      } else {
        out.min = std::max(n.min, 1);
      }
      return out;
  }
  return n;
}

int64_t count_of(const Json& v) {
  if (v.is_number_float()) return static_cast<int64_t>(std::min(v.get<double>(), 1e18));
  if (v.is_number_unsigned()) return static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), uint64_t(1) << 62));
  return v.get<int64_t>();
}

long double wide(const Json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

bool has_keyword(const Json& s, bool (*kind)(const std::string&)) {
  for (auto it = s.begin(); it != s.end(); ++it)
    if (kind(it.key())) return true;
  return false;
}

Expr Compiler::compile_object(const Json& s, const std::string& path, const std::string& hint) {
  if (!has_keyword(s, is_object_keyword)) return prim("object");
  Json props = s.value("properties", Json::object());
  Json req_list = s.value("required", Json::array());
  std::set<std::string> required;
  for (const auto& r : req_list) required.insert(r.get<std::string>());
  // Each optional property is an alternative at the object's start: bounded,
  // so the matcher's live parses stay well under limits.max_stacks.
  check_count(props.size(), o_.max_properties, path, "properties", "properties", "max_properties");
  check_count(required.size(), o_.max_properties, path, "required", "names", "max_properties");
  charge(props.size() + required.size(), path, "properties");
  Json extra = s.value("additionalProperties", Json(true));
  std::optional<Expr> extra_value;  // compiled when first needed
  auto extra_expr = [&]() -> Expr {
    if (!extra_value)
      extra_value = rule(hint + "-additional", compile(extra, ptr_join(path, "additionalProperties"), hint + "-additional"));
    return *extra_value;
  };
  auto kv = [&](const std::string& key, const Expr& v) {
    if (gemma() && key.find(kGemmaQuote) != std::string::npos)
      schema_fail(path, "properties", "a property name " + where(path) + " holds Gemma's quote marker <|\"|>");
    return g_seq({gbnf_literal(gemma() ? gemma_key_text(key) : Json(key).dump()), ws(), gbnf_literal(":"), ws(), v});
  };
  std::vector<Expr> kvs;
  std::vector<bool> req;
  std::set<std::u32string> names;
  std::vector<std::string> order;  // JSON: the schema's order; Gemma: its template's (sorted)
  if (gemma()) order = gemma_key_order(props);
  else for (auto it = props.begin(); it != props.end(); ++it) order.push_back(it.key());
  for (const std::string& key : order) {
    auto name = utf8_decode(key);
    if (!name) schema_fail(path, "properties", "a property name " + where(path) + " is not valid UTF-8");
    names.insert(*name);
    bool r = required.count(key) != 0;
    std::string h = hint + "-" + key;
    Expr v = rule(h, compile(props[key], ptr_join(ptr_join(path, "properties"), key), h));
    if (!v) {
      if (r) return std::nullopt;
      continue;
    }
    kvs.push_back(kv(key, v));
    req.push_back(r);
  }
  for (const auto& r : req_list) {
    std::string key = r.get<std::string>();
    if (props.contains(key)) continue;
    auto name = utf8_decode(key);
    if (!name) schema_fail(path, "required", "a required name " + where(path) + " is not valid UTF-8");
    names.insert(*name);
    Expr v = extra_expr();
    if (!v) return std::nullopt;
    kvs.push_back(kv(key, v));
    req.push_back(true);
  }
  Expr extra_kv;
  if (!(extra.is_boolean() && !extra.get<bool>())) {
    Expr v = extra_expr();
    if (v) extra_kv = rule(hint + "-additional-kv", g_seq({key_not_in(names), ws(), gbnf_literal(":"), ws(), v}));
  }
  bool can_be_empty = std::find(req.begin(), req.end(), true) == req.end();
  Expr members = object_members(kvs, req, extra_kv, hint);
  std::string open = gbnf_literal("{"), close = gbnf_literal("}");
  if (!members) return g_seq({open, ws(), close});
  if (can_be_empty) return g_seq({open, ws(), g_rep(g_seq({members, ws()}), 0, 1), close});
  return g_seq({open, ws(), members, ws(), close});
}

// The members of an object, without the empty alternative: listed ones in
// order, each optional one skippable, then additional ones. tail[j] is
// "members j.. each after a comma"; one alternative per possible first member.
Expr Compiler::object_members(const std::vector<Expr>& kvs, const std::vector<bool>& req, const Expr& extra_kv,
                              const std::string& hint) {
  size_t n = kvs.size();
  size_t first_req = std::find(req.begin(), req.end(), true) - req.begin();
  auto piece = [&](size_t j) { return req[j] ? g_seq({sep(), kvs[j]}) : g_rep(g_seq({sep(), kvs[j]}), 0, 1); };
  Expr extra_tail = extra_kv ? g_rep(g_seq({sep(), extra_kv}), 0, -1) : Expr("");
  // Alternatives start at members 0..last.
  size_t last = first_req < n ? first_req : (n ? n - 1 : 0);
  std::vector<Expr> tail(n + 1);
  if (n) {
    std::vector<Expr> rest;
    for (size_t k = last + 1; k < n; ++k) rest.push_back(piece(k));
    rest.push_back(extra_tail);
    tail[last + 1] = g_seq(rest);
    bool shared = last >= 1;  // several alternatives share the tails: name them
    if (shared) tail[last + 1] = rule(hint + "-rest", tail[last + 1]);
    for (size_t j = last; j >= 1; --j) tail[j] = rule(hint + "-rest", g_seq({piece(j), tail[j + 1]}));
  }
  std::vector<Expr> alts;
  for (size_t j = 0; n && j <= last; ++j) alts.push_back(g_seq({kvs[j], tail[j + 1]}));
  if (first_req == n && extra_kv) alts.push_back(g_seq({extra_kv, extra_tail}));
  return g_alt(alts);
}

Expr Compiler::key_not_in(const std::set<std::u32string>& names) {
  if (names.empty()) return gemma() ? Expr(prim("key-char") + "+") : Expr(prim("string"));
  constexpr size_t kMaxName = 1024;
  struct Node {
    bool terminal = false;
    std::map<char32_t, size_t> kids;
  };
  std::vector<Node> trie(1);
  // The characters of keys written raw (Gemma: bare keys).
  const CharRanges key_chars = gemma() ? CharRanges{{'-', '-'}, {'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
                                       : ranges_complement({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  for (const auto& name : names) {
    // A raw key never holds a character outside key_chars, so it never spells such a name.
    if (std::any_of(name.begin(), name.end(), [&](char32_t c) { return !ranges_contain(key_chars, c); })) continue;
    if (name.size() > kMaxName)
      schema_fail("", "additionalProperties", "property names longer than " + std::to_string(kMaxName) +
                                                  " characters next to additional properties are not supported");
    size_t cur = 0;
    for (char32_t c : name) {
      auto it = trie[cur].kids.find(c);
      if (it == trie[cur].kids.end()) {
        trie.push_back({});
        it = trie[cur].kids.emplace(c, trie.size() - 1).first;
      }
      cur = it->second;
    }
    trie[cur].terminal = true;
  }
  std::string kc = prim("key-char");
  // Keys written raw: any character but " \ and controls, never one of names.
  std::function<Expr(size_t, int)> node = [&](size_t i, int depth) -> Expr {
    std::vector<Expr> alts;
    if (!trie[i].terminal) alts.push_back(Expr(""));
    CharRanges kids;
    for (const auto& [c, k] : trie[i].kids) kids.push_back({c, c});
    const CharRanges first = ranges_minus(key_chars, ranges_normalize(kids));
    if (!first.empty()) {
      const bool open_ended = first.back().second == 0x10FFFF;  // JSON: a negated class is shorter
      alts.push_back(g_seq({open_ended ? gbnf_class(ranges_complement(first), true) : gbnf_class(first, false), kc + "*"}));
    }
    for (const auto& [c, k] : trie[i].kids) alts.push_back(g_seq({gbnf_literal(utf8_encode(c)), node(k, depth + 1)}));
    Expr e = g_alt(alts);
    return depth % 16 == 15 ? rule("key", e) : e;  // bounded nesting
  };
  if (gemma()) return g_seq({node(0, 0)});
  return g_seq({gbnf_literal("\""), node(0, 0), gbnf_literal("\"")});
}

Expr Compiler::compile_array(const Json& s, const std::string& path, const std::string& hint) {
  if (!has_keyword(s, is_array_keyword)) return prim("array");
  auto bound = [&](const char* kw, int64_t def) {
    if (!s.contains(kw)) return def;
    int64_t v = count_of(s[kw]);
    if (v > o_.max_repetition)
      schema_fail(path, kw, std::string("'") + kw + "' " + where(path) + " is above the limit " +
                                std::to_string(o_.max_repetition));
    return v;
  };
  int64_t min_items = bound("minItems", 0);
  int64_t max_items = s.contains("maxItems") ? count_of(s["maxItems"]) : -1;
  Json prefix = s.value("prefixItems", Json::array());
  std::vector<Expr> p;
  int64_t cap = -1;  // no array is longer (an item schema matches nothing)
  for (size_t i = 0; i < prefix.size(); ++i) {
    std::string h = hint + "-" + std::to_string(i);
    Expr e = rule(h, compile(prefix[i], ptr_join(ptr_join(path, "prefixItems"), std::to_string(i)), h));
    if (!e) {
      cap = static_cast<int64_t>(i);
      break;
    }
    p.push_back(e);
  }
  int64_t k = static_cast<int64_t>(p.size());
  Expr rest;
  if (cap < 0) {
    rest = rule(hint + "-item", compile(s.value("items", Json(true)), ptr_join(path, "items"), hint + "-item"));
    if (!rest) cap = k;
  }
  int64_t max_e = max_items;
  if (cap >= 0) max_e = max_e < 0 ? cap : std::min(max_e, cap);
  if (max_e > o_.max_repetition) bound("maxItems", 0);  // throws: the limit
  if (max_e >= 0 && min_items > max_e) return std::nullopt;
  std::string open = gbnf_literal("["), close = gbnf_literal("]");
  if (max_e == 0) return g_seq({open, ws(), close});
  // after(i): the items from position i on, each after a comma.
  std::function<Expr(int64_t)> after = [&](int64_t i) -> Expr {
    if (max_e >= 0 && i >= max_e) return Expr("");
    if (i >= k) return g_rep(g_seq({sep(), rest}), int(std::max<int64_t>(0, min_items - i)), max_e < 0 ? -1 : int(max_e - i));
    Expr piece = g_seq({sep(), p[i], after(i + 1)});
    Expr e = i < min_items ? piece : g_rep(piece, 0, 1);
    return i % 8 == 7 ? rule(hint + "-after", e) : e;  // bounded nesting
  };
  Expr items = g_seq({k > 0 ? p[0] : rest, after(1)});
  if (min_items == 0) return g_seq({open, ws(), g_rep(g_seq({items, ws()}), 0, 1), close});
  return g_seq({open, ws(), items, ws(), close});
}

Expr Compiler::compile_string(const Json& s, const std::string& path, const std::string& hint) {
  if (!has_keyword(s, is_string_keyword)) return prim("string");
  bool has_len = s.contains("minLength") || s.contains("maxLength");
  int64_t min_len = s.contains("minLength") ? count_of(s["minLength"]) : 0;
  int64_t max_len = s.contains("maxLength") ? count_of(s["maxLength"]) : -1;
  bool len_free = min_len == 0 && max_len < 0;
  Expr body;
  if (s.contains("pattern") && s.contains("format"))
    schema_fail(path, "pattern", "'pattern' together with 'format' " + where(path) + " is not supported");
  if (s.contains("pattern")) {
    if (!len_free)
      schema_fail(path, "pattern", "'pattern' together with 'minLength'/'maxLength' " + where(path) + " is not supported");
    body = pattern_expr(regex_parse(s["pattern"].get<std::string>(), path, o_.max_repetition), hint);
  } else if (s.contains("format")) {
    std::string f = s["format"].get<std::string>();
    int fixed = format_fixed_length(f);
    if (has_len && !len_free) {
      if (fixed < 0)
        schema_fail(path, "format", "format \"" + f + "\" together with 'minLength'/'maxLength' " + where(path) +
                                        " is not supported");
      if (fixed < min_len || (max_len >= 0 && fixed > max_len)) return std::nullopt;
    }
    body = format_expr(f);
  } else {
    for (int64_t v : {min_len, max_len})
      if (v > o_.max_repetition)
        schema_fail(path, v == min_len ? "minLength" : "maxLength",
                    "a string length bound " + where(path) + " is above the limit " + std::to_string(o_.max_repetition));
    body = g_rep(prim("char"), int(min_len), int(max_len));
  }
  return g_seq({quote(), body, quote()});
}

Expr Compiler::pattern_expr(const Regex& re, const std::string& hint) {
  std::vector<Expr> alts;
  for (const auto& b : re.branches) {
    Expr any = b.anchored_start && b.anchored_end ? Expr("") : g_rep(prim("char"), 0, -1);
    alts.push_back(g_seq({b.anchored_start ? Expr("") : any, regex_node(b.node, hint), b.anchored_end ? Expr("") : any}));
  }
  return g_alt(alts);
}

Expr Compiler::regex_node(const RegexNode& n, const std::string& hint) {
  std::vector<Expr> kids;
  switch (n.kind) {
    case RegexNode::Kind::Set:
      return charset(n.set, hint);
    case RegexNode::Kind::Seq:
      for (const auto& k : n.kids) kids.push_back(regex_node(k, hint));
      return g_seq(kids);
    case RegexNode::Kind::Alt:
      for (const auto& k : n.kids) kids.push_back(regex_node(k, hint));
      return g_alt(kids);
    case RegexNode::Kind::Repeat:
      // x{m,n} with x matching "" is (x minus "")){0,n}: the matcher refuses
      // * and + over what can match "", and the bounded form is less ambiguous.
      if (nullable(n.kids[0])) return g_rep(regex_node(nonempty(n.kids[0]), hint), 0, n.max);
      return g_rep(regex_node(n.kids[0], hint), n.min, n.max);
  }
  return std::nullopt;
}

// The JSON string encodings of a set of characters: raw where JSON allows,
// else the one escape nlohmann::json also writes (\" \\ \n ... \u001f).
Expr Compiler::charset(const CharRanges& set, const std::string& hint) {
  if (gemma()) {  // raw, no escapes; never '"' (see JsonSyntax)
    CharRanges raw = ranges_minus(set, {{'"', '"'}});
    if (raw.empty()) return std::nullopt;
    if (raw.size() == 1 && raw[0].first == raw[0].second) return gbnf_literal(utf8_encode(raw[0].first));
    return raw.back().second == 0x10FFFF ? gbnf_class(ranges_complement(raw), true) : gbnf_class(raw, false);
  }
  CharRanges raw = ranges_minus(set, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  std::vector<Expr> alts;
  if (raw.size() == 1 && raw[0].first == raw[0].second) alts.push_back(gbnf_literal(utf8_encode(raw[0].first)));
  else if (!raw.empty())
    alts.push_back(raw.back().second == 0x10FFFF ? gbnf_class(ranges_complement(raw), true) : gbnf_class(raw, false));
  if (ranges_contain(set, '"')) alts.push_back(gbnf_literal("\\\""));
  if (ranges_contain(set, '\\')) alts.push_back(gbnf_literal("\\\\"));
  for (char32_t c = 0; c < 0x20; ++c) {
    if (!ranges_contain(set, c)) continue;
    const char* shortcut = c == 8 ? "\\b" : c == 9 ? "\\t" : c == 10 ? "\\n" : c == 12 ? "\\f" : c == 13 ? "\\r" : nullptr;
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
    alts.push_back(gbnf_literal(shortcut ? shortcut : buf));
  }
  Expr e = g_alt(alts);
  return alts.size() > 1 ? rule(hint + "-char", e) : e;
}

Expr Compiler::format_expr(const std::string& f) { return prim(f); }

Expr Compiler::compile_number(const Json& s, const std::string& path, bool integer) {
  if (!has_keyword(s, is_number_keyword)) return prim(integer ? "integer" : "number");
  if (integer) {
    const long double limit = 1e18L - 1;
    long double lo = -limit, hi = limit;
    if (s.contains("minimum")) lo = std::max(lo, std::ceil(wide(s["minimum"])));
    if (s.contains("exclusiveMinimum")) lo = std::max(lo, std::floor(wide(s["exclusiveMinimum"])) + 1);
    if (s.contains("maximum")) hi = std::min(hi, std::floor(wide(s["maximum"])));
    if (s.contains("exclusiveMaximum")) hi = std::min(hi, std::ceil(wide(s["exclusiveMaximum"])) - 1);
    if (lo > hi) return std::nullopt;
    return integer_range_grammar(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
  }
  std::optional<DecimalBound> lo, hi;
  const Json* lo_v = nullptr;
  const Json* hi_v = nullptr;
  auto take = [&](const char* kw, bool exclusive, bool lower) {
    if (!s.contains(kw)) return;
    const Json& v = s[kw];
    Decimal d = decimal_of(v);
    if (static_cast<int>(d.i.size()) <= kMaxBoundedNumberDigits && decimal_significant_digits(d) > kMaxBoundedNumberDigits)
      schema_fail(path, kw, std::string("'") + kw + "' " + v.dump() + " " + where(path) + " has more than " +
                                std::to_string(kMaxBoundedNumberDigits) +
                                " significant digits: a number grammar over it could not be exact");
    auto& b = lower ? lo : hi;
    const Json*& bv = lower ? lo_v : hi_v;
    int c = bv ? json_number_cmp(v, *bv) : 0;
    if (!bv || (lower ? c > 0 : c < 0) || (c == 0 && exclusive)) {
      b = DecimalBound{d, exclusive};
      bv = &v;
    }
  };
  take("minimum", false, true);
  take("exclusiveMinimum", true, true);
  take("maximum", false, false);
  take("exclusiveMaximum", true, false);
  return number_range_grammar(lo, hi);
}

}  // namespace

std::string json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& o) {
  OG_CHECK(o.max_whitespace >= 0 && o.max_repetition >= 0 && o.max_depth > 0, "bad JsonSchemaOptions");
  Json s = o.strict ? with_strict_defaults(schema, o.max_depth + 1) : schema;
  check_schema(s, o);
  return Compiler(s, o).schema_grammar();
}

std::string json_object_grammar(const JsonSchemaOptions& o) {
  Json s = Json::object();
  return Compiler(s, o).object_grammar();
}

}  // namespace og::grammar
