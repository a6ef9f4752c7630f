// Our own JSON Schema validator over the subset json_schema.h supports (same
// keyword table, same semantics, same SchemaError for anything outside it):
// the unit tests hold the grammar against it, and the server can double-check
// a constrained reply with it.
//
//   auto r = og::grammar::validate_json(instance, schema);
//   if (!r.valid) log(r.error);   // "/items/2: 7 is above the maximum 5"
//
// Semantics are JSON Schema 2020-12: oneOf means exactly one branch (the
// grammar is looser there), pattern is an unanchored ECMA-262 search over
// code points, formats are the definitions in json_schema.h, numbers compare
// exactly (an integer against a double bound too), 1.0 is an integer.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"

namespace og::grammar {

struct ValidationResult {
  bool valid = true;
  std::string error;  // the first failure: instance pointer, then what is wrong
};

// Throws SchemaError when the schema is outside the supported subset. Only
// strict and max_depth, max_repetition of the options matter here.
ValidationResult validate_json(const nlohmann::ordered_json& instance, const nlohmann::ordered_json& schema,
                               const JsonSchemaOptions& o = {});

}  // namespace og::grammar
