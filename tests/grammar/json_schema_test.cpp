// JSON schema -> grammar: every unsupported keyword and malformed schema is a
// SchemaError naming keyword and path; then, keyword by keyword, documents
// the grammar (parsed and matched by src/grammar's own parser and matcher)
// must accept and must reject, each also judged by our validator.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_validate.h"

namespace og::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::string grammar_of(const std::string& schema, const JsonSchemaOptions& o = {}) {
  return json_schema_to_grammar(Json::parse(schema), o);
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete();
}

// The error compiling (and validating against) schema throws; both must throw alike.
SchemaError error_of(const std::string& schema, const JsonSchemaOptions& o = {}) {
  Json s = Json::parse(schema);
  try {
    json_schema_to_grammar(s, o);
  } catch (const SchemaError& e) {
    return e;
  }
  ADD_FAILURE() << "no SchemaError for " << schema;
  return SchemaError("", "", "");
}

// valid: the grammar accepts and the validator agrees; invalid: the grammar
// rejects and (when it is JSON) the validator agrees; layout: valid JSON the
// grammar leaves out by design (member order, encodings), the validator accepts.
void expect(const std::string& schema, const std::vector<std::string>& valid, const std::vector<std::string>& invalid,
            const std::vector<std::string>& layout = {}, const JsonSchemaOptions& o = {}) {
  std::string text = grammar_of(schema, o);
  std::shared_ptr<const Grammar> g;
  try {
    g = Grammar::parse(text);
  } catch (const Error& e) {
    FAIL() << "grammar of " << schema << " does not parse: " << e.what() << "\n" << text;
  }
  Json s = Json::parse(schema);
  for (const auto& v : valid) {
    EXPECT_TRUE(accepts(g, v)) << schema << " should accept " << v << "\n" << text;
    auto r = validate_json(Json::parse(v), s, o);
    EXPECT_TRUE(r.valid) << schema << " validator rejects " << v << ": " << r.error;
  }
  for (const auto& v : invalid) {
    EXPECT_FALSE(accepts(g, v)) << schema << " should reject " << v << "\n" << text;
    Json j = Json::parse(v, nullptr, false);
    if (!j.is_discarded()) {
      EXPECT_FALSE(validate_json(j, s, o).valid) << schema << " validator accepts " << v;
    }
  }
  for (const auto& v : layout) {
    EXPECT_FALSE(accepts(g, v)) << schema << " grammar accepts non-canonical " << v;
    EXPECT_TRUE(validate_json(Json::parse(v), s, o).valid) << schema << " validator rejects " << v;
  }
}

