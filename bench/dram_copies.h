// The benches that time reads from memory keep their working set (a weight
// matrix, a layer, a layer's K/V) in as many copies as make ~512 MiB and use
// them in turn: one copy alone may stay in a large L3 (260 MiB on an Intel
// Xeon these benches ran on), and the figure would be the cache's.
#pragma once

#include <algorithm>
#include <cstdint>

namespace og::bench {

// Copies of `bytes` (> 0) that make ~512 MiB, at least `at_least`.
inline int64_t dram_copies(int64_t bytes, int64_t at_least = 1) {
  return std::max<int64_t>(at_least, (int64_t{512} << 20) / bytes);
}

}  // namespace og::bench
