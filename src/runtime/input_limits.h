// The one home of the bounds on the limits a run sets on untrusted input: the
// chat-template render limits (template/template.h RenderLimits) and the JSON
// schema limits (grammar/json_schema.h JsonSchemaLimits). The commands'
// --template-max-* and --schema-max-* flags and the C API's og_set_limits (so
// Python's set_limits) check a value here, so the same bad value meets the
// same bound and the same words at every edge; each edge only names the limit
// its own way (--template-max-work, og_limits.template_max_work).
// (Sampler settings and generation limits: runtime/generation_limits.h.)
#pragma once

#include <cstdint>
#include <string>

namespace og {

// In og_limits' field order (include/offgraph/offgraph.h).
enum class InputLimit {
  kTemplateMaxWork,
  kTemplateMaxMs,
  kTemplateMaxValueBytes,
  kTemplateMaxMemoryBytes,
  kSchemaMaxProperties,
  kSchemaMaxBranches,
  kSchemaMaxEnumValues,
  kSchemaMaxWork,
};
inline constexpr InputLimit kInputLimits[] = {
    InputLimit::kTemplateMaxWork,      InputLimit::kTemplateMaxMs,       InputLimit::kTemplateMaxValueBytes,
    InputLimit::kTemplateMaxMemoryBytes, InputLimit::kSchemaMaxProperties, InputLimit::kSchemaMaxBranches,
    InputLimit::kSchemaMaxEnumValues,  InputLimit::kSchemaMaxWork,
};

// A limit's name as og_limits spells it ("template_max_work"; the flag is the
// same with '-') and its closed range [lo, hi].
struct InputLimitBounds {
  const char* name;
  int64_t lo, hi;
};
const InputLimitBounds& input_limit_bounds(InputLimit l);

// "" when v is in l's range, else what is wrong, worded to follow the edge's
// name for the limit: "is 5, outside [1024, 4294967296]".
std::string check_input_limit(InputLimit l, int64_t v);

// l's range as "[lo, hi]", for a flag's help.
std::string input_limit_range(InputLimit l);

}  // namespace og