TEST(JsonSchema, UnsupportedKeywordsNameKeywordAndPath) {
  for (const char* kw : {"patternProperties", "propertyNames", "minProperties", "maxProperties", "dependentRequired",
                         "dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "contains", "minContains",
                         "maxContains", "uniqueItems", "multipleOf", "not", "if", "then", "else", "$anchor",
                         "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$vocabulary", "contentEncoding",
                         "contentMediaType", "nullable", "discriminator", "additionalItems", "dependencies", "x-foo"}) {
    std::string schema = std::string(R"({"type": "object", "properties": {"a": {")") + kw + R"(": 1}}})";
    SchemaError e = error_of(schema);
    EXPECT_EQ(e.keyword(), kw);
    EXPECT_EQ(e.path(), "/properties/a");
    EXPECT_EQ(std::string(e.what()), std::string("unsupported JSON schema keyword '") + kw + "' at /properties/a");
    EXPECT_THROW(validate_json(Json(1), Json::parse(schema)), SchemaError) << kw;
  }
  SchemaError e = error_of(R"({"not": {}})");
  EXPECT_EQ(std::string(e.what()), "unsupported JSON schema keyword 'not' at the root");
  e = error_of(R"({"$defs": {"a/b": {"items": {"uniqueItems": true}}}})");
  EXPECT_EQ(e.path(), "/$defs/a~1b/items");
}

TEST(JsonSchema, MalformedSchemasAreErrors) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"(3)", ""},
      {R"({"type": "strin"})", "type"},
      {R"({"type": 3})", "type"},
      {R"({"type": []})", "type"},
      {R"({"type": ["string", "string"]})", "type"},
      {R"({"properties": []})", "properties"},
      {R"({"properties": {"a": 1}})", ""},
      {R"({"required": "a"})", "required"},
      {R"({"required": ["a", "a"]})", "required"},
      {R"({"minLength": -1})", "minLength"},
      {R"({"minLength": 1.5})", "minLength"},
      {R"({"maxItems": "3"})", "maxItems"},
      {R"({"minimum": "0"})", "minimum"},
      {R"({"exclusiveMinimum": true})", "exclusiveMinimum"},
      {R"({"enum": 3})", "enum"},
      {R"({"anyOf": []})", "anyOf"},
      {R"({"allOf": {}})", "allOf"},
      {R"({"items": [{}]})", "items"},
      {R"({"$ref": 1})", "$ref"},
      {R"({"$ref": "http://example.com/s.json"})", "$ref"},
      {R"({"$ref": "#/nope"})", "$ref"},
      {R"({"$ref": "#foo"})", "$ref"},
      {R"({"properties": {"a": {}}, "$ref": "#/properties"})", "$ref"},
      {R"({"pattern": "(a"})", "pattern"},
      {R"({"pattern": "(a)\\1"})", "pattern"},
      {R"J({"pattern": "a(?=b)"})J", "pattern"},
      {R"({"pattern": "a^b"})", "pattern"},
      {R"({"pattern": "a$b"})", "pattern"},
      {R"({"pattern": "\\bword"})", "pattern"},
      {R"({"pattern": "[]"})", "pattern"},
      {R"({"pattern": "a{2,1}"})", "pattern"},
      {R"({"pattern": "a**"})", "pattern"},
      {R"({"pattern": "\\p{L}"})", "pattern"},
      {R"({"format": "uri"})", "format"},
      {R"({"format": 1})", "format"},
      {R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})", "$ref"},
      {R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})", "$ref"},
      {R"({"allOf": [{"$ref": "#/$defs/b"}], "$defs": {"b": {"oneOf": [{"$ref": "#"}]}}})", "$ref"},
      {R"({"properties": {"a": {"$id": "x"}}})", "$id"},
      {R"({"type": "number", "minimum": 0.30000000000000004})", "minimum"},
      {R"({"type": "string", "pattern": "a", "minLength": 2})", "pattern"},
      {R"({"type": "string", "pattern": "a", "format": "date"})", "pattern"},
      {R"({"type": "string", "format": "email", "maxLength": 20})", "format"},
      {R"({"allOf": [{"pattern": "a"}, {"pattern": "b"}]})", "pattern"},
      {R"({"type": "string", "minLength": 20000})", "minLength"},
      {R"({"type": "array", "maxItems": 20000})", "maxItems"},
      {R"({"type": "string", "pattern": "a{20000}"})", "pattern"},
      {R"({"const": 1, "enum": [2]})", ""},
      {R"({"type": "integer", "minimum": 5, "maximum": 4})", ""},
      {R"({"type": "object", "required": ["a"], "properties": {"a": false}})", ""},
      // Only infinitely deep values: a recursion that is required at every level.
      {R"({"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]})", "$ref"},
      {R"({"anyOf": [{"type": "null"}, {"$ref": "#/$defs/a"}],
           "$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}, "minItems": 1}}})", "$ref"},
  };
  for (const auto& [schema, kw] : cases) {
    SchemaError e = error_of(schema);
    EXPECT_EQ(e.keyword(), kw) << schema << ": " << e.what();
    EXPECT_FALSE(std::string(e.what()).empty());
  }
  // Nesting and size limits.
  std::string deep = "{}";
  for (int i = 0; i < 100; ++i) deep = R"({"items": )" + deep + "}";
  EXPECT_THROW(grammar_of(deep), SchemaError);
  Json big = {{"enum", Json::array()}};
  for (int i = 0; i < 5000; ++i) big["enum"].push_back("value number " + std::to_string(i));
  JsonSchemaOptions small;
  small.max_grammar_bytes = 16 << 10;
  EXPECT_THROW(json_schema_to_grammar(big, small), SchemaError);
  EXPECT_NO_THROW(json_schema_to_grammar(big));
}

