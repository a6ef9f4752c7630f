// JSON schema -> grammar text (llama.cpp's GBNF syntax): the grammar whose
// `root` matches JSON texts valid for the schema, for structured output
// (OpenAI `response_format: json_schema`, llama-server's `json_schema`, tool
// call arguments against a tool's `parameters`) and `json_object` mode.
//
//   std::string g = og::grammar::json_schema_to_grammar(schema);   // SchemaError if unsupported
//   std::string any = og::grammar::json_object_grammar();           // any JSON object
//
// Semantics are JSON Schema 2020-12 over the subset below. The grammar accepts
// only valid documents (oneOf aside: see the table), written in one canonical
// layout:
//   - object members in the order `properties` lists them (required ones must
//     appear, optional ones may be skipped), then members that `required` names
//     but `properties` does not, then additional members (as llama.cpp and
//     vLLM/outlines do); keys of additional members are written without escapes;
//   - whitespace between tokens: at most `max_whitespace` characters of
//     [ \t\n] (none before or after the root value), so a reply cannot run on
//     in spaces; 0 gives compact JSON;
//   - strings: any character raw or escaped, except that \u escapes of UTF-16
//     surrogates are not produced (a non-BMP character is written raw), so that
//     minLength/maxLength count code points exactly; strings under `pattern`
//     or `format` write each character raw (escaped only where JSON must);
//   - numbers: integers as "-"? digits without leading zeros, at most 18
//     digits; numbers with bounds without exponent and with at most 15 digits
//     (so comparing the decimal text equals comparing doubles); enum and const
//     values as nlohmann::json writes them.
//
// Supported keywords (anything else throws SchemaError naming the keyword and
// the JSON pointer of the schema that holds it; never silently ignored):
//
//   | keyword                        | support
//   |--------------------------------|------------------------------------------------
//   | type                           | object array string number integer boolean null, or a list (a union);
//   |                                | absent: every type, each under the keywords that apply to it
//   | properties, required           | members in `properties` order (see above)
//   | additionalProperties           | true (the default), false, or a schema; strict mode: false is the
//   |                                | default in every schema that says type object or has properties
//   | items, prefixItems             | items is one schema (draft-07 array form refused: use prefixItems)
//   | minItems, maxItems             | exact
//   | enum, const                    | exact (values filtered by the schema's other keywords)
//   | anyOf                          | a union; siblings are distributed into each branch
//   | oneOf                          | a union (a value matching two branches is accepted: over-approximation)
//   | allOf                          | merged into one schema (properties, required, bounds...); refused
//   |                                | where two parts cannot merge (two different patterns or formats)
//   | $ref, $defs, definitions       | local refs ("#", "#/$defs/x", any "#/json/pointer"), recursion via rules;
//   |                                | siblings of $ref are merged as allOf; a cycle that never descends
//   |                                | into the instance is refused
//   | minLength, maxLength           | exact (code points); not together with pattern or a variable-length format
//   | pattern                        | ECMA-262 subset: literals, escapes (\d \w \s \D \W \S \n \t \xHH \uHHHH, ...),
//   |                                | classes, ., groups (...) (?:...), |, ? * + {m} {m,} {m,n} (lazy too), ^ at the
//   |                                | start and $ at the end of a top-level alternative; refused: backreferences,
//   |                                | lookaround, \b, named groups, anchors elsewhere
//   | format                         | date, time, date-time (RFC 3339, calendar-exact), uuid, email; others refused
//   | minimum, maximum,              | integers: exact over digits; numbers: exact when each bound has at most 15
//   | exclusiveMinimum/Maximum       | significant digits, refused otherwise
//   | title, description, default,   | ignored (annotations); $id only at the root
//   | examples, $schema, $id, $comment, deprecated, readOnly, writeOnly
//
// Refused as well: a schema that matches no value at all, or only infinitely
// deep ones (a $ref required again at every level), which would leave the
// matcher a path it can never finish.
// Limits: the grammar text is at most max_grammar_bytes, every {m,n} bound at
// most max_repetition, and schemas nest at most max_depth; an object has at
// most max_properties properties, a union max_branches branches, an enum
// max_enum_values values, and the whole schema at most max_work units of work
// (subschemas compiled, enum values, properties): past any of them,
// SchemaError naming the limit (the server's 400). Rule names are [a-zA-Z0-9-]; groups nest at most ~64 deep.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace og::grammar {

// A schema outside the supported subset, or a malformed one. path() is the
// JSON pointer of the schema that holds the keyword ("" at the root).
class SchemaError : public og::Error {
 public:
  SchemaError(std::string path, std::string keyword, const std::string& message)
      : og::Error(message), path_(std::move(path)), keyword_(std::move(keyword)) {}
  const std::string& path() const { return path_; }
  const std::string& keyword() const { return keyword_; }

 private:
  std::string path_;
  std::string keyword_;
};

// The text the grammar matches: JSON, or Gemma 4's tool-call argument syntax
// (its chat template's format_argument with bare keys): strings are
// <|"|>raw text<|"|> with no escapes (and, in the grammar, no '"' inside, so
// the quote marker cannot be spelled within one), keys are written bare when
// they are [A-Za-z0-9_-]+ (else quoted the same way), null may be null or
// None, properties come in the template's order (sorted, case-insensitive as
// Jinja's dictsort), and there is no whitespace (max_whitespace is ignored).
enum class JsonSyntax { kJson, kGemma4 };

// The bounds of schema compilation that a command's flags may change at
// start-up (serve's --schema-max-properties, --schema-max-branches,
// --schema-max-enum-values, --schema-max-work); JsonSchemaOptions start from
// them. set_json_schema_limits is not synchronised with compilations running.
struct JsonSchemaLimits {
  int64_t max_properties = 1024;
  int64_t max_branches = 1024;
  int64_t max_enum_values = 65536;
  int64_t max_work = 1 << 18;
};
const JsonSchemaLimits& json_schema_limits();
void set_json_schema_limits(const JsonSchemaLimits& limits);

struct JsonSchemaOptions {
  JsonSyntax syntax = JsonSyntax::kJson;
  bool strict = false;                   // OpenAI strict: additionalProperties defaults to false (see above)
  int max_whitespace = 20;               // [ \t\n]{0,max_whitespace} between tokens; 0: compact
  size_t max_grammar_bytes = 1 << 20;    // a schema whose grammar grows past this is refused
  int max_repetition = 10000;            // largest bound of a repetition (maxLength, maxItems, {m,n})
  int max_depth = 64;                    // nesting of subschemas, refs and merges
  // properties (and required names) of one object schema
  int max_properties = static_cast<int>(json_schema_limits().max_properties);
  // anyOf/oneOf branches of one schema, object/array values of one enum
  int max_branches = static_cast<int>(json_schema_limits().max_branches);
  // values of one enum (scalar values compile to one trie)
  int max_enum_values = static_cast<int>(json_schema_limits().max_enum_values);
  // subschemas compiled + enum values + properties, in all: a time bound
  int64_t max_work = json_schema_limits().max_work;
  int64_t* work_spent = nullptr;         // when set, the work spent is added here (a budget several schemas share)
};

// The grammar text (rules "name ::= ...", one a line; the start rule is `root`).
std::string json_schema_to_grammar(const nlohmann::ordered_json& schema, const JsonSchemaOptions& o = {});

// `response_format: {type: json_object}`: root matches any JSON object.
std::string json_object_grammar(const JsonSchemaOptions& o = {});

}  // namespace og::grammar
