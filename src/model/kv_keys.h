// offgraph.kv.*: the off-graph cache geometry a GGUF file publishes for the
// runner to read before it builds the cache (caches, their KV heads, K and V
// head dims, windows, the layer -> cache map) and the default prefill chunk
// size. Written at export; checked at load against what the architecture keys
// imply. Files without them keep working.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "format/gguf.h"
#include "kv/kv_types.h"

namespace og {

inline constexpr const char* kKvCacheCount = "offgraph.kv.cache_count";            // u32
inline constexpr const char* kKvHeadCountKv = "offgraph.kv.head_count_kv";         // u32[cache_count]
inline constexpr const char* kKvKeyLength = "offgraph.kv.key_length";              // u32[cache_count]
inline constexpr const char* kKvValueLength = "offgraph.kv.value_length";          // u32[cache_count]
inline constexpr const char* kKvSlidingWindow = "offgraph.kv.sliding_window";      // u32[cache_count], 0 = full
inline constexpr const char* kKvLayerCache = "offgraph.kv.layer_cache";            // u32[n_layers] -> cache id
inline constexpr const char* kKvPrefillChunkSize = "offgraph.kv.prefill_chunk_size";  // u32

// Writes every offgraph.kv.* key for g (prefill_chunk_size > 0).
void write_kv_geometry_keys(const KvGeometry& g, int64_t prefill_chunk_size, GgufWriter& w);

// The stored geometry, when the file has offgraph.kv.cache_count (nullopt
// otherwise); og::Error naming the key when one is missing or malformed.
std::optional<KvGeometry> read_kv_geometry_keys(const GgufFile& f);
// offgraph.kv.prefill_chunk_size when present (og::Error when not positive).
std::optional<int64_t> read_prefill_chunk_size(const GgufFile& f);

// og::Error "<file>: offgraph.kv.<key>[i] = X but the architecture keys give Y"
// at the first place where `stored` and `derived` disagree.
void check_kv_geometry(const KvGeometry& stored, const KvGeometry& derived, const std::string& file);

}  // namespace og
