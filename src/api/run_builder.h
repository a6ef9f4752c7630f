// Moved to runtime/run_builder.h (the run builder joined src/runtime; src/api
// is the C API alone). This forward is kept only for code written against
// the old path that has not landed yet; include runtime/run_builder.h.
#pragma once

#include "runtime/run_builder.h"
