// Building blocks the vision towers beside Gemma 3's share (vision_gemma4.*,
// vision_llava.*): binding tensors by name with their shapes checked, a
// linear layer through kernels::matmul, and attention of every row over every
// row through the f32 attend kernels (a tower's patches see each other in both
// directions). Gemma 3's tower (vision_tower.cpp) keeps its own copies, so
// that its compute can change without touching these.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "format/tensor_source.h"
#include "tensor/tensor_view.h"

namespace og::vision_parts {

// The tensor `name` of `src` with exactly `shape`: one og::Error naming the
// source, the tensor and both shapes otherwise.
const TensorInfo& require(const TensorSource& src, const std::string& name, const std::vector<int64_t>& shape);
// All of a tensor's values as f32 (any dtype with kernels).
std::vector<float> f32(const TensorSource& src, const std::string& name, const std::vector<int64_t>& shape);
// A [rows, cols] weight as a view into the source, in a dtype with matmul kernels.
TensorView matrix(const TensorSource& src, const std::string& name, int64_t rows, int64_t cols);
// A view of f32 values held elsewhere, as a [rows, cols] matmul weight.
TensorView f32_matrix(const std::vector<float>& values, int64_t rows, int64_t cols, const std::string& name);
// A one-value tensor (shape [] as safetensors stores a scalar, or [1] as GGUF
// does) as a float; nullopt when the source lacks it.
std::optional<float> scalar(const TensorSource& src, const std::string& name);

// Gemma 4's clippable linear: the input clamped to [in_min, in_max] before the
// matmul and the output to [out_min, out_max] after (infinite bounds: plain).
struct Clamp {
  float in_min = -std::numeric_limits<float>::infinity();
  float in_max = std::numeric_limits<float>::infinity();
  float out_min = -std::numeric_limits<float>::infinity();
  float out_max = std::numeric_limits<float>::infinity();
  bool active() const;
};

// y[n, out] = x[n, in] · W^T (+ b when b is non-empty), W a [out, in] view.
void linear(const TensorView& w, const std::vector<float>& b, const float* x, int64_t n, float* y);
// The same with Gemma 4's clamps (x is copied when its clamp is active).
void clamped_linear(const TensorView& w, const Clamp& c, const float* x, int64_t n, float* y);

// Attention of every row over every row (no mask), one pool task per (head,
// block of queries). q: n rows of q_stride floats, head h at h * dh; k and v:
// n rows of kv_stride floats, kv head h / (n_heads / n_kv_heads) at that
// offset; out: n rows of q_stride floats.
struct AttendShape {
  int64_t n = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, kv_stride = 0;
  float scale = 1.0f;
};
void attend_all(const AttendShape& s, const float* q, const float* k, const float* v, float* out);

}  // namespace og::vision_parts
