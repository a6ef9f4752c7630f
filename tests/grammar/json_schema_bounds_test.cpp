// Bounds on schema -> grammar and grammar compilation (issue 50): a big enum
// compiles to a trie the matcher can follow (10,000 integers were 10,000 live
// parses, past limits.max_stacks, at the first byte); properties, union
// branches, enum values and the total work have documented limits, each a
// SchemaError naming its option; a grammar whose start is too ambiguous is a
// parse error, not a matcher failure later; and the grammar parser is linear
// in its text (every group once counted lines from the start).
#include <gtest/gtest.h>

#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

namespace og::grammar {
namespace {

using Json = nlohmann::ordered_json;

// An object of n members "p0".. with the same value, appended without the
// ordered map's linear duplicate check (quadratic at 10,000 keys, unoptimised).
Json object_of(int n, const Json& value) {
  Json o = Json::object();
  auto& members = static_cast<std::vector<std::pair<const std::string, Json>>&>(o.get_ref<Json::object_t&>());
  for (int i = 0; i < n; ++i) members.emplace_back("p" + std::to_string(i), value);
  return o;
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete();
}

std::string schema_error(const Json& schema, const JsonSchemaOptions& o = {}) {
  try {
    json_schema_to_grammar(schema, o);
  } catch (const SchemaError& e) {
    return e.what();
  }
  return "";
}

// Processor time, not wall time: the bounds hold on a loaded machine too.
double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

TEST(JsonSchemaBounds, TenThousandIntegerEnumCompilesToATrie) {
  Json s = {{"enum", Json::array()}};
  for (int i = 0; i < 10000; ++i) s["enum"].push_back(i);
  auto g = Grammar::parse(json_schema_to_grammar(s));
  for (const char* yes : {"0", "7", "10", "99", "100", "5000", "9999"}) EXPECT_TRUE(accepts(g, yes)) << yes;
  for (const char* no : {"", "00", "01", "10000", "-1", "1.0", "99999"}) EXPECT_FALSE(accepts(g, no)) << no;
}

TEST(JsonSchemaBounds, EnumTrieKeepsEveryValueAndNoOther) {
  const Json values = Json::array({"", "a", "ab", "abc", "abd", "b", "\xc3\xa9", "\xc3\xa9t\xc3\xa9", "\xc3\xa8",
                                   "\xe2\x82\xac", 1, 12, -3, 2.5, true, false, nullptr, Json::array({1, 2}),
                                   Json::object({{"k", 1}})});
  auto g = Grammar::parse(json_schema_to_grammar({{"enum", values}}, JsonSchemaOptions{.max_whitespace = 0}));
  for (const auto& v : values) EXPECT_TRUE(accepts(g, v.dump())) << v.dump();
  for (const char* no : {"\"abcd\"", "\"ac\"", "\"\xc3\xa9t\"", "\"\xc3\"", "13", "-", "2.", "tru", "[1]", "{}", "\"b\"\"",
                         "\"\xe2\x82\""})
    EXPECT_FALSE(accepts(g, no)) << no;
}

TEST(JsonSchemaBounds, TenThousandPropertiesAreRefusedNamingTheLimit) {
  Json s = {{"type", "object"}, {"properties", Json::object()}};
  s["properties"] = object_of(10000, {{"type", "integer"}});
  const double t0 = cpu_seconds();
  const std::string e = schema_error(s);
  EXPECT_NE(e.find("has 10000 properties, above the limit 1024 (max_properties)"), std::string::npos) << e;
  EXPECT_LT(cpu_seconds() - t0, 10.0);  // was 14 s of CPU in Release; ~1 s under ASan now
  // At the limit it compiles, and quickly.
  s["properties"] = object_of(1024, {{"type", "integer"}});
  const double t1 = cpu_seconds();
  auto g = Grammar::parse(json_schema_to_grammar(s));
  EXPECT_TRUE(accepts(g, R"({"p5": 1, "p1023": 2})"));
  EXPECT_LT(cpu_seconds() - t1, 10.0);
}

TEST(JsonSchemaBounds, UnionsEnumsAndWorkHaveLimits) {
  Json any = {{"anyOf", Json::array()}};
  for (int i = 0; i < 1025; ++i) any["anyOf"].push_back({{"const", i}});
  EXPECT_NE(schema_error(any).find("'anyOf' at the root has 1025 branches, above the limit 1024 (max_branches)"),
            std::string::npos)
      << schema_error(any);
  Json objects = {{"enum", Json::array()}};
  for (int i = 0; i < 1025; ++i) objects["enum"].push_back({{"k", i}});
  EXPECT_NE(schema_error(objects).find("1025 object and array values, above the limit 1024 (max_branches)"),
            std::string::npos)
      << schema_error(objects);
  JsonSchemaOptions o;
  o.max_enum_values = 100;
  Json many = {{"enum", Json::array()}};
  for (int i = 0; i < 101; ++i) many["enum"].push_back(i);
  EXPECT_NE(schema_error(many, o).find("101 values, above the limit 100 (max_enum_values)"), std::string::npos)
      << schema_error(many, o);
  o = {};
  o.max_work = 50;
  Json wide = {{"type", "array"}, {"prefixItems", Json::array()}};
  for (int i = 0; i < 60; ++i) wide["prefixItems"].push_back({{"type", "string"}});
  EXPECT_NE(schema_error(wide, o).find("more than 50 subschemas, enum values and properties (max_work)"),
            std::string::npos)
      << schema_error(wide, o);
}

TEST(GrammarBounds, AStartTooAmbiguousIsAParseError) {
  std::string text = "root ::= ";
  for (int i = 0; i < 9000; ++i) text += (i ? " | \"a\" \"" : "\"a\" \"") + std::to_string(i) + "\"";
  try {
    Grammar::parse(text);
    ADD_FAILURE() << "parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 8192 parses are alive at once"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("limits.max_stacks"), std::string::npos) << e.what();
  }
}

TEST(GrammarBounds, ParsingIsLinearInTheText) {
  // 60,000 groups, each once costing a count of lines from the text's start.
  std::string text = "root ::=";
  for (int i = 0; i < 60000; ++i) text += " (\"a\" | \"b\")";
  text += "\n";
  const double t0 = cpu_seconds();
  auto g = Grammar::parse(text);
  EXPECT_LT(cpu_seconds() - t0, 10.0);  // 0.5 s in Release, 1.6 s under ASan
  EXPECT_TRUE(accepts(g, std::string(60000, 'a')));
}

}  // namespace
}  // namespace og::grammar
