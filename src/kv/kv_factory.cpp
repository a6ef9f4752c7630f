// make_kv_cache: picks the kind.
#include "base/error.h"
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

}  // namespace og
