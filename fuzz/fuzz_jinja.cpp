// libFuzzer target: the Jinja engine (src/template) over arbitrary templates.
// Input: the template source up to the first NUL byte; what follows, when it
// parses as JSON, is the variables (else a small conversation is). Parsing and
// rendering under small bounds must succeed or throw og::Error: never crash,
// hang, overflow the stack or grow without bound. The variables are tainted
// (template/taint.h), and the render's taint must be sorted spans within its
// text, equal to the untainted render's text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"
#include "template/template.h"

namespace {

const og::jinja::Value& default_vars() {
  static const og::jinja::Value vars = og::jinja::value_from_json(nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi é 中文"},
                 {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                   "function": {"name": "f", "arguments": {"x": 1}}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": "42"}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false})"),
                                                                   og::jinja::kTaintField);
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view source = in.substr(0, nul);
  og::jinja::Value vars = default_vars();
  if (nul != std::string_view::npos) {
    auto j = nlohmann::ordered_json::parse(in.substr(nul + 1), nullptr, false);
    if (!j.is_discarded()) {
      try {
        vars = og::jinja::value_from_json(j, og::jinja::kTaintField);
      } catch (const og::Error&) {
      }
    }
  }
  og::jinja::RenderOptions opt;
  opt.max_loop_iterations = 20000;
  opt.max_output_bytes = 256 << 10;
  opt.max_memory_bytes = 32 << 20;
  opt.max_depth = 16;
  opt.now_unix = 0;
  try {
    const og::jinja::Template t = og::jinja::Template::parse(source);
    const og::jinja::TaintedRender r = t.render_tainted(vars, opt);
    size_t end = 0;
    for (const og::jinja::TaintSpan& s : r.taint) {
      if (s.begin < end || s.end <= s.begin || s.end > r.text.size() || s.kind == og::jinja::kTaintNone)
        __builtin_trap();
      end = s.end;
    }
    if (t.render(vars, opt) != r.text) __builtin_trap();
  } catch (const og::Error&) {
  }
  return 0;
}
