// model_fingerprint: size, head, evenly spaced samples and tail of the model's files.
#include "runtime/model_fingerprint.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/error.h"

namespace og {
namespace {

constexpr int64_t kHeadBytes = int64_t{4} << 20;
constexpr int64_t kSampleBytes = int64_t{64} << 10;
constexpr int kSamples = 64;

void hash_range(std::ifstream& f, const std::string& path, int64_t at, int64_t n, std::vector<char>& buf, Sha256& h) {
  buf.resize(size_t(n));
  f.seekg(at);
  f.read(buf.data(), n);
  OG_CHECK(f.gcount() == n, path, ": cannot read ", n, " bytes at ", at, " for the model fingerprint");
  h.update(buf.data(), size_t(n));
}

void hash_file(const std::filesystem::path& p, const std::string& name, Sha256& h) {
  std::error_code ec;
  const int64_t size = int64_t(std::filesystem::file_size(p, ec));
  OG_CHECK(!ec, p.string(), ": cannot read its size for the model fingerprint (", ec.message(), ")");
  std::ifstream f(p, std::ios::binary);
  OG_CHECK(f, p.string(), ": cannot open it for the model fingerprint");
  h.update(name);
  h.update(cat("\n", size, "\n"));
  std::vector<char> buf;
  hash_range(f, p.string(), 0, std::min(size, kHeadBytes), buf, h);
  if (size <= kHeadBytes) return;
  for (int i = 0; i < kSamples; ++i) {
    const int64_t at = kHeadBytes + (size - kHeadBytes - kSampleBytes) / kSamples * i;
    hash_range(f, p.string(), std::max(kHeadBytes, at), std::min(kSampleBytes, size - std::max(kHeadBytes, at)), buf, h);
  }
  const int64_t tail = std::max(kHeadBytes, size - kSampleBytes);
  hash_range(f, p.string(), tail, size - tail, buf, h);
}

}  // namespace

Sha256Digest model_fingerprint(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  Sha256 h;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file()) files.push_back(e.path());
    OG_CHECK(!ec, path, ": cannot list it for the model fingerprint (", ec.message(), ")");
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) hash_file(p, p.filename().string(), h);
  } else {
    hash_file(path, "", h);
  }
  return h.finish();
}

}  // namespace og
