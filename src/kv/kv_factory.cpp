// make_kv_cache: picks the kind.
#include "base/error.h"
#include "kv/kv_kinds.h"

namespace og {

std::unique_ptr<KvCache> make_kv_cache(KvKind kind, const KvGeometry& geometry, const KvPolicy& policy) {
  switch (kind) {
    case KvKind::kReference: return kv::make_reference_cache(geometry, policy);
    default: break;
  }
  fail("kv cache: kind ", kv_kind_name(kind), " is not built yet");
}

}  // namespace og
