// KvBuffer: small buffers on the heap, large ones in 2 MiB-aligned huge-page
// memory; deep copies, moves that leave the source empty, std::bad_alloc for
// a size no mapping can hold.
#include <gtest/gtest.h>

#include <cstring>
#include <new>

#include "kv/kv_buffer.h"

namespace og {
namespace {

using kv::KvBuffer;
using kv::kKvHugePageMin;

TEST(KvBuffer, SmallOnTheHeapLargeInHugePages) {
  KvBuffer small(1000);
  ASSERT_NE(small.data(), nullptr);
  EXPECT_EQ(small.size(), 1000u);
  EXPECT_FALSE(small.huge());
  KvBuffer large(kKvHugePageMin + 17);
  ASSERT_NE(large.data(), nullptr);
  EXPECT_EQ(large.size(), kKvHugePageMin + 17);
  EXPECT_TRUE(large.huge());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.data()) % (size_t{2} << 20), 0u);
  std::memset(large.data(), 0x5A, large.size());  // every byte writable
  KvBuffer ordinary(kKvHugePageMin * 2, KvBuffer::Pages::kOrdinary);
  ASSERT_NE(ordinary.data(), nullptr);
  EXPECT_FALSE(ordinary.huge());
  EXPECT_FALSE(KvBuffer(ordinary).huge());  // a copy keeps its pages
  KvBuffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

TEST(KvBuffer, CopiesAreDeepMovesEmptyTheSource) {
  for (size_t n : {size_t{33}, kKvHugePageMin}) {
    KvBuffer a(n);
    for (size_t i = 0; i < n; ++i) a.data()[i] = uint8_t(i * 13 + 1);
    KvBuffer b = a;
    ASSERT_NE(b.data(), a.data());
    ASSERT_EQ(b.size(), n);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), n), 0);
    b.data()[0] ^= 0xFF;
    EXPECT_NE(a.data()[0], b.data()[0]);
    const uint8_t* p = a.data();
    KvBuffer c = std::move(a);
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(a.size(), 0u);
    a = c;  // a moved-from buffer takes a copy
    EXPECT_EQ(std::memcmp(a.data(), c.data(), n), 0);
    c.assign(n / 2 + 1);  // reassigning changes the size (and may move the storage)
    EXPECT_EQ(c.size(), n / 2 + 1);
  }
}

TEST(KvBuffer, ImpossibleSizeThrowsBadAllocAndLeavesItEmpty) {
  KvBuffer b(100);
  EXPECT_THROW(b.assign(size_t{1} << 62), std::bad_alloc);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_THROW(b.assign(~size_t{0}), std::bad_alloc);  // adding the 2 MiB alignment room would overflow
}

}  // namespace
}  // namespace og
