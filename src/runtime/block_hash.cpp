// The block hash chain: a minimal canonical CBOR writer (RFC 8949 §4.2.1:
// shortest-form heads, definite lengths) for exactly the values a block hash
// input holds, and SHA-256 over it.
#include "runtime/block_hash.h"

#include "base/error.h"

namespace og {
namespace {

// A CBOR head: major type (0..7) and an argument in its shortest form.
void head(std::vector<uint8_t>& out, uint8_t major, uint64_t v) {
  const uint8_t m = static_cast<uint8_t>(major << 5);
  if (v < 24) {
    out.push_back(static_cast<uint8_t>(m | v));
  } else if (v <= 0xff) {
    out.push_back(m | 24);
    out.push_back(static_cast<uint8_t>(v));
  } else if (v <= 0xffff) {
    out.push_back(m | 25);
    for (int s = 8; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  } else if (v <= 0xffffffffull) {
    out.push_back(m | 26);
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  } else {
    out.push_back(m | 27);
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  }
}

void integer(std::vector<uint8_t>& out, int64_t v) {
  if (v >= 0) head(out, 0, static_cast<uint64_t>(v));
  else head(out, 1, static_cast<uint64_t>(-(v + 1)));
}

void text(std::vector<uint8_t>& out, std::string_view s) {
  head(out, 3, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

}  // namespace

uint64_t block_hash_low64(const BlockHash& h) {
  uint64_t v = 0;
  for (size_t i = h.size() - 8; i < h.size(); ++i) v = (v << 8) | h[i];
  return v;
}

std::vector<uint8_t> block_hash_input(const BlockHash& parent, std::span<const int32_t> tokens,
                                      std::string_view cache_salt, std::span<const std::string> image_keys) {
  std::vector<uint8_t> out;
  out.reserve(48 + tokens.size() * 5 + cache_salt.size());
  head(out, 4, 3);  // [parent, tokens, extra]
  head(out, 2, parent.size());
  out.insert(out.end(), parent.begin(), parent.end());
  head(out, 4, tokens.size());
  for (int32_t t : tokens) integer(out, t);
  const size_t extra = image_keys.size() + (cache_salt.empty() ? 0 : 1);
  if (extra == 0) {
    out.push_back(0xf6);  // null: no extra keys
  } else {
    head(out, 4, extra);
    for (const std::string& k : image_keys) text(out, k);
    if (!cache_salt.empty()) text(out, cache_salt);
  }
  return out;
}

BlockHasher::BlockHasher(int block_size, const std::string& seed) : block_size_(block_size) {
  OG_CHECK(block_size >= 1, "block size ", block_size, " must be at least 1");
  std::vector<uint8_t> s;
  text(s, seed);
  none_hash_ = Sha256::of(s.data(), s.size());
}

BlockHash BlockHasher::hash(const BlockHash& parent, std::span<const int32_t> tokens, std::string_view cache_salt,
                            bool first, std::span<const std::string> image_keys) const {
  const std::vector<uint8_t> in =
      block_hash_input(parent, tokens, first ? cache_salt : std::string_view(), image_keys);
  return Sha256::of(in.data(), in.size());
}

BlockHash BlockHasher::hash_block(const BlockHash& parent, std::span<const int32_t> tokens, int64_t b,
                                  std::string_view cache_salt, std::span<const ImageSpan> images) const {
  const int64_t bs = block_size_;
  const auto block = tokens.subspan(static_cast<size_t>(b * bs), static_cast<size_t>(bs));
  if (images.empty()) return hash(parent, block, cache_salt, b == 0);
  std::vector<std::string> keys;
  image_block_keys(images, b * bs, (b + 1) * bs, &keys);
  return hash(parent, block, cache_salt, b == 0, keys);
}

std::vector<BlockHash> BlockHasher::chain(std::span<const int32_t> tokens, std::string_view cache_salt,
                                          std::span<const ImageSpan> images) const {
  const size_t n = tokens.size() / static_cast<size_t>(block_size_);
  std::vector<BlockHash> out;
  out.reserve(n);
  BlockHash parent = none_hash_;
  for (size_t b = 0; b < n; ++b) {
    parent = hash_block(parent, tokens, static_cast<int64_t>(b), cache_salt, images);
    out.push_back(parent);
  }
  return out;
}

}  // namespace og
