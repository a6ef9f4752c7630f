// vision_parts.h: the shared pieces of the Gemma 4 and LLaVA towers.
#include "model/vision_parts.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/ops.h"

namespace og::vision_parts {

namespace {
constexpr int64_t kQueryBlock = 16;  // queries scored together against all keys
}

const TensorInfo& require(const TensorSource& src, const std::string& name, const std::vector<int64_t>& shape) {
  const TensorInfo* t = src.find(name);
  OG_CHECK(t != nullptr, src.source_name(), ": vision tensor ", name, " is missing");
  OG_CHECK(t->shape == shape, src.source_name(), ": vision tensor ", name, " has shape ", shape_str(t->shape),
           ", expected ", shape_str(shape));
  return *t;
}

std::vector<float> f32(const TensorSource& src, const std::string& name, const std::vector<int64_t>& shape) {
  const TensorView v = tensor_view(src, require(src, name, shape));
  std::vector<float> out(static_cast<size_t>(v.numel()));
  for (int64_t r = 0; r < v.rows(); ++r)
    kernels::dequantize_row(v.dtype, v.row(r), out.data() + r * v.cols(), v.cols());
  return out;
}

TensorView matrix(const TensorSource& src, const std::string& name, int64_t rows, int64_t cols) {
  TensorView v = tensor_view(src, require(src, name, {rows, cols}));
  OG_CHECK(kernels::weight_dtype_supported(v.dtype), src.source_name(), ": vision tensor ", name,
           " has a dtype without matmul kernels");
  return v;
}

TensorView f32_matrix(const std::vector<float>& values, int64_t rows, int64_t cols, const std::string& name) {
  TensorView v;
  v.data = values.data();
  v.dtype = DType::F32;
  v.shape = {rows, cols};
  v.name = name;
  return v;
}

std::optional<float> scalar(const TensorSource& src, const std::string& name) {
  const TensorInfo* t = src.find(name);
  if (t == nullptr) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : t->shape) n *= d;
  OG_CHECK(n == 1, src.source_name(), ": vision tensor ", name, " has shape ", shape_str(t->shape),
           ", expected one value");
  const TensorView v = tensor_view(src, *t);
  float x = 0;
  kernels::dequantize_row(v.dtype, v.data, &x, 1);
  return x;
}

bool Clamp::active() const {
  return std::isfinite(in_min) || std::isfinite(in_max) || std::isfinite(out_min) || std::isfinite(out_max);
}

void linear(const TensorView& w, const std::vector<float>& b, const float* x, int64_t n, float* y) {
  kernels::matmul(w, x, n, y);
  if (b.empty()) return;
  const int64_t out = w.shape[0];
  for (int64_t i = 0; i < n; ++i) kernels::add(y + i * out, b.data(), out);
}

void clamped_linear(const TensorView& w, const Clamp& c, const float* x, int64_t n, float* y) {
  const int64_t in = w.shape[1], out = w.shape[0];
  if (!c.active()) {
    kernels::matmul(w, x, n, y);
    return;
  }
  std::vector<float> xc(x, x + n * in);
  for (float& v : xc) v = std::clamp(v, c.in_min, c.in_max);
  kernels::matmul(w, xc.data(), n, y);
  for (int64_t i = 0; i < n * out; ++i) y[i] = std::clamp(y[i], c.out_min, c.out_max);
}

void attend_all(const AttendShape& s, const float* q, const float* k, const float* v, float* out) {
  const int64_t n = s.n, dh = s.head_dim, group = s.n_heads / s.n_kv_heads;
  const int64_t blocks = (n + kQueryBlock - 1) / kQueryBlock;
  const kernels::AttendKernels& ak = kernels::attend_kernels(DType::F32);
  const int64_t rb = s.kv_stride * static_cast<int64_t>(sizeof(float));
  thread_pool().parallel_for(s.n_heads * blocks, [&](int64_t t0, int64_t t1) {
    std::vector<float> qb(static_cast<size_t>(kQueryBlock * dh)), sc(static_cast<size_t>(kQueryBlock * n)),
        o(static_cast<size_t>(kQueryBlock * dh));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t h = t / blocks, i0 = (t % blocks) * kQueryBlock, g = std::min(kQueryBlock, n - i0);
      const int64_t kvh = h / group;
      for (int64_t j = 0; j < g; ++j) std::copy_n(q + (i0 + j) * s.q_stride + h * dh, dh, qb.data() + j * dh);
      ak.scores(qb.data(), static_cast<int>(g), static_cast<int>(dh),
                reinterpret_cast<const uint8_t*>(k + kvh * dh), rb, n, s.scale, sc.data(), n);
      for (int64_t j = 0; j < g; ++j) {
        float* sj = sc.data() + j * n;
        const float sum = ak.exp_sum(sj, n, ak.max(sj, n));
        kernels::scale(sj, 1.0f / sum, n);
      }
      std::fill(o.begin(), o.end(), 0.0f);
      ak.accum(sc.data(), n, static_cast<int>(g), reinterpret_cast<const uint8_t*>(v + kvh * dh), rb, n,
               static_cast<int>(dh), o.data());
      for (int64_t j = 0; j < g; ++j) std::copy_n(o.data() + j * dh, dh, out + (i0 + j) * s.q_stride + h * dh);
    }
  });
}

}  // namespace og::vision_parts
