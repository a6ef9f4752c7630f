// HMAC-SHA-256 (RFC 2104 over FIPS 180-4's SHA-256; test vectors: RFC 4231):
// the keyed MAC that authenticates the prefix cache's disk-tier blocks, so
// that a file written by anyone who does not hold the key is refused.
// Kept apart from base/sha256.h, which much of the tree includes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/sha256.h"

namespace og {

class HmacSha256 {
 public:
  explicit HmacSha256(std::span<const uint8_t> key);
  void update(const void* data, size_t n) { inner_.update(data, n); }
  void update(std::string_view s) { inner_.update(s); }
  Sha256Digest finish();  // the object is spent afterwards

  static Sha256Digest of(std::span<const uint8_t> key, const void* data, size_t n) {
    HmacSha256 h(key);
    h.update(data, n);
    return h.finish();
  }

 private:
  Sha256 inner_;
  uint8_t outer_key_[64];  // the key block XOR opad, hashed in finish()
};

// Compares two digests in time independent of where they differ (a MAC check
// must not tell a forger how many leading bytes were right).
bool digests_equal(std::span<const uint8_t> a, std::span<const uint8_t> b);

}  // namespace og
