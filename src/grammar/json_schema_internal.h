// Pieces shared by the JSON schema compiler (json_schema.cpp) and the
// validator (json_validate.cpp): the schema check, $ref resolution, JSON
// equality and number comparison as JSON Schema defines them, the pattern
// (regex) subset, formats, and the grammar-expression builders.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"

namespace og::grammar::detail {

using Json = nlohmann::ordered_json;

// "at /properties/a" or "at the root"
std::string where(const std::string& path);
[[noreturn]] void schema_fail(const std::string& path, const std::string& keyword, const std::string& message);
// path + "/" + token, with ~ and / escaped as JSON pointer says.
std::string ptr_join(const std::string& path, const std::string& token);

// Keywords that change nothing (annotations), and the constraint keywords
// each instance type reads.
bool is_annotation(const std::string& keyword);
bool is_object_keyword(const std::string& keyword);
bool is_array_keyword(const std::string& keyword);
bool is_string_keyword(const std::string& keyword);
bool is_number_keyword(const std::string& keyword);

// Checks the whole schema once: every keyword supported and well typed,
// every $ref local and resolvable to a schema, every pattern in the subset,
// no $ref/allOf/anyOf/oneOf cycle that never descends into the instance.
void check_schema(const Json& root, const JsonSchemaOptions& o);
// strict mode: additionalProperties: false added to every schema that says
// type object (or lists it) or has properties and does not set it.
Json with_strict_defaults(const Json& schema, int max_depth);
// allOf and $ref at the top of the parts, merged into one schema (json_schema_merge.cpp).
Json merge_parts(const std::vector<Json>& parts, const Json& root, const JsonSchemaOptions& o, const std::string& path);
// The schema a local $ref ("#", "#/$defs/a") names, and its canonical pointer.
std::pair<const Json*, std::string> resolve_ref(const Json& root, const std::string& ref, const std::string& path);

// JSON Schema equality (numbers by value, 1 == 1.0; true != 1; objects unordered).
bool json_equal(const Json& a, const Json& b);
// Exact comparison of two JSON numbers (int64, uint64 or double): -1, 0, 1.
int json_number_cmp(const Json& a, const Json& b);
// JSON Schema's integer: an integer, or a double with no fraction.
bool json_is_integer(const Json& v);

// UTF-8 -> code points; nullopt when not valid UTF-8.
std::optional<std::u32string> utf8_decode(const std::string& s);
std::string utf8_encode(char32_t c);

// ---- patterns: an ECMA-262 subset over code points ----

using CharRanges = std::vector<std::pair<char32_t, char32_t>>;  // sorted, disjoint, inclusive
CharRanges ranges_normalize(CharRanges r);
CharRanges ranges_complement(const CharRanges& r);  // within [0, 0x10FFFF]
CharRanges ranges_minus(const CharRanges& a, const CharRanges& b);
bool ranges_contain(const CharRanges& r, char32_t c);

struct RegexNode {
  enum class Kind { Set, Seq, Alt, Repeat };
  Kind kind = Kind::Seq;
  CharRanges set;              // Set
  std::vector<RegexNode> kids;  // Seq, Alt; Repeat: one
  int min = 0, max = -1;       // Repeat; max -1: unbounded
};
struct RegexBranch {  // one top-level alternative
  bool anchored_start = false, anchored_end = false;
  RegexNode node;
};
struct Regex {
  std::vector<RegexBranch> branches;
};
// SchemaError (keyword "pattern") for what the subset lacks.
Regex regex_parse(const std::string& pattern, const std::string& path, int max_repetition);
// Does the pattern match somewhere in s (JSON Schema's unanchored search)?
bool regex_search(const Regex& re, const std::u32string& s);

// ---- formats ----

bool is_supported_format(const std::string& f);
// The pattern (anchored) of time, uuid, email; date and date-time also check the calendar.
const char* format_pattern(const std::string& f);
bool format_valid(const std::string& f, const std::string& s);
// Length of every value of a fixed-length format (date 10, uuid 36), else -1.
int format_fixed_length(const std::string& f);

// ---- grammar expressions (GBNF text) ----
// An Expr is a GBNF expression; nullopt: matches nothing; "": the empty string.
using Expr = std::optional<std::string>;
std::string gbnf_literal(const std::string& utf8);
std::string gbnf_class(const CharRanges& r, bool negated);
Expr g_seq(const std::vector<Expr>& parts);
Expr g_alt(const std::vector<Expr>& alts);
Expr g_rep(const Expr& x, int min, int max);  // max -1: unbounded
// The texts as one expression shaped as a trie: values sharing a prefix share
// its bytes, so one parse stays alive per prefix however many values there
// are (10,000 integers as plain alternatives exceeded limits.max_stacks at run
// time). make_rule(body) names a rule for each branching node, so the text
// nests one level deep. nullopt when texts is empty.
Expr literal_trie(std::vector<std::string> texts, const std::function<std::string(const std::string&)>& make_rule);
// The rules (name, body) that derive no finite string (a fixpoint over the
// text the builders above write).
std::vector<std::string> unproductive_rules(const std::vector<std::pair<std::string, std::string>>& rules);

// ---- numbers ----
// A bound as written: a decimal with sign; integer part without leading
// zeros ("0" for zero), fraction without trailing zeros.
struct Decimal {
  bool neg = false;
  std::string i = "0", f;
};
Decimal decimal_of(const Json& number);
int decimal_significant_digits(const Decimal& d);
// Canonical integer texts n with lo <= n <= hi (|n| < 10^18).
Expr integer_range_grammar(int64_t lo, int64_t hi);
struct DecimalBound {
  Decimal d;
  bool exclusive = false;
};
// Number texts without exponent, at most 15 digits, within the bounds.
Expr number_range_grammar(const std::optional<DecimalBound>& lo, const std::optional<DecimalBound>& hi);
constexpr int kMaxIntegerDigits = 18;
constexpr int kMaxBoundedNumberDigits = 15;

// The validator's core over a checked schema (json_validate.cpp): "" when
// valid, else the first failure. Used by the compiler to filter enum values.
std::string validate_at(const Json& instance, const Json& schema, const Json& root, const JsonSchemaOptions& o);

// Gemma 4's argument syntax (JsonSyntax::kGemma4).
inline constexpr const char* kGemmaQuote = "<|\"|>";
// Whether a key is written bare ([A-Za-z0-9_-]+), and the key as written.
bool gemma_bare_key(const std::string& key);
std::string gemma_key_text(const std::string& key);
// A value as the template writes it (strings quoted, keys bare where they
// can be, objects' keys sorted case-insensitively); nullopt for a string that
// holds the quote marker (no grammar can write it).
std::optional<std::string> gemma_value_text(const nlohmann::ordered_json& v);
// Object keys in the template's order (Jinja dictsort: case-insensitive).
std::vector<std::string> gemma_key_order(const nlohmann::ordered_json& object);

}  // namespace og::grammar::detail
