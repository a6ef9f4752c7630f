// offgraph's own Jinja engine: renders the chat templates models ship, byte for
// byte as Python's jinja2 does under Hugging Face transformers' settings
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
// a non-escaping `tojson`, raise_exception, strftime_now, {% generation %}).
//
//   auto t = og::jinja::Template::parse(source);           // og::Error on a syntax error
//   std::string s = t.render(og::jinja::value_from_json(vars));
//
// Errors (syntax, runtime, raise_exception, exceeded bounds) are og::Error
// whose message starts with the template line: "line 12: ...".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"
#include "template/value.h"

namespace og::jinja {

struct Stmt;

struct RenderOptions {
  int64_t max_loop_iterations = 1'000'000;  // total over every loop of one render (and range() sizes)
  int64_t max_output_bytes = 16 << 20;      // the output and every string built on the way;
                                            // all values computed: 64 times this
  int max_depth = 64;                       // nested macro / caller calls
  int64_t now_unix = -1;                    // the time strftime_now formats (UTC); < 0: the current time
};

class Template {
 public:
  // Nesting of expressions and blocks is bounded by max_nesting.
  static Template parse(std::string_view source, int max_nesting = 256);
  // vars: a dict of the template's variables (anything else renders with none).
  std::string render(const Value& vars, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

}  // namespace og::jinja
