// The property test of the JSON schema compiler: several hundred random
// schemas of the supported subset (seeded), documents generated FROM each
// grammar by a random walk over its rules, and mutations of them. Every
// generated document must be JSON that our validator and Python's jsonschema
// (json_schema_oracle.py through /usr/bin/python3, Debian's python3-jsonschema,
// run once over a batch file) both accept, and the grammar matcher must
// accept it and nlohmann::json's compact writing of it; every mutation the oracle calls invalid must be rejected by the
// matcher and by our validator, and where the oracle accepts a mutation our
// validator must too.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_internal.h"
#include "grammar/json_validate.h"
#include "temp_dir.h"

namespace og::grammar {
namespace {

using Json = nlohmann::ordered_json;
using detail::CharRanges;
using Rng = std::mt19937_64;

int pick(Rng& rng, int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); }
bool chance(Rng& rng, int percent) { return pick(rng, 100) < percent; }

// ---- a random walk over grammar text (the subset the compiler writes) ----

struct Node {
  enum Kind { Lit, Class, Ref, Seq, Alt, Rep } kind = Seq;
  std::u32string lit;
  CharRanges set;  // Class: the allowed code points (negation resolved)
  std::string ref;
  std::vector<Node> kids;
  int min = 0, max = -1;
};

class Walker {
 public:
  explicit Walker(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      size_t eq = line.find(" ::= ");
      if (eq == std::string::npos) continue;
      s_ = line.substr(eq + 5);
      p_ = 0;
      rules_[line.substr(0, eq)] = alt();
      if (p_ != s_.size()) throw Error("walker: trailing text in " + line);
    }
    heights();
  }

  std::string sample(Rng& rng) {
    std::u32string out;
    gen(rules_.at("root"), 0, rng, out);
    std::string bytes;
    for (char32_t c : out) bytes += detail::utf8_encode(c);
    return bytes;
  }

 private:
  std::map<std::string, Node> rules_;
  std::map<std::string, int> height_;
  std::string s_;
  size_t p_ = 0;

