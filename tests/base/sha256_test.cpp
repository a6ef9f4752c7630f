// SHA-256 against FIPS 180-4's example digests, whole and fed in pieces.
#include "base/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace og {

void sha256_use_scalar_for_tests(bool scalar);  // base/sha256.cpp

namespace {

std::string hex_of(std::string_view s) { return to_hex(Sha256::of(s)); }

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex_of(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesEqualTheWhole) {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg.push_back(static_cast<char>(i * 7 + 3));
  // Every length around the padding boundaries (55, 56, 63, 64 bytes ...), fed in uneven pieces.
  for (size_t n : {0u, 1u, 55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 128u, 300u}) {
    const std::string_view m(msg.data(), n);
    Sha256 h;
    for (size_t at = 0, step = 1; at < n; at += step, step = step * 3 % 17 + 1) h.update(m.substr(at, step));
    EXPECT_EQ(h.finish(), Sha256::of(m)) << n;
  }
}

// The SHA-NI rounds (where the CPU has them) and the scalar ones agree on
// every length around block boundaries and on a long message in pieces.
TEST(Sha256, ScalarAndShaNiAgree) {
  std::string msg;
  for (int i = 0; i < 5000; ++i) msg.push_back(static_cast<char>((i * 131 + 7) ^ (i >> 3)));
  for (size_t n : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 127u, 128u, 129u, 1000u, 5000u}) {
    const std::string_view m(msg.data(), n);
    sha256_use_scalar_for_tests(true);
    const Sha256Digest scalar = Sha256::of(m);
    sha256_use_scalar_for_tests(false);
    EXPECT_EQ(Sha256::of(m), scalar) << n;
    Sha256 h;
    for (size_t at = 0, step = 1; at < n; at += step, step = step * 7 % 193 + 1) h.update(m.substr(at, step));
    EXPECT_EQ(h.finish(), scalar) << n;
  }
  sha256_use_scalar_for_tests(true);
  EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  sha256_use_scalar_for_tests(false);
}

}  // namespace
}  // namespace og
