// The block hash chain against vLLM's documented algorithm (sha256_cbor):
// the CBOR bytes worked out by hand for one block, and digests of the chain
// computed from that definition with Python's hashlib over cbor2.dumps(...,
// canonical=True) (the library vLLM hashes with):
//   NONE_HASH = sha256(cbor("0"))
//   b0 = sha256(cbor([NONE_HASH, [1, 2, 3, 4], None]))
//   b1 = sha256(cbor([b0, [5, 6, 7, 100000], None]))
//   salted: the first block's extra keys are ["tenant-a"].
#include "runtime/block_hash.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace og {
namespace {

std::string hex(const BlockHash& h) { return to_hex(h); }

TEST(BlockHash, CborInputByHand) {
  const BlockHasher h(4, "0");
  // "0" as CBOR: a 1-byte text string, 0x61 0x30.
  EXPECT_EQ(hex(h.none_hash()), to_hex(Sha256::of(std::string("\x61\x30"))));
  // [parent, [1, 300, 70000, 2^31-1], ["ab"]]:
  // 0x83 array(3); 0x58 0x20 bytes(32) + the parent; 0x84 array(4): 0x01,
  // 0x19 012c (uint16), 0x1a 00011170 (uint32), 0x1a 7fffffff; 0x81 array(1)
  // 0x62 "ab".
  const std::vector<int32_t> tokens = {1, 300, 70000, 2147483647};
  std::string want = "835820" + hex(h.none_hash()) + "84" "01" "19012c" "1a00011170" "1a7fffffff" "81" "626162";
  EXPECT_EQ(to_hex(block_hash_input(h.none_hash(), tokens, "ab")), want);
  // No extra keys: null (0xf6).
  want = "835820" + hex(h.none_hash()) + "84" "01" "19012c" "1a00011170" "1a7fffffff" "f6";
  EXPECT_EQ(to_hex(block_hash_input(h.none_hash(), tokens, "")), want);
}

TEST(BlockHash, ChainEqualsTheDocumentedAlgorithm) {
  const BlockHasher h(4, "0");
  EXPECT_EQ(hex(h.none_hash()), "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e");
  EXPECT_EQ(hex(BlockHasher(16, "42").none_hash()), "9fa6eb003f14425eb9c8e6baacfbcaab26257357b829c7bfa74ffcc4f31c1780");
  // Nine tokens: two full blocks; the ninth is not hashed.
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 100000, 9};
  const std::vector<BlockHash> c = h.chain(tokens, "");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(hex(c[0]), "c9d58ba695280d69b243e1e0df813136ca9196b286fb1a021e0b2e028ef071cb");
  EXPECT_EQ(hex(c[1]), "71dee43092dc699fbcc900ce9085c27c382b8913221926459280844d4cc61880");
  EXPECT_EQ(block_hash_low64(c[1]), 10556582994091841664ull);  // int.from_bytes(b1, "big") & (2**64 - 1)
  // The salt changes the first block's input only, and through it the whole chain.
  const std::vector<BlockHash> s = h.chain(tokens, "tenant-a");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(hex(s[0]), "5188afdf425172363edc325e9600bdb55cfc0950138d1c11b71ec2ac150962f4");
  EXPECT_EQ(hex(s[1]), "b0df8392ca76c1583b94a5bc5d40bc2f8bd2a8343ef82114001db7ef79035bba");
  EXPECT_EQ(h.hash(s[0], std::span(tokens).subspan(4, 4), "tenant-a", /*first=*/false), s[1]);
  // Shorter than a block: no hashes; another seed: another chain.
  EXPECT_TRUE(h.chain(std::span(tokens).first(3), "").empty());
  EXPECT_NE(BlockHasher(4, "1").chain(tokens, "")[0], c[0]);
  EXPECT_THROW(BlockHasher(0, "0"), Error);
}

}  // namespace
}  // namespace og
