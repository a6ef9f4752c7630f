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

// The bounds a render gets unless its caller sets others: the built-in values
// below, or what a command's flags made them at start-up (serve, run, chat,
// batch and template take --template-max-work, --template-max-ms,
// --template-max-value-bytes and --template-max-memory-bytes; docs/commands.md).
struct RenderLimits {
  int64_t max_output_bytes = 16 << 20;   // one value (and the output)
  int64_t max_work = 0;                  // work units; 0: 64 x max_output_bytes
  int64_t max_memory_bytes = 256 << 20;  // values held at once
  int64_t max_render_ms = 10'000;        // wall clock; 0: none
};
// The process's limits. set_render_limits is meant for start-up, before any
// render runs: RenderOptions read them when they are made, unsynchronised.
const RenderLimits& render_limits();
void set_render_limits(const RenderLimits& limits);

struct RenderOptions {
  // Iterations of every loop of one render, in all. range() is not counted here:
  // it holds at most 100000 items (jinja2's MAX_RANGE) and its list is charged as
  // work (max_work) like any list a render builds.
  int64_t max_loop_iterations = 1'000'000;
  int64_t max_output_bytes = render_limits().max_output_bytes;  // the output and every value built on the
                                            // way (a string's bytes; a list or dict: 128 bytes an item),
                                            // checked before the value is built
  // Work units one render may spend: a byte of string built, copied, searched or
  // compared costs 1, a list/dict element visited, copied or compared 16 (so
  // comparisons, filters, tests and loops are all charged). 0: 64 x max_output_bytes.
  int64_t max_work = render_limits().max_work;
  int64_t max_memory_bytes = render_limits().max_memory_bytes;  // the values built by one render and
                                            // still held (strings, lists, dicts; not the output)
  int64_t max_render_ms = render_limits().max_render_ms;  // wall-clock limit of one render; 0: none
  int max_depth = 64;                       // nested macro / caller calls
  int64_t now_unix = -1;                    // the time strftime_now formats (UTC); < 0: the current time
};

// A render with the byte spans of its text that came from tainted
// variables (value_from_json(j, kind); taint.h says how taint travels).
struct TaintedRender {
  std::string text;
  TaintSpans taint;
};

class Template {
 public:
  // Nesting of expressions and blocks is bounded by max_nesting.
  static Template parse(std::string_view source, int max_nesting = 256);
  // vars: a dict of the template's variables (anything else renders with none).
  std::string render(const Value& vars, const RenderOptions& options = {}) const;
  TaintedRender render_tainted(const Value& vars, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

}  // namespace og::jinja