TEST(JsonSchema, AnnotationsAreIgnored) {
  std::string plain = grammar_of(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  std::string annotated = grammar_of(
      R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://x/s", "title": "T",
          "description": "d", "$comment": "c", "examples": [{}], "default": {}, "type": "object",
          "properties": {"a": {"type": "integer", "description": "n", "default": 3, "deprecated": true,
                               "readOnly": false, "writeOnly": false, "title": "A"}}})");
  EXPECT_EQ(plain, annotated);
}

TEST(JsonSchema, ObjectsInPropertyOrder) {
  const char* s = R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                      "c": {"type": "boolean"}}, "required": ["b"], "additionalProperties": false})";
  expect(s, {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"a": 1, "b": "x", "c": true})", R"({"b":"","c":false})",
             "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"},
         {R"({})", R"({"a":1})", R"({"a":1,"b":"x","d":1})", R"({"b":1})", R"({"b":"x",})", R"({"b":"x","c":null})"},
         {R"({"b":"x","a":1})", R"({"\u0062":"x"})"});
  // Additional members: any value by default, under a schema, or none; their
  // keys are never one of the listed names.
  expect(R"({"type": "object", "properties": {"a": {"type": "integer"}}})",
         {R"({})", R"({"a":1})", R"({"a":1,"b":[1,{"c":null}]})", R"({"b":"x"})", R"({"ab":1,"":2})"},
         {R"({"b":1,"a":"x"})", R"({"a":"x"})"}, {R"({"b":1,"a":2})"});
  expect(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "string"}})",
         {R"({"a":1,"b":"x"})", R"({"b":"x","c":"y"})"}, {R"({"b":1})"}, {R"({"a":1,"a":2})"});
  // required names that properties does not list take additionalProperties' schema.
  expect(R"({"type": "object", "required": ["id"], "additionalProperties": {"type": "integer"}})",
         {R"({"id":1})", R"({"id":1,"x":2})"}, {R"({})", R"({"id":"a"})", R"({"x":2})"}, {R"({"x":2,"id":1})"});
  // strict (OpenAI): additionalProperties defaults to false.
  JsonSchemaOptions strict;
  strict.strict = true;
  expect(R"({"type": "object", "properties": {"a": {"type": "object"}}})", {R"({"a":{}})", R"({})"},
         {R"({"a":{"x":1}})", R"({"b":1})"}, {}, strict);
  // Many optional members: any subset, in order.
  expect(R"({"type": "object", "properties": {"a": {"const": 1}, "b": {"const": 2}, "c": {"const": 3}, "d": {"const": 4}},
             "additionalProperties": false})",
         {R"({})", R"({"d":4})", R"({"b":2,"d":4})", R"({"a":1,"c":3})", R"({"a":1,"b":2,"c":3,"d":4})"},
         {R"({"a":1,,"c":3})", R"({,"a":1})", R"({"a":2})"}, {R"({"b":2,"a":1})"});
}

TEST(JsonSchema, Arrays) {
  expect(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})",
         {"[1]", "[1,2]", "[ 1 , 2 , 3 ]"}, {"[]", "[1,2,3,4]", "[1,\"a\"]", "[1,]"});
  expect(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
         {"[]", "[\"a\"]", "[\"a\",1]"}, {"[1]", "[\"a\",1,2]", "[\"a\",\"b\"]"});
  expect(R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "boolean"}, "minItems": 2})",
         {"[\"a\",true]", "[\"a\",true,false]"}, {"[\"a\"]", "[true,true]", "[\"a\",1]"});
  expect(R"({"type": "array", "maxItems": 0})", {"[]", "[ ]"}, {"[1]"});
  EXPECT_THROW(grammar_of(R"({"type": "array", "items": false, "minItems": 1})"), SchemaError);  // matches nothing
}

TEST(JsonSchema, Strings) {
  expect(R"({"type": "string", "minLength": 2, "maxLength": 3})",
         {R"("ab")", R"("abc")", R"("é中")", R"("😀😀😀")", R"("\n\"")", R"("\u00e9\u4e2d")"},
         {R"("a")", R"("abcd")", R"("😀")", R"("\ud83d\ude00")", "\"a\x01\"", R"(1)"});
  expect(R"({"type": "string"})", {R"("")", R"("\\ \/ \b\f\n\r\t \u0041")"}, {R"("\x")", R"("\ud800")", "\"\t\""});
}

