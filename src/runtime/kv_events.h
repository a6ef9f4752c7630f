// KV-cache events: what the prefix cache tells the world about the blocks it
// holds, in vLLM's event model (BlockStored, BlockRemoved, AllBlocksCleared).
// Data only: the runtime produces them on the stepping thread and hands them
// to a sink; the server publishes them (src/server/kv_events_publisher.*).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/block_hash.h"

namespace og {

// Where a block lives: "CPU" (this process's KV memory) or "disk" (the
// prefix cache's disk tier).
inline constexpr const char* kMediumMemory = "CPU";
inline constexpr const char* kMediumDisk = "disk";

struct KvEvent {
  enum class Type { kBlockStored, kBlockRemoved, kAllBlocksCleared };
  Type type = Type::kBlockStored;
  std::vector<BlockHash> hashes;     // consecutive blocks of one chain, parent first
  std::optional<BlockHash> parent;   // kBlockStored: the block before hashes[0]; none for a chain's first block
  std::vector<int32_t> token_ids;    // kBlockStored: the blocks' tokens, hashes.size() * block_size of them
  int block_size = 0;                // kBlockStored
  std::string medium = kMediumMemory;
};

// Receives each step's events, in order, on the scheduler's stepping thread:
// it must not block (queue and return).
using KvEventSink = std::function<void(std::vector<KvEvent>&&)>;

}  // namespace og
