// Constructors of the cache kinds, used by make_kv_cache (kv_factory.cpp).
#pragma once

#include <memory>

#include "kv/kv_cache.h"

namespace og::kv {

std::unique_ptr<KvCache> make_reference_cache(const KvGeometry& g, const KvPolicy& p);
// batched = false: the `sequence` kind (sequence 0 only); true: `batched-sequence`.
std::unique_ptr<KvCache> make_sequence_cache(const KvGeometry& g, const KvPolicy& p, bool batched);
std::unique_ptr<KvCache> make_cell_cache(const KvGeometry& g, const KvPolicy& p);

}  // namespace og::kv
