// TensorView: a non-owning view of a tensor's bytes. Shapes are row-major,
// outermost first (PyTorch order): a weight [n_out, n_in] has n_out rows of
// n_in contiguous elements (n_in / block blocks for quantized types). GGUF's
// ne[] (fastest first) is reversed into this order by format/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace og {

struct TensorView {
  const void* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // outermost first
  std::string name;            // for error messages

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }   // innermost dim
  int64_t rows() const { return cols() == 0 ? 0 : numel() / cols(); }  // product of the others
  int64_t row_bytes() const { return dtype_row_bytes(dtype, cols()); }
  int64_t nbytes() const { return rows() * row_bytes(); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
};

std::string shape_str(const std::vector<int64_t>& shape);  // "[64, 512]"

}  // namespace og