TEST(JsonSchema, Patterns) {
  expect(R"({"type": "string", "pattern": "^[a-z]+-\\d{2,3}$"})", {R"("ab-12")", R"("z-999")"},
         {R"("ab-1")", R"("AB-12")", R"("ab-1234")", R"("xab-12 ")"});
  // Unanchored: a search.
  expect(R"({"type": "string", "pattern": "cat|dog$"})", {R"("a cat here")", R"("hotdog")", R"("cat")"},
         {R"("dogs")", R"("ca t")"});
  expect(R"({"type": "string", "pattern": "^(?:\\+1 )?\\(\\d{3}\\) \\d{3}-\\d{4}$"})",
         {R"("(555) 123-4567")", R"("+1 (555) 123-4567")"}, {R"("555-1234")"});
  // Characters JSON must escape, written the way nlohmann::json writes them.
  expect(R"({"type": "string", "pattern": "^[\"\\\\\\n\\x01]*$"})", {R"("\"\\\n\u0001")", R"("")"},
         {R"("a")"}, {R"("\u000a")"});
  expect(R"({"type": "string", "pattern": "^[^a-c]{2}$"})", {R"("dé")", R"("\"\\")", R"("\n\t")"},
         {R"("ad")", R"("d")"});
  expect(R"({"type": "string", "pattern": "^.$"})", {R"("x")", R"("😀")", R"("\t")"}, {R"("\n")", R"("\r")", R"("xy")"});
  expect(R"({"type": "string", "pattern": "^(a|)+$"})", {R"("")", R"("aaa")"}, {R"("b")"});
  expect(R"({"type": "string", "pattern": "^\\w\\s\\W\\S\\D$"})", {R"("a !xy")", R"("_\t.éa")"}, {R"("a !x1")"}, {R"("_\t.\u00e9a")"});
}

TEST(JsonSchema, Formats) {
  expect(R"({"type": "string", "format": "date"})",
         {R"("2024-02-29")", R"("2000-02-29")", R"("0001-01-01")", R"("1999-12-31")", R"("2023-04-30")"},
         {R"("2023-02-29")", R"("1900-02-29")", R"("0000-01-01")", R"("2023-04-31")", R"("2023-13-01")",
          R"("2023-1-01")", R"("2023-00-10")"});
  expect(R"({"type": "string", "format": "time"})", {R"("23:59:59Z")", R"("00:00:00.123+05:30")", R"("12:00:00-08:00")"},
         {R"("24:00:00Z")", R"("12:60:00Z")", R"("12:00:00")", R"("12:00Z")"});
  expect(R"({"type": "string", "format": "date-time"})", {R"("2024-02-29T10:20:30Z")", R"("1999-12-31T23:59:59.5-01:00")"},
         {R"("2024-02-30T10:20:30Z")", R"("2024-02-29 10:20:30Z")"});
  expect(R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")", R"("ABCDEF01-2345-6789-ABCD-EF0123456789")"},
         {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
  expect(R"({"type": "string", "format": "email"})", {R"("a.b+c@example.com")", R"("x@localhost")"},
         {R"("a@@b")", R"("@b.com")", R"("a@-b.com")", R"("a b@c.com")", R"("a.@b.com")"});
  expect(R"({"type": "string", "format": "date", "maxLength": 10})", {R"("2024-01-01")"}, {});
  EXPECT_THROW(grammar_of(R"({"type": "string", "format": "date", "maxLength": 9})"), SchemaError);  // matches nothing
}

TEST(JsonSchema, EnumConstAndUnions) {
  expect(R"({"enum": ["red", 1, null, {"a": [1, "x"]}, [true]]})",
         {R"("red")", "1", "null", R"({"a": [1, "x"]})", "[ true ]"}, {R"("blue")", "2", R"({"a":[1]})", "true"},
         {"1.0"});
  expect(R"({"type": "string", "enum": ["a", 1, "bb"], "maxLength": 1})", {R"("a")"}, {"1", R"("bb")"});
  expect(R"({"const": "x\"y"})", {R"("x\"y")"}, {R"("xy")"});
  expect(R"({"type": ["string", "null"], "maxLength": 1})", {"null", R"("a")"}, {R"("ab")", "1"});
  expect(R"({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string", "format": "date"}]})",
         {"10", R"("2024-01-01")"}, {"9", R"("x")"});
  expect(R"({"oneOf": [{"type": "boolean"}, {"type": "object", "properties": {"k": {"const": 1}}, "required": ["k"]}]})",
         {"true", R"({"k":1})"}, {"null", R"({})"});
  // Siblings of anyOf are distributed into its branches.
  expect(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
             "additionalProperties": false, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]})",
         {R"({"a":1})", R"({"b":1})", R"({"a":1,"b":2})"}, {R"({})", R"({"c":1})"});
  // No type: every type, each under the keywords that apply to it.
  expect(R"({"minimum": 5, "maxLength": 1})", {"5", R"("a")", "true", "null", "[1,\"x\"]", R"({"a":0})"},
         {"4", R"("ab")"});
}

