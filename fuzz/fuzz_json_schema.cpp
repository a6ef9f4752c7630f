// libFuzzer target: the JSON schema compiler and validator (src/grammar/
// json_schema.h, json_validate.h) over arbitrary bytes. Input: a JSON schema
// (the bytes up to the first NUL; odd lengths compile in strict mode) and,
// after the NUL, a document. Compiling must return a grammar within the size
// cap that src/grammar's parser takes (only its size limits may refuse it), or
// throw SchemaError; a document the grammar's matcher accepts must be JSON our
// validator accepts. Validating must return or throw SchemaError. Never a
// crash, a hang, unbounded output or an exception of another kind.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/json_validate.h"

namespace {

using Json = nlohmann::ordered_json;

// The grammar engine's size bounds (text bytes, rules, elements, states, live
// parses) may refuse a grammar; any other refusal is the compiler's fault.
bool is_limit(const og::Error& e) { return std::string(e.what()).find("more than") != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  Json schema = Json::parse(in.substr(0, nul), nullptr, false);
  if (schema.is_discarded()) return 0;
  std::string doc = nul == std::string_view::npos ? "" : std::string(in.substr(nul + 1));
  og::grammar::JsonSchemaOptions o;
  o.strict = size % 2 == 1;
  o.max_grammar_bytes = 256 << 10;
  o.max_repetition = 1000;
  std::string text;
  try {
    text = og::grammar::json_schema_to_grammar(schema, o);
  } catch (const og::grammar::SchemaError&) {
    return 0;
  }
  if (text.size() > o.max_grammar_bytes + 4096) __builtin_trap();  // the cap (rules are checked as they are added)
  std::shared_ptr<const og::grammar::Grammar> g;
  try {
    g = og::grammar::Grammar::parse(text);
  } catch (const og::Error& e) {
    if (!is_limit(e)) __builtin_trap();  // the compiler wrote a grammar the parser refuses
    return 0;
  }
  bool accepted = false;
  try {
    og::grammar::Matcher m(g);
    accepted = m.accept_bytes(doc) && m.is_complete();
  } catch (const og::Error& e) {  // the matcher's own bounds (states, live parses)
    if (!is_limit(e)) __builtin_trap();
    return 0;
  }
  Json instance = Json::parse(doc, nullptr, false);
  if (accepted) {
    if (instance.is_discarded()) __builtin_trap();  // the grammar let through something that is not JSON
    if (!og::grammar::validate_json(instance, schema, o).valid) __builtin_trap();  // ... or an invalid value
  } else if (!instance.is_discarded()) {
    og::grammar::validate_json(instance, schema, o);
  }
  return 0;
}
