// Block identity of the prefix cache, computed as vLLM's v1 engine computes it
// with --prefix-caching-hash-algo sha256_cbor (vLLM 0.11's kv_cache_utils) so
// that a router hashing a prompt the same way (llm-d's precise prefix scorer)
// predicts this replica's hits:
//
//   hash(block i) = SHA-256( CBOR_canonical( [parent, tokens, extra] ) )
//
// where parent is the 32-byte hash of block i-1 (for block 0, NONE_HASH =
// SHA-256(CBOR(seed string)), the seed being vLLM's PYTHONHASHSEED), tokens
// the block's token ids (an array of unsigned integers) and extra null, or an
// array of text strings: the request's cache_salt, on block 0 only. Only full
// blocks of block_size tokens are hashed. A block that overlaps an image span
// (runtime/image_span.h) carries the image's hash as an extra key (hex text,
// before the salt), as vLLM's multimodal extra keys do, so blocks of
// different images never share a hash whatever their placeholder ids, and
// every later block depends on the image through its parent. See
// docs/kv-events.md and docs/vision.md.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/sha256.h"
#include "runtime/image_span.h"

namespace og {

using BlockHash = Sha256Digest;

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const {
    size_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | h[i];
    return v;
  }
};

// The low 64 bits of a hash read big-endian (vLLM's int form of a block hash
// in KV events: int.from_bytes(hash, "big") & (2**64 - 1)).
uint64_t block_hash_low64(const BlockHash& h);

// The CBOR bytes vLLM hashes for a block (canonical encoding), exposed for tests.
// image_keys: the block's images' extra keys (image_block_keys), before the salt.
std::vector<uint8_t> block_hash_input(const BlockHash& parent, std::span<const int32_t> tokens,
                                      std::string_view cache_salt, std::span<const std::string> image_keys = {});

class BlockHasher {
 public:
  // block_size >= 1; seed: the chain's root (vLLM's PYTHONHASHSEED).
  BlockHasher(int block_size, const std::string& seed);

  int block_size() const { return block_size_; }
  const BlockHash& none_hash() const { return none_hash_; }

  // One block's hash after `parent` (none_hash() for the first block; the salt
  // counts only there).
  BlockHash hash(const BlockHash& parent, std::span<const int32_t> tokens, std::string_view cache_salt,
                 bool first, std::span<const std::string> image_keys = {}) const;
  // Block b of a history with `images` (placeholder ids at their positions).
  BlockHash hash_block(const BlockHash& parent, std::span<const int32_t> tokens, int64_t b,
                       std::string_view cache_salt, std::span<const ImageSpan> images) const;

  // The hashes of every full block of `tokens`, in order.
  std::vector<BlockHash> chain(std::span<const int32_t> tokens, std::string_view cache_salt,
                               std::span<const ImageSpan> images = {}) const;

 private:
  int block_size_;
  BlockHash none_hash_;
};

}  // namespace og
