// make_kv_cache picks the kind; kv_sequence_bytes gives one sequence's footprint
// and kv_position_bytes one exported position's.
#include <algorithm>

#include "base/error.h"
#include "kv/kv_common.h"
#include "kv/kv_kinds.h"

namespace og {

std::unique_ptr<KvCache> make_kv_cache(KvKind kind, const KvGeometry& geometry, const KvPolicy& policy) {
  switch (kind) {
    case KvKind::kReference: return kv::make_reference_cache(geometry, policy);
    case KvKind::kSequence: return kv::make_sequence_cache(geometry, policy, false);
    case KvKind::kBatchedSequence: return kv::make_sequence_cache(geometry, policy, true);
    case KvKind::kBatchedCell: return kv::make_cell_cache(geometry, policy);
  }
  fail("kv cache: unknown kind ", static_cast<int>(kind));
}

int64_t kv_sequence_bytes(const KvGeometry& geometry, const KvPolicy& policy, int64_t positions) {
  const kv::Resolved r = kv::resolve(geometry, policy);
  int64_t bytes = 0;
  for (const kv::CacheLayout& l : r.caches) {
    const int64_t held = l.window > 0 ? std::min(positions, l.slots) : positions;
    bytes += held * l.position_bytes();
  }
  return bytes;
}

int64_t kv_position_bytes(const KvGeometry& geometry, const KvPolicy& policy) {
  const kv::Resolved r = kv::resolve(geometry, policy);
  int64_t bytes = 0;
  for (const kv::CacheLayout& l : r.caches) bytes += l.position_bytes();
  return bytes;
}

}  // namespace og
