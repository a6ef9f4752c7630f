// TensorSource: name -> tensor bytes, common to GGUF files and safetensors
// checkpoints. A tensor whose type offgraph cannot compute with is still
// listed; view() is where that becomes an error naming the tensor and type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor_view.h"

namespace og {

struct TensorInfo {
  std::string name;
  uint32_t type_id = 0;          // ggml type id (safetensors dtypes are mapped to F32/F16/BF16)
  std::string type_name;         // "q4_k", "F8_E4M3", ...
  bool known_type = false;       // type_id is a DType with kernels (dtype_info(type_id)->computable)
  std::vector<int64_t> shape;    // row-major, outermost first
  const uint8_t* data = nullptr; // into the mapped file
  uint64_t nbytes = 0;
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  virtual const TensorInfo* find(std::string_view name) const = 0;
  virtual std::string source_name() const = 0;  // file or directory path, for messages
};

// The view of a tensor; throws og::Error "<source>: tensor <name> has type <t>, which offgraph cannot compute with"
TensorView tensor_view(const TensorSource& src, const TensorInfo& t);

}  // namespace og
