// Process memory figures (base/process_memory.h: /proc/self/status where
// there is one, getrusage's peak elsewhere).
#include "runtime/stats.h"

#include <algorithm>

#include "base/process_memory.h"

namespace og {

int64_t peak_rss_bytes() { return std::max<int64_t>(0, peak_rss_from(kProcSelfStatus)); }
int64_t current_rss_bytes() { return std::max<int64_t>(0, current_rss_from(kProcSelfStatus)); }

}  // namespace og