TEST(JsonSchema, AllOfAndRefs) {
  expect(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                       {"properties": {"a": {"minimum": 0}, "b": {"type": "string"}}, "required": ["b"]}]})",
         {R"({"a":0,"b":"x"})", R"({"a":5,"b":"","c":null})"}, {R"({"a":-1,"b":"x"})", R"({"a":1})", R"({"a":1,"b":2})"});
  expect(R"({"allOf": [{"type": "object", "properties": {"a": {}}, "additionalProperties": false},
                       {"type": "object", "properties": {"b": {}}}]})",
         {R"({})", R"({"a":1})"}, {R"({"b":1})"});
  // Recursion through $ref, $defs and definitions, $ref with siblings.
  const char* tree = R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v"], "additionalProperties": false}}})";
  expect(tree, {R"({"v":1})", R"({"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"kids":[{"v":4}]}]})"},
         {R"({"v":1,"kids":[{}]})", R"({"kids":[]})"});
  EXPECT_EQ(error_of(R"({"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]})").what(),
            std::string("the schema at the root matches no finite value: it requires itself again at every level "
                        "(grammar rule 'root')"));
  expect(R"({"type": "object", "properties": {"next": {"$ref": "#"}, "n": {"type": "integer"}}, "additionalProperties": false})",
         {R"({})", R"({"next":{"next":{"n":1}}})"}, {R"({"next":{"m":1}})"});
  expect(R"({"definitions": {"pos": {"type": "integer", "minimum": 1}}, "$ref": "#/definitions/pos", "maximum": 3})",
         {"1", "3"}, {"0", "4"});
  expect(R"({"$defs": {"a b": {"type": "string"}}, "items": {"$ref": "#/$defs/a%20b"}, "type": "array"})",
         {R"(["x"])"}, {"[1]"});
}

TEST(JsonSchema, WhitespaceIsBounded) {
  const char* s = R"({"type": "array", "items": {"type": "integer"}})";
  std::string g = grammar_of(s);
  auto gp = Grammar::parse(g);
  EXPECT_TRUE(accepts(gp, "[" + std::string(20, ' ') + "1]"));
  EXPECT_FALSE(accepts(gp, "[" + std::string(21, ' ') + "1]"));
  EXPECT_FALSE(accepts(gp, " [1]"));
  EXPECT_FALSE(accepts(gp, "[1] "));
  JsonSchemaOptions compact;
  compact.max_whitespace = 0;
  expect(s, {"[1,2]", "[]"}, {"[1,"}, {"[1, 2]", "[ ]"}, compact);
}

TEST(JsonSchema, JsonObjectMode) {
  auto g = Grammar::parse(json_object_grammar());
  for (const char* ok : {"{}", R"({"a": [1, {"b": null}], "c": "d\n"})", "{\n  \"x\": -1.5e3\n}"})
    EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {"[]", "1", R"("a")", "{", R"({"a"})", "null"}) EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(JsonSchema, GrammarIsDeterministicAndNamed) {
  const char* s = R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
                     "required": ["name", "age"]})";
  std::string a = grammar_of(s), b = grammar_of(s);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.rfind("root ::= ", 0), 0u) << a;
  EXPECT_NE(a.find("root-age ::= "), std::string::npos) << a;
}

}  // namespace
}  // namespace og::grammar
