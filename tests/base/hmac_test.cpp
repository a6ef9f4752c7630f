// HMAC-SHA-256 against RFC 4231's test cases 1-7 (case 5 compares the first
// 128 bits, as the RFC truncates it), whole and fed in pieces; digests_equal.
#include "base/hmac.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace og {
namespace {

std::vector<uint8_t> bytes(std::string_view s) { return {s.begin(), s.end()}; }
std::vector<uint8_t> repeat(uint8_t b, size_t n) { return std::vector<uint8_t>(n, b); }

std::string mac_hex(const std::vector<uint8_t>& key, std::string_view msg) {
  return to_hex(HmacSha256::of(key, msg.data(), msg.size()));
}

TEST(HmacSha256, Rfc4231) {
  EXPECT_EQ(mac_hex(repeat(0x0b, 20), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(mac_hex(bytes("Jefe"), "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const std::string dd(50, '\xdd'), cd(50, '\xcd');
  EXPECT_EQ(mac_hex(repeat(0xaa, 20), dd), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::vector<uint8_t> key4;
  for (uint8_t b = 1; b <= 25; ++b) key4.push_back(b);
  EXPECT_EQ(mac_hex(key4, cd), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(mac_hex(repeat(0x0c, 20), "Test With Truncation").substr(0, 32), "a3b6167473100ee06e0c796c2955552b");
  // Keys longer than the 64-byte block are hashed first.
  EXPECT_EQ(mac_hex(repeat(0xaa, 131), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(mac_hex(repeat(0xaa, 131),
                    "This is a test using a larger than block-size key and a larger than block-size data. The key "
                    "needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, PiecesEqualTheWholeAndKeysMatter) {
  std::string msg;
  for (int i = 0; i < 500; ++i) msg.push_back(static_cast<char>(i * 13 + 1));
  const std::vector<uint8_t> key = repeat(7, 32);
  HmacSha256 h(key);
  for (size_t at = 0, step = 1; at < msg.size(); at += step, step = step * 5 % 67 + 1)
    h.update(std::string_view(msg).substr(at, step));
  EXPECT_EQ(h.finish(), HmacSha256::of(key, msg.data(), msg.size()));
  std::vector<uint8_t> other = key;
  other[31] ^= 1;
  EXPECT_NE(HmacSha256::of(other, msg.data(), msg.size()), HmacSha256::of(key, msg.data(), msg.size()));
}

TEST(HmacSha256, DigestsEqual) {
  Sha256Digest a{}, b{};
  EXPECT_TRUE(digests_equal(a, b));
  b[31] = 1;
  EXPECT_FALSE(digests_equal(a, b));
  b[31] = 0, b[0] = 0x80;
  EXPECT_FALSE(digests_equal(a, b));
  EXPECT_FALSE(digests_equal(std::span(a).first(16), b));
}

}  // namespace
}  // namespace og
