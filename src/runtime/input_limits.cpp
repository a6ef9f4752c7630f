#include "runtime/input_limits.h"

#include <iterator>

namespace og {

namespace {

constexpr int64_t kP2(int n) { return int64_t{1} << n; }

// The ranges serve's flags had and the C API copied: wide enough for any real
// template or schema, narrow enough that a typo is not a limit.
constexpr InputLimitBounds kBounds[] = {
    {"template_max_work", 0, kP2(50)},                 // 0 = 64 per byte of template_max_value_bytes
    {"template_max_ms", 0, 3'600'000},                 // 0 = no deadline
    {"template_max_value_bytes", 1024, kP2(32)},
    {"template_max_memory_bytes", kP2(20), kP2(40)},
    {"schema_max_properties", 1, kP2(20)},
    {"schema_max_branches", 1, kP2(20)},
    {"schema_max_enum_values", 1, kP2(24)},
    {"schema_max_work", 1, kP2(30)},
};
static_assert(std::size(kBounds) == std::size(kInputLimits));

}  // namespace

const InputLimitBounds& input_limit_bounds(InputLimit l) { return kBounds[static_cast<size_t>(l)]; }

std::string input_limit_range(InputLimit l) {
  const InputLimitBounds& b = input_limit_bounds(l);
  return "[" + std::to_string(b.lo) + ", " + std::to_string(b.hi) + "]";
}

std::string check_input_limit(InputLimit l, int64_t v) {
  const InputLimitBounds& b = input_limit_bounds(l);
  if (v >= b.lo && v <= b.hi) return "";
  return "is " + std::to_string(v) + ", outside " + input_limit_range(l);
}

}  // namespace og
