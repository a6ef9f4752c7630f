// SHA-256 (FIPS 180-4): the digest that names prefix-cache blocks (the same
// digest vLLM's sha256_cbor block hashes use) and checks disk-tier files.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace og {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Sha256Digest finish();  // the object is spent afterwards

  static Sha256Digest of(const void* data, size_t n) {
    Sha256 h;
    h.update(data, n);
    return h.finish();
  }
  static Sha256Digest of(std::string_view s) { return of(s.data(), s.size()); }

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex of a digest (64 characters).
std::string to_hex(std::span<const uint8_t> bytes);

}  // namespace og