  void space() {
    while (p_ < s_.size() && s_[p_] == ' ') ++p_;
  }
  Node alt() {
    Node a;
    a.kind = Node::Alt;
    a.kids.push_back(seq());
    while (p_ < s_.size() && s_[p_] == '|') {
      ++p_;
      a.kids.push_back(seq());
    }
    return a;
  }
  Node seq() {
    Node q;
    for (space(); p_ < s_.size() && s_[p_] != '|' && s_[p_] != ')'; space()) q.kids.push_back(postfix(atom()));
    return q;
  }
  char32_t escaped() {
    char c = s_[p_++];
    if (c != '\\') {  // a raw UTF-8 character
      std::string bytes(1, c);
      while (p_ < s_.size() && (static_cast<unsigned char>(s_[p_]) & 0xC0) == 0x80) bytes += s_[p_++];
      return (*detail::utf8_decode(bytes))[0];
    }
    char e = s_[p_++];
    int n = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (n) {
      char32_t v = static_cast<char32_t>(std::stoul(s_.substr(p_, n), nullptr, 16));
      p_ += n;
      return v;
    }
    return e == 'n' ? U'\n' : e == 't' ? U'\t' : e == 'r' ? U'\r' : char32_t(e);
  }
  Node atom() {
    Node n;
    char c = s_[p_];
    if (c == '(') {
      ++p_;
      n = alt();
      ++p_;  // ')'
    } else if (c == '"') {
      n.kind = Node::Lit;
      for (++p_; s_[p_] != '"';) n.lit += escaped();
      ++p_;
    } else if (c == '[') {
      n.kind = Node::Class;
      bool neg = s_[++p_] == '^';
      if (neg) ++p_;
      CharRanges r;
      while (s_[p_] != ']') {
        char32_t a = escaped(), b = a;
        if (s_[p_] == '-' && s_[p_ + 1] != ']') {
          ++p_;
          b = escaped();
        }
        r.push_back({a, b});
      }
      ++p_;
      r = detail::ranges_normalize(r);
      // Never a surrogate (not encodable), nor beyond what JSON text may hold.
      n.set = detail::ranges_minus(neg ? detail::ranges_complement(r) : r, {{0xD800, 0xDFFF}});
    } else {
      n.kind = Node::Ref;
      while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '-')) n.ref += s_[p_++];
      if (n.ref.empty()) throw Error("walker: unexpected '" + std::string(1, c) + "' in " + s_);
    }
    return n;
  }
  Node postfix(Node x) {
    if (p_ >= s_.size()) return x;
    char c = s_[p_];
    int mn = 0, mx = -1;
    if (c == '?') mx = 1;
    else if (c == '+') mn = 1;
    else if (c == '{') {
      size_t close = s_.find('}', p_), comma = s_.find(',', p_);
      mn = std::stoi(s_.substr(p_ + 1, comma - p_ - 1));
      mx = std::stoi(s_.substr(comma + 1, close - comma - 1));
      p_ = close;
    } else if (c != '*') {
      return x;
    }
    ++p_;
    Node r;
    r.kind = Node::Rep;
    r.min = mn;
    r.max = mx;
    r.kids.push_back(std::move(x));
    return r;
  }

  // The least derivation height of each rule, so a deep walk can head home.
  static constexpr int kInf = 1 << 20;
  int height(const Node& n) const {
    switch (n.kind) {
      case Node::Lit: return 0;
      case Node::Class: return n.set.empty() ? kInf : 0;
      case Node::Ref: {
        auto it = height_.find(n.ref);
        return it == height_.end() ? kInf : std::min(kInf, it->second + 1);
      }
      case Node::Seq: {
        int h = 0;
        for (const auto& k : n.kids) h = std::max(h, height(k));
        return h;
      }
      case Node::Alt: {
        int h = kInf;
        for (const auto& k : n.kids) h = std::min(h, height(k));
        return h;
      }
      case Node::Rep: return n.min == 0 ? 0 : height(n.kids[0]);
    }
    return kInf;
  }
  void heights() {
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [name, body] : rules_) {
        int h = height(body);
        auto it = height_.find(name);
        if (h < kInf && (it == height_.end() || h < it->second)) {
          height_[name] = h;
          changed = true;
        }
      }
    }
  }

  static char32_t any_in(const CharRanges& set, Rng& rng) {
    // Mostly printable ASCII and a few multi-byte characters, when allowed.
    static const char32_t kNice[] = {U'a', U'Z', U'5', U' ', U'-', U'_', U'.', U'@', U'é', U'中', U'😀', U'"', U'\\', U'\n'};
    if (chance(rng, 70)) {
      for (int tries = 0; tries < 6; ++tries) {
        char32_t c = chance(rng, 60) ? char32_t(0x20 + pick(rng, 95)) : kNice[pick(rng, std::size(kNice))];
        if (detail::ranges_contain(set, c)) return c;
      }
    }
    const auto& [a, b] = set[pick(rng, static_cast<int>(set.size()))];
    uint64_t span = std::min<uint64_t>(uint64_t(b) - a + 1, 200);
    return a + static_cast<char32_t>(rng() % span);
  }

  void gen(const Node& n, int depth, Rng& rng, std::u32string& out) {
    bool deep = depth > 12 || out.size() > 3000;
    switch (n.kind) {
      case Node::Lit: out += n.lit; return;
      case Node::Class: out += any_in(n.set, rng); return;
      case Node::Ref: gen(rules_.at(n.ref), depth + 1, rng, out); return;
      case Node::Seq:
        for (const auto& k : n.kids) gen(k, depth, rng, out);
        return;
      case Node::Alt: {
        std::vector<const Node*> ok;
        int best = kInf;
        for (const auto& k : n.kids) best = std::min(best, height(k));
        for (const auto& k : n.kids)
          if (height(k) < kInf && (!deep || height(k) == best)) ok.push_back(&k);
        gen(*ok[pick(rng, static_cast<int>(ok.size()))], depth, rng, out);
        return;
      }
      case Node::Rep: {
        int count = n.min;
        if (!deep)
          while ((n.max < 0 || count < n.max) && count < n.min + 4 && chance(rng, 55)) ++count;
        for (int i = 0; i < count; ++i) gen(n.kids[0], depth, rng, out);
        return;
      }
    }
  }
};

// ---- random schemas of the supported subset ----

struct SchemaGen {
  Rng& rng;
  Json defs = Json::object();

  Json value(int depth) {
    static const std::vector<Json> kScalars = {"red", "", "é中😀", "a\"b\\c\n", 0, -7, 3.5, 1e10, true, false, nullptr,
                                               "2024-02-29", 12345678901234LL};
    if (depth < 2 && chance(rng, 20)) return Json::array({value(depth + 1), value(depth + 1)});
    if (depth < 2 && chance(rng, 15)) return Json{{"k", value(depth + 1)}, {"é", value(depth + 1)}};
    return kScalars[pick(rng, static_cast<int>(kScalars.size()))];
  }

