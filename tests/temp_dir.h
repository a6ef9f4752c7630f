// Temporary files for tests. TempDir is a fresh empty directory under the
// system temp dir, removed on destruction. temp_path(name) is a path in one
// such directory per test process: ctest runs each test in its own process,
// and test runs from several checkouts at once must never share a file name
// (fixed names under /tmp made two concurrent runs overwrite each other's files).
#pragma once

#include <filesystem>
#include <random>
#include <string>

namespace og::test {

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("og_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name = "") const { return name.empty() ? path_.string() : (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A path named `name` in this process's temp directory (nothing is created).
inline std::string temp_path(const std::string& name) {
  static const TempDir dir;
  return dir.path(name);
}

}  // namespace og::test
