// encode_rows / decode_rows over the thread pool (see tensor_codec.h).
#include "model/tensor_codec.h"

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace og {

std::vector<uint8_t> encode_rows(DType t, const float* values, int64_t rows, int64_t cols) {
  OG_CHECK(kernels::weight_dtype_supported(t), "no encoder for dtype ", dtype_name(static_cast<uint32_t>(t)));
  const int64_t rb = dtype_row_bytes(t, cols);
  std::vector<uint8_t> out(static_cast<size_t>(rows * rb));
  thread_pool().parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kernels::quantize_row(t, values + r * cols, out.data() + r * rb, cols);
  });
  return out;
}

void decode_rows(DType t, const uint8_t* bytes, int64_t rows, int64_t cols, float* values) {
  const int64_t rb = dtype_row_bytes(t, cols);
  thread_pool().parallel_for(rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) kernels::dequantize_row(t, bytes + r * rb, values + r * cols, cols);
  });
}

}  // namespace og
