// HugePageBuffer: 2 MiB aligned, writable, movable; release_file_pages keeps
// a read-only file mapping readable (pages fault back in from the file).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/huge_pages.h"
#include "base/mapped_file.h"
#include "temp_dir.h"

namespace og {
namespace {

TEST(HugePageBuffer, AlignedWritableAndMovable) {
  HugePageBuffer b(3 * 1024 * 1024 + 5);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), 3u * 1024 * 1024 + 5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (2u << 20), 0u);
  std::memset(b.data(), 0xAB, b.size());
  HugePageBuffer c = std::move(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(c.data()[c.size() - 1], 0xAB);
  HugePageBuffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

TEST(HugePageBuffer, ImpossibleSizeThrows) {
  EXPECT_THROW({ HugePageBuffer b(size_t{1} << 62); }, Error);
}

TEST(ReleaseFilePages, MappingStaysReadable) {
  const std::string path = og::test::temp_path("og_release_pages.bin");
  std::string content(64 * 1024, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(content.data(), 1, content.size(), f);
  std::fclose(f);
  MappedFile m = MappedFile::open(path);
  ASSERT_EQ(std::memcmp(m.data(), content.data(), content.size()), 0);
  release_file_pages(m.data() + 100, m.size() - 200);
  EXPECT_EQ(std::memcmp(m.data(), content.data(), content.size()), 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace og