  Json string_schema() {
    static const char* kPatterns[] = {"^[a-z]{1,5}$", "^\\d{3}-\\d{4}$", "ab", "^(foo|bar)+$", "x$", "^[^\"\\\\]*$",
                                      "^(a|b)?c{2,}$", "^[\\w.-]+$", "^.{2}$", "^-?[0-9]+(\\.[0-9]+)?$", "^$",
                                      "^\\(\\d\\)$", "^[\\\\\"\\n\\t]+$", "é+", "^(?:a|bc)*d$"};
    static const char* kFormats[] = {"date", "time", "date-time", "uuid", "email"};
    Json s = {{"type", "string"}};
    int k = pick(rng, 10);
    if (k < 3) s["pattern"] = kPatterns[pick(rng, std::size(kPatterns))];
    else if (k < 5) s["format"] = kFormats[pick(rng, std::size(kFormats))];
    else if (k < 8) {
      int mn = pick(rng, 4);
      if (chance(rng, 60)) s["minLength"] = mn;
      if (chance(rng, 60)) s["maxLength"] = mn + pick(rng, 6);
    }
    return s;
  }

  Json bound(bool integer) {
    static const std::vector<Json> kDec = {0, 1, -1, 2.5, -2.5, 0.125, 3.75, -0.001, 100, -100, 99.99, 1e6, 0.1};
    if (integer && chance(rng, 70)) return pick(rng, 2001) - 1000;
    return kDec[pick(rng, static_cast<int>(kDec.size()))];
  }

  Json number_schema(bool integer) {
    Json s = {{"type", integer ? "integer" : "number"}};
    if (chance(rng, 70)) {
      Json lo = bound(integer), hi = bound(integer);
      if (detail::json_number_cmp(lo, hi) > 0) std::swap(lo, hi);
      if (chance(rng, 70)) s[chance(rng, 50) ? "minimum" : "exclusiveMinimum"] = lo;
      if (chance(rng, 70)) s[chance(rng, 50) ? "maximum" : "exclusiveMaximum"] = hi;
    }
    return s;
  }

  Json object_schema(int depth) {
    static const char* kNames[] = {"a", "b", "ab", "name", "é", "q\"uote", "back\\slash", "", "x y", "id"};
    Json s = {{"type", "object"}}, props = Json::object(), req = Json::array();
    int n = pick(rng, 5);
    for (int i = 0; i < n; ++i) {
      std::string name = kNames[pick(rng, std::size(kNames))];
      if (props.contains(name)) continue;
      props[name] = any(depth + 1);
      if (chance(rng, 50)) req.push_back(name);
    }
    if (chance(rng, 10)) req.push_back("extra");
    if (!props.empty() || chance(rng, 50)) s["properties"] = props;
    if (!req.empty()) s["required"] = req;
    int ap = pick(rng, 4);
    if (ap == 1) s["additionalProperties"] = false;
    if (ap == 2) s["additionalProperties"] = true;
    if (ap == 3) s["additionalProperties"] = any(depth + 1);
    return s;
  }

  Json array_schema(int depth) {
    Json s = {{"type", "array"}};
    if (chance(rng, 30)) {
      Json p = Json::array();
      for (int i = 0, n = 1 + pick(rng, 3); i < n; ++i) p.push_back(any(depth + 1));
      s["prefixItems"] = p;
      if (chance(rng, 50)) s["items"] = chance(rng, 50) ? Json(false) : any(depth + 1);
    } else if (chance(rng, 80)) {
      s["items"] = any(depth + 1);
    }
    if (chance(rng, 40)) s["minItems"] = pick(rng, 3);
    if (chance(rng, 40)) s["maxItems"] = s.value("minItems", 0) + pick(rng, 4);
    return s;
  }

  // A schema of one type kind (0..6), for disjoint union branches.
  Json of_kind(int kind, int depth) {
    switch (kind) {
      case 0: return string_schema();
      case 1: return number_schema(true);
      case 2: return Json{{"type", "boolean"}};
      case 3: return Json{{"type", "null"}};
      case 4: return object_schema(depth);
      default: return array_schema(depth);
    }
  }

