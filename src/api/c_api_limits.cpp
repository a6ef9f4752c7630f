// The C API's bounds on untrusted input (offgraph.h og_limits): the chat
// template render limits (template/template.h RenderLimits) and the JSON schema
// limits (grammar/json_schema.h JsonSchemaLimits) that serve sets from its
// --template-max-* and --schema-max-* flags, so a program that renders
// templates or compiles schemas from its users' input can bound them as the
// server does. The ranges and the words of a refusal are those flags', from
// their one home, runtime/input_limits.h.
#include "api/c_api_internal.h"
#include "grammar/json_schema.h"
#include "runtime/input_limits.h"
#include "template/template.h"

namespace og::capi {
namespace {

// og_limits' fields in InputLimit's order.
constexpr int64_t og_limits::*kFields[] = {
    &og_limits::template_max_work,     &og_limits::template_max_ms,       &og_limits::template_max_value_bytes,
    &og_limits::template_max_memory_bytes, &og_limits::schema_max_properties, &og_limits::schema_max_branches,
    &og_limits::schema_max_enum_values, &og_limits::schema_max_work,
};
static_assert(std::size(kFields) == std::size(kInputLimits));

og_limits limits_of(const jinja::RenderLimits& r, const grammar::JsonSchemaLimits& s) {
  return og_limits{sizeof(og_limits), r.max_work,      r.max_render_ms,   r.max_output_bytes, r.max_memory_bytes,
                   s.max_properties,  s.max_branches,  s.max_enum_values, s.max_work};
}

}  // namespace
}  // namespace og::capi

using namespace og;
using namespace og::capi;

extern "C" {

void og_limits_init(og_limits* limits) {
  if (limits) *limits = limits_of(jinja::RenderLimits{}, grammar::JsonSchemaLimits{});
}

og_status og_get_limits(og_limits* out) {
  return guarded([&] {
    need(out, "out");
    const size_t n = out->struct_size;
    if (n == 0 || n > sizeof(og_limits))
      api_fail(OG_ERR_INVALID_ARGUMENT, "og_limits.struct_size ", n, " is not in [1, ", sizeof(og_limits),
               "]: initialise the struct with og_limits_init");
    const og_limits l = limits_of(jinja::render_limits(), grammar::json_schema_limits());
    std::memcpy(static_cast<void*>(out), &l, n);
    out->struct_size = n;
  });
}

og_status og_set_limits(const og_limits* limits) {
  return guarded([&] {
    need(limits, "limits");
    // Fields a shorter (older) struct lacks keep the values in force.
    og_limits l = limits_of(jinja::render_limits(), grammar::json_schema_limits());
    read_options(limits, &l, "og_limits");
    for (const InputLimit which : kInputLimits) {
      const std::string wrong = check_input_limit(which, l.*kFields[static_cast<size_t>(which)]);
      if (!wrong.empty()) api_fail(OG_ERR_INVALID_ARGUMENT, "og_limits.", input_limit_bounds(which).name, " ", wrong);
    }
    jinja::RenderLimits rl;
    rl.max_work = l.template_max_work;
    rl.max_render_ms = l.template_max_ms;
    rl.max_output_bytes = l.template_max_value_bytes;
    rl.max_memory_bytes = l.template_max_memory_bytes;
    grammar::JsonSchemaLimits sl;
    sl.max_properties = l.schema_max_properties;
    sl.max_branches = l.schema_max_branches;
    sl.max_enum_values = l.schema_max_enum_values;
    sl.max_work = l.schema_max_work;
    jinja::set_render_limits(rl);
    grammar::set_json_schema_limits(sl);
  });
}

}  // extern "C"
