// model_fingerprint: equal for a copy of a file, different for another size,
// a changed header byte or a changed byte in a sampled weight block, and for
// an HF directory whose files differ; an unreadable path is a one-line error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "runtime/model_fingerprint.h"
#include "temp_dir.h"

namespace og {
namespace {

void write_file(const std::string& path, size_t n, size_t changed_at = SIZE_MAX) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 31 + (i >> 12));
  if (changed_at < n) s[changed_at] = static_cast<char>(s[changed_at] ^ 1);
  std::ofstream(path, std::ios::binary) << s;
}

TEST(ModelFingerprint, NamesTheContentNotThePath) {
  test::TempDir dir;
  const size_t n = (size_t{9} << 20) + 12345;  // past the 4 MiB head: samples and tail count
  write_file(dir.path("a.gguf"), n);
  write_file(dir.path("copy.gguf"), n);
  write_file(dir.path("header.gguf"), n, 100);
  write_file(dir.path("tail.gguf"), n, n - 1);
  write_file(dir.path("short.gguf"), n - 1);
  const Sha256Digest a = model_fingerprint(dir.path("a.gguf"));
  EXPECT_EQ(model_fingerprint(dir.path("copy.gguf")), a);
  EXPECT_NE(model_fingerprint(dir.path("header.gguf")), a);
  EXPECT_NE(model_fingerprint(dir.path("tail.gguf")), a);
  EXPECT_NE(model_fingerprint(dir.path("short.gguf")), a);
  // A sampled block: the first sample starts right after the head.
  write_file(dir.path("sample.gguf"), n, (size_t{4} << 20) + 10);
  EXPECT_NE(model_fingerprint(dir.path("sample.gguf")), a);
}

TEST(ModelFingerprint, DirectoriesAndErrors) {
  test::TempDir one, two;
  write_file(one.path("config.json"), 100);
  write_file(one.path("model.safetensors"), 5000);
  write_file(two.path("config.json"), 100);
  write_file(two.path("model.safetensors"), 5000, 4000);
  EXPECT_NE(model_fingerprint(one.path()), model_fingerprint(two.path()));
  EXPECT_EQ(model_fingerprint(one.path()), model_fingerprint(one.path()));
  try {
    model_fingerprint(one.path("missing.gguf"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace og
