// Whole-tensor conversion between f32 and the weight dtypes (F32, F16, BF16
// and the quant block formats), rows split over the process thread pool. The
// row codecs are the kernels' (kernels/ref), so what is written here is what
// the loader decodes.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/dtype.h"

namespace og {

// rows x cols f32 values -> the bytes of a [rows, cols] tensor of dtype t
// (cols a multiple of t's block; og::Error otherwise).
std::vector<uint8_t> encode_rows(DType t, const float* values, int64_t rows, int64_t cols);
// The inverse: rows x cols values of a tensor of dtype t to f32.
void decode_rows(DType t, const uint8_t* bytes, int64_t rows, int64_t cols, float* values);

}  // namespace og
