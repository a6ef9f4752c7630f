// safetensors: one file or a sharded checkpoint (model.safetensors.index.json).
// F32, F16 and BF16 tensors can be used; any other dtype is listed and is a
// clear error when used (tensor_view) naming the tensor and dtype.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/tensor_source.h"

namespace og {

class SafetensorsSource : public TensorSource {
 public:
  static std::unique_ptr<SafetensorsSource> open_file(const std::string& path);
  // dir/model.safetensors.index.json if present, else dir/model.safetensors.
  static std::unique_ptr<SafetensorsSource> open_dir(const std::string& dir);
  static std::unique_ptr<SafetensorsSource> parse(const uint8_t* data, size_t size, std::string name);

  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  const TensorInfo* find(std::string_view name) const override;
  std::string source_name() const override { return name_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // __metadata__

 private:
  SafetensorsSource() = default;
  void add_file(const uint8_t* data, size_t size, const std::string& name);
  std::vector<MappedFile> files_;
  std::string name_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
  std::set<std::string> names_;  // every tensor name so far (duplicates across shards are an error)
};

// Writes one safetensors file (tests and tools). dtype is any safetensors dtype
// name ("F32", "F16", "BF16", ...). When `make` is set, bytes is ignored and
// make() is called at write time (one tensor in memory at a time).
struct SafetensorsTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  std::function<std::vector<uint8_t>()> make;
};
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors);

}  // namespace og
