// model_facts: the served model's file facts, read once at load.
#include "server/model_facts.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "format/model_source.h"
#include "model/config.h"
#include "model/model.h"
#include "runtime/model_fingerprint.h"
#include "tensor/dtype.h"

namespace og::server {
namespace {

namespace fs = std::filesystem;

int64_t unix_seconds(fs::file_time_type t) {
  // The file clock's offset from the system clock now (libstdc++ 12 has no clock_cast).
  const auto sys = std::chrono::system_clock::now() +
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(t - fs::file_time_type::clock::now());
  return std::chrono::duration_cast<std::chrono::seconds>(sys.time_since_epoch()).count();
}

// Size and newest modification time of a file, or of a directory's regular files.
void disk_facts(const std::string& path, ModelFacts& f) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    f.size = static_cast<int64_t>(fs::file_size(path, ec));
    f.modified = unix_seconds(fs::last_write_time(path, ec));
    return;
  }
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (!e.is_regular_file(ec)) continue;
    f.size += static_cast<int64_t>(e.file_size(ec));
    f.modified = std::max(f.modified, unix_seconds(e.last_write_time(ec)));
  }
}

void tensor_facts(const TensorSource& src, ModelFacts& f) {
  std::map<std::string, uint64_t> bytes;  // weight type -> bytes
  for (const TensorInfo& t : src.tensors()) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    f.parameters += n;
    bytes[t.known_type ? dtype_name(t.type_id) : t.type_name] += t.nbytes;
  }
  uint64_t most = 0;
  for (const auto& [name, b] : bytes)
    if (b > most) {
      most = b;
      f.quantization = name;
    }
  for (char& c : f.quantization) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
}

}  // namespace

ModelFacts model_facts(const Model& m, const ModelSource& src) {
  ModelFacts f;
  f.path = m.source_path();
  f.family = m.architecture();
  f.context_length = m.config().n_ctx;
  f.embedding_length = m.config().embedding_dim();
  f.block_count = m.config().n_layers();
  disk_facts(f.path, f);
  try {
    f.digest = to_hex(model_fingerprint(f.path));
  } catch (const std::exception&) {
  }
  try {
    // From the run's source: the file (or the directory's weights) is not reopened.
    if (src.tensors()) {
      f.format = src.gguf() ? "gguf" : "safetensors";
      tensor_facts(*src.tensors(), f);
    }
  } catch (const std::exception&) {
  }
  return f;
}

std::string parameter_size_text(int64_t n) {
  char buf[32];
  const double v = static_cast<double>(n);
  if (n >= 1000000000) std::snprintf(buf, sizeof buf, "%.1fB", v / 1e9);
  else if (n >= 1000000) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (n >= 1000) std::snprintf(buf, sizeof buf, "%.0fK", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

}  // namespace og::server
