// HMAC as RFC 2104 defines it: H((K ^ opad) || H((K ^ ipad) || m)), with a key
// longer than SHA-256's 64-byte block hashed first and a shorter one padded
// with zeros.
#include "base/hmac.h"

#include <algorithm>
#include <cstring>

namespace og {

HmacSha256::HmacSha256(std::span<const uint8_t> key) {
  uint8_t block[64] = {};
  if (key.size() > sizeof block) {
    const Sha256Digest d = Sha256::of(key.data(), key.size());
    std::memcpy(block, d.data(), d.size());
  } else if (!key.empty()) {
    std::memcpy(block, key.data(), key.size());
  }
  uint8_t inner_key[64];
  for (size_t i = 0; i < sizeof block; ++i) {
    inner_key[i] = static_cast<uint8_t>(block[i] ^ 0x36);
    outer_key_[i] = static_cast<uint8_t>(block[i] ^ 0x5c);
  }
  inner_.update(inner_key, sizeof inner_key);
}

Sha256Digest HmacSha256::finish() {
  const Sha256Digest inner = inner_.finish();
  Sha256 outer;
  outer.update(outer_key_, sizeof outer_key_);
  outer.update(inner.data(), inner.size());
  return outer.finish();
}

bool digests_equal(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.size() != b.size()) return false;
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = static_cast<uint8_t>(diff | (a[i] ^ b[i]));
  return diff == 0;
}

}  // namespace og