  Json any(int depth) {
    if (depth >= 3) return of_kind(pick(rng, 4), depth);
    switch (pick(rng, 20)) {
      case 0: case 1: return string_schema();
      case 2: return number_schema(true);
      case 3: return number_schema(false);
      case 4: return Json{{"type", chance(rng, 50) ? "boolean" : "null"}};
      case 5: {
        Json e = Json::array();
        for (int i = 0, n = 1 + pick(rng, 4); i < n; ++i) e.push_back(value(0));
        return Json{{"enum", e}};
      }
      case 6: return Json{{"const", value(0)}};
      case 7: case 8: case 9: return object_schema(depth);
      case 10: case 11: return array_schema(depth);
      case 12: case 13: {  // branches of distinct kinds: oneOf is then exact
        std::vector<int> kinds = {0, 1, 2, 3, 4, 5};
        std::shuffle(kinds.begin(), kinds.end(), rng);
        Json b = Json::array();
        for (int i = 0, n = 2 + pick(rng, 2); i < n; ++i) b.push_back(of_kind(kinds[i], depth + 1));
        return Json{{chance(rng, 50) ? "anyOf" : "oneOf", b}};
      }
      case 14: {
        Json s = string_schema();
        s["type"] = Json::array({"string", chance(rng, 50) ? "null" : "integer"});
        return s;
      }
      case 15: {  // allOf of two object schemas over shared names
        Json a = {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}, {"b", any(depth + 1)}}}};
        Json b = {{"properties", {{"a", {{"minimum", bound(true)}}}}}, {"required", Json::array({"a"})}};
        if (chance(rng, 50)) b["additionalProperties"] = chance(rng, 50) ? Json(false) : Json({{"type", "string"}});
        return Json{{"allOf", Json::array({a, b})}};
      }
      case 16: {
        std::string name = "d" + std::to_string(defs.size());
        defs[name] = true;  // taken before the nested calls name theirs
        Json def = any(depth + 1);
        defs[name] = def;
        return Json{{"$ref", "#/$defs/" + name}};
      }
      case 17: {  // a recursive tree
        defs["node"] = {{"type", "object"},
                        {"properties",
                         {{"v", {{"type", "integer"}}},
                          {"kids", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}, {"maxItems", 2}}}}},
                        {"required", Json::array({"v"})},
                        {"additionalProperties", false}};
        return Json{{"$ref", "#/$defs/node"}};
      }
      case 18: return Json::object();
      default: return Json(true);
    }
  }

  Json root() {
    Json s = any(0);
    if (!defs.empty()) {
      if (!s.is_object()) s = Json{{"allOf", Json::array({s})}};
      s["$defs"] = defs;
    }
    return s;
  }
};

// ---- mutations ----

std::string mutate_text(const std::string& doc, Rng& rng) {
  static const char* kInserts[] = {"\"", ",", ":", "{", "}", "[", "]", "0", "1", "-", ".", "e", "a", " ", "\\",
                                   "null", "true", "\"x\":1,", "é", "\n", "9", "Z", "00"};
  std::string s = doc;
  size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
  switch (pick(rng, 3)) {
    case 0:
      if (!s.empty()) s.erase(std::min(at, s.size() - 1), 1 + pick(rng, 3));
      break;
    case 1: s.insert(at, kInserts[pick(rng, std::size(kInserts))]); break;
    default:
      for (size_t i = 0; i < s.size(); ++i) {
        size_t k = (at + i) % s.size();
        if (std::isdigit(static_cast<unsigned char>(s[k]))) {
          s[k] = char('0' + pick(rng, 10));
          break;
        }
      }
  }
  return s;
}

// Changes one value somewhere in the document (valid JSON in, valid JSON out).
void mutate_value(Json& v, Rng& rng) {
  if ((v.is_object() || v.is_array()) && !v.empty() && chance(rng, 60)) {
    size_t i = rng() % v.size();
    auto it = v.begin();
    std::advance(it, i);
    mutate_value(*it, rng);
    return;
  }
  switch (v.type()) {
    case Json::value_t::object:
      if (!v.empty() && chance(rng, 50)) v.erase(v.begin());
      else v[chance(rng, 50) ? "zz" : "a"] = chance(rng, 50) ? Json(1) : Json("s");
      return;
    case Json::value_t::array:
      if (!v.empty() && chance(rng, 50)) v.erase(v.end() - 1);
      else v.push_back(v.empty() ? Json(nullptr) : v[0]);
      return;
    case Json::value_t::string: {
      std::string s = v.get<std::string>();
      if (!s.empty() && chance(rng, 40)) {  // drop the last character (all its bytes)
        while (s.size() > 1 && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
        s.pop_back();
      }
      else s += chance(rng, 50) ? "x" : "-9";
      v = s;
      return;
    }
    case Json::value_t::boolean: v = !v.get<bool>(); return;
    case Json::value_t::null: v = chance(rng, 50) ? Json(0) : Json("null"); return;
    default: {
      double d = v.get<double>();
      int k = pick(rng, 5);
      if (k == 0) v = v.is_number_float() ? Json(d + 1) : Json(v.get<int64_t>() + 1);
      else if (k == 1) v = v.is_number_float() ? Json(d - 1) : Json(v.get<int64_t>() - 1);
      else if (k == 2) v = d + 0.5;
      else if (k == 3) v = -d * 10 - 1;
      else v = Json("1");
    }
  }
}

std::string hex(const std::string& s) {
  static const char* kDigits = "0123456789abcdef";
  std::string o;
  for (unsigned char c : s) o += {kDigits[c >> 4], kDigits[c & 15]};
  return o;
}

// Whether nlohmann::json writes some number of v with an exponent (-3e-05):
// numbers under bounds are written without one (json_schema.h), so such a
// compact form is outside the canonical layout.
bool has_exponent_number(const Json& v) {
  if (v.is_number_float()) return v.dump().find_first_of("eE") != std::string::npos;
  if (v.is_structured()) {
    for (const auto& e : v)
      if (has_exponent_number(e)) return true;
  }
  return false;
}

// Whether the schema bounds a number anywhere (minimum, maximum, exclusive
// bounds): only those numbers are written without an exponent.
bool bounds_a_number(const Json& schema) {
  if (schema.is_object())
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
      if (schema.contains(k)) return true;
  if (schema.is_structured())
    for (const auto& e : schema)
      if (bounds_a_number(e)) return true;
  return false;
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete();
}

std::string read_text(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Case {
  Json schema;  // as the oracle sees it (strict mode's defaults made explicit)
  JsonSchemaOptions opt;
  std::string grammar;
  std::vector<std::string> docs, mutants;
};

TEST(JsonSchemaProperty, WalksValidateAndOracleInvalidMutationsAreRejected) {
  constexpr int kSchemas = 400, kDocs = 5, kMutants = 10;
  Rng rng(20250726);
  std::vector<Case> cases;
  for (int i = 0; i < kSchemas; ++i) {
    SchemaGen gen{rng};
    Case c;
    Json schema = gen.root();
    c.opt.strict = chance(rng, 15);
    c.opt.max_whitespace = chance(rng, 20) ? 0 : 3;
    c.schema = c.opt.strict ? detail::with_strict_defaults(schema, 100) : schema;
    try {
      c.grammar = json_schema_to_grammar(schema, c.opt);
    } catch (const SchemaError& e) {
      // Random bounds and enums can leave nothing to match; anything else is a bug.
      ASSERT_NE(std::string(e.what()).find("matches no"), std::string::npos) << e.what() << "\n" << schema.dump();
      continue;
    }
    std::shared_ptr<const Grammar> g;
    try {
      g = Grammar::parse(c.grammar);
    } catch (const Error& e) {
      FAIL() << "grammar does not parse: " << e.what() << "\nschema " << schema.dump() << "\n" << c.grammar;
    }
    Walker walker(c.grammar);
    for (int k = 0; k < kDocs; ++k) {
      std::string doc = walker.sample(rng);
      ASSERT_TRUE(accepts(g, doc)) << "the matcher rejects a walk of its own grammar: " << doc << "\n" << c.grammar;
      Json j = Json::parse(doc, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << "not JSON: " << doc << "\nschema " << schema.dump() << "\n" << c.grammar;
      auto r = validate_json(j, schema, c.opt);
      ASSERT_TRUE(r.valid) << r.error << "\ndoc " << doc << "\nschema " << schema.dump() << "\n" << c.grammar;
      // The canonical layout includes nlohmann::json's own compact writing of the value.
      // (Except a number with an exponent under a schema that bounds numbers:
      // bounded numbers are written without one, as json_schema.h documents.)
      const bool exponent_under_bounds = has_exponent_number(j) && bounds_a_number(schema);
      ASSERT_TRUE(exponent_under_bounds || accepts(g, j.dump()))
          << "rejects the compact form " << j.dump() << "\nschema " << schema.dump() << "\n" << c.grammar;
      c.docs.push_back(doc);
    }
    for (int k = 0; k < kMutants; ++k) {
      const std::string& doc = c.docs[k % c.docs.size()];
      if (chance(rng, 50)) {
        c.mutants.push_back(mutate_text(doc, rng));
      } else {
        Json j = Json::parse(doc);
        mutate_value(j, rng);
        c.mutants.push_back(j.dump());
      }
    }
    cases.push_back(std::move(c));
  }
  ASSERT_GT(cases.size(), size_t(kSchemas * 3 / 4)) << "too many random schemas matched nothing";

  og::test::TempDir tmp;
  std::string in_path = tmp.path("cases.json"), out_path = tmp.path("verdicts.json");
  Json spec = {{"cases", Json::array()}};
  for (const auto& c : cases) {
    Json inst = Json::array();
    for (const auto& d : c.docs) inst.push_back(hex(d));
    for (const auto& m : c.mutants) inst.push_back(hex(m));
    spec["cases"].push_back({{"schema", c.schema}, {"instances", inst}});
  }
  std::ofstream(in_path) << spec.dump();
  std::string cmd = "/usr/bin/python3 " + std::string(OG_SOURCE_DIR) + "/tests/grammar/json_schema_oracle.py " + in_path +
                    " " + out_path + " 2>&1";
  int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << "the jsonschema oracle failed: is Debian's python3-jsonschema installed (apt-get install "
                      "python3-jsonschema)? ran: "
                   << cmd;
  Json verdicts = Json::parse(read_text(out_path));
  ASSERT_EQ(verdicts.size(), cases.size());

  int docs = 0, oracle_invalid = 0, oracle_valid = 0, failures = 0;
  for (size_t i = 0; i < cases.size() && failures < 20; ++i) {
    const Case& c = cases[i];
    auto g = Grammar::parse(c.grammar);
    // Python's "email" is any string with an @; ours is an address: only there may they disagree.
    bool exact = c.schema.dump().find("\"email\"") == std::string::npos;
    for (size_t k = 0; k < c.docs.size() + c.mutants.size(); ++k) {
      bool is_doc = k < c.docs.size();
      const std::string& text = is_doc ? c.docs[k] : c.mutants[k - c.docs.size()];
      std::string v = verdicts[i][k].get<std::string>();
      std::string where = "\n  schema " + c.schema.dump() + (c.opt.strict ? " (strict)" : "") + "\n  text " + text +
                          "\n  oracle: " + v;
      Json j = Json::parse(text, nullptr, false);
      if (is_doc) {
        ++docs;
        if (v != "valid") ++failures, ADD_FAILURE() << "a walk of the grammar the oracle rejects:" << where << "\n" << c.grammar;
        continue;
      }
      if (v == "valid") {
        ++oracle_valid;
        // (nlohmann refuses escaped lone surrogates that Python takes: not ours to judge.)
        if (exact && !j.is_discarded() && !validate_json(j, c.schema).valid)
          ++failures, ADD_FAILURE() << "our validator rejects what the oracle accepts:" << where << "\n  ours: "
                                    << validate_json(j, c.schema).error;
        continue;
      }
      ++oracle_invalid;
      if (accepts(g, text)) ++failures, ADD_FAILURE() << "the grammar accepts what the oracle rejects:" << where << "\n" << c.grammar;
      if (!j.is_discarded() && validate_json(j, c.schema).valid)
        ++failures, ADD_FAILURE() << "our validator accepts what the oracle rejects:" << where;
    }
  }
  std::printf("[json schema property] %zu schemas, %d walks, %d mutations the oracle rejects, %d it accepts\n",
              cases.size(), docs, oracle_invalid, oracle_valid);
}

TEST(JsonSchemaProperty, JsonObjectWalksAreObjects) {
  Rng rng(7);
  std::string text = json_object_grammar();
  auto g = Grammar::parse(text);
  Walker walker(text);
  for (int i = 0; i < 200; ++i) {
    std::string doc = walker.sample(rng);
    Json j = Json::parse(doc, nullptr, false);
    ASSERT_TRUE(!j.is_discarded() && j.is_object()) << doc;
    ASSERT_TRUE(accepts(g, doc)) << doc;
  }
}

}  // namespace
}  // namespace og::grammar
