// Reference row codecs by dtype, dot products, the row-range matmul, and the
// elementwise ops. Accumulations are in double so the reference is the most
// accurate thing the fast variants are compared with.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "kernels/ref/ref.h"

namespace og::kernels::ref {

namespace {
// A regrouped K-quant row (256-element blocks of kBytes): each block unpacked
// to the file's layout, then dequantized as the file's type.
template <int kBytes>
void dequant_regrouped(void (*unpack)(const uint8_t*, uint8_t*, int64_t), void (*dequant)(const void*, float*, int64_t),
                       const uint8_t* b, float* dst, int64_t n) {
  for (int64_t k = 0; k < n / 256; ++k) {
    uint8_t blk[kBytes];
    unpack(b + kBytes * k, blk, 1);
    dequant(blk, dst + 256 * k, 256);
  }
}
}  // namespace

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  switch (t) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        dst[i] = f16_to_f32(h);
      }
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        dst[i] = bf16_to_f32(h);
      }
      return;
    case DType::Q4_0: dequant_q4_0(src, dst, n); return;
    case DType::Q4_1: dequant_q4_1(src, dst, n); return;
    case DType::Q5_0: dequant_q5_0(src, dst, n); return;
    case DType::Q5_1: dequant_q5_1(src, dst, n); return;
    case DType::Q8_0: dequant_q8_0(src, dst, n); return;
    case DType::Q4_K: dequant_q4_k(src, dst, n); return;
    case DType::Q4_K_R: return dequant_regrouped<144>(&unpack_q4_k_r, &dequant_q4_k, b, dst, n);
    case DType::Q5_K: dequant_q5_k(src, dst, n); return;
    case DType::Q5_K_R: return dequant_regrouped<176>(&unpack_q5_k_r, &dequant_q5_k, b, dst, n);
    case DType::Q6_K: dequant_q6_k(src, dst, n); return;
    case DType::Q6_K_R: return dequant_regrouped<210>(&unpack_q6_k_r, &dequant_q6_k, b, dst, n);
    case DType::Q2_K: dequant_q2_k(src, dst, n); return;
    case DType::Q3_K: dequant_q3_k(src, dst, n); return;
    case DType::IQ4_NL: dequant_iq4_nl(src, dst, n); return;
    case DType::IQ4_XS: dequant_iq4_xs(src, dst, n); return;
    case DType::MXFP4: dequant_mxfp4(src, dst, n); return;
    default: fail("no kernels for weight dtype ", dtype_name(static_cast<uint32_t>(t)));
  }
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  switch (t) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h = f32_to_f16(src[i]);
        std::memcpy(b + 2 * i, &h, 2);
      }
      return;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h = f32_to_bf16(src[i]);
        std::memcpy(b + 2 * i, &h, 2);
      }
      return;
    case DType::Q4_0: quant_q4_0(src, dst, n); return;
    case DType::Q4_1: quant_q4_1(src, dst, n); return;
    case DType::Q5_0: quant_q5_0(src, dst, n); return;
    case DType::Q5_1: quant_q5_1(src, dst, n); return;
    case DType::Q8_0: quant_q8_0(src, dst, n); return;
    case DType::Q4_K: quant_q4_k(src, dst, n); return;
    case DType::Q5_K: quant_q5_k(src, dst, n); return;
    case DType::Q6_K: quant_q6_k(src, dst, n); return;
    case DType::Q2_K: quant_q2_k(src, dst, n); return;
    case DType::Q3_K: quant_q3_k(src, dst, n); return;
    case DType::IQ4_NL: quant_iq4_nl(src, dst, n); return;
    case DType::IQ4_XS: quant_iq4_xs(src, dst, n); return;
    case DType::MXFP4: quant_mxfp4(src, dst, n); return;
    default: fail("no kernels for weight dtype ", dtype_name(static_cast<uint32_t>(t)));
  }
}

static float dot_f32(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return static_cast<float>(s);
}

float dot_row(DType t, const void* w_row, const float* x, int64_t n) {
  if (t == DType::F32) return dot_f32(static_cast<const float*>(w_row), x, n);
  thread_local std::vector<float> buf;
  buf.resize(static_cast<size_t>(n));
  dequantize_row(t, w_row, buf.data(), n);
  return dot_f32(buf.data(), x, n);
}

bool is_interleaved(DType t) {
  return t == DType::Q8_0_R || t == DType::Q4_0_R || t == DType::Q4_K_R16 || t == DType::Q6_K_R16 ||
         t == DType::IQ4_NL_R || t == DType::MXFP4_R;
}

DType interleaved_row(DType t, const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst) {
  switch (t) {
    case DType::Q8_0_R: q8_0_r_row(data, n_rows, n_in, r, dst); return DType::Q8_0;
    case DType::Q4_0_R: q4_0_r_row(data, n_rows, n_in, r, dst); return DType::Q4_0;
    case DType::Q4_K_R16: q4_k_r16_row(data, n_rows, n_in, r, dst); return DType::Q4_K;
    case DType::Q6_K_R16: q6_k_r16_row(data, n_rows, n_in, r, dst); return DType::Q6_K;
    case DType::IQ4_NL_R: q4_0_r_row(data, n_rows, n_in, r, dst); return DType::IQ4_NL;
    case DType::MXFP4_R: mxfp4_r_row(data, n_rows, n_in, r, dst); return DType::MXFP4;
    default: fail("interleaved_row: ", dtype_info(t).name, " is not an interleaved layout");
  }
}

void matmul_rows(DType t, const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1,
                 const float* x, int64_t n_x, float* y, int64_t n_out) {
  thread_local std::vector<float> buf;
  buf.resize(static_cast<size_t>(n_in));
  thread_local std::vector<uint8_t> row;  // a row of an interleaved layout gathered as its file dtype
  if (is_interleaved(t)) row.resize(static_cast<size_t>(row_bytes));
  for (int64_t r = r0; r < r1; ++r) {
    if (is_interleaved(t))
      dequantize_row(interleaved_row(t, w, n_out, n_in, r, row.data()), row.data(), buf.data(), n_in);
    else
      dequantize_row(t, w + r * row_bytes, buf.data(), n_in);  // once per weight row
    for (int64_t i = 0; i < n_x; ++i) y[i * n_out + r] = dot_f32(buf.data(), x + i * n_in, n_in);
  }
}

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * (w ? w[i] : 1.0f);
}

void layer_norm(const float* x, const float* w, const float* b, float eps, int64_t n, float* y) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(n);
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    const double v = (x[i] - mean) * inv;
    y[i] = static_cast<float>(v * (w ? w[i] : 1.0f) + (b ? b[i] : 0.0f));
  }
}

void gelu_erf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    x[i] = static_cast<float>(0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440)));
  }
}

void rope(float* x, int64_t head_dim, int64_t n_rot, int64_t pos, const float* inv_freq, bool interleaved) {
  (void)head_dim;  // dims n_rot..head_dim pass through
  int64_t half = n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    double theta = static_cast<double>(pos) * inv_freq[i];
    double c = std::cos(theta), s = std::sin(theta);
    float* a = interleaved ? x + 2 * i : x + i;
    float* b = interleaved ? x + 2 * i + 1 : x + i + half;
    double x0 = *a, x1 = *b;
    *a = static_cast<float>(x0 * c - x1 * s);
    *b = static_cast<float>(x0 * s + x1 * c);
  }
}

// rope() split so that a position's angles serve all its heads; each step is
// rope()'s own double arithmetic, so the result is the same bit for bit.
void rope_angles(int64_t pos, int64_t n_rot, const float* inv_freq, double* cs) {
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const double theta = static_cast<double>(pos) * inv_freq[i];
    cs[2 * i] = std::cos(theta);
    cs[2 * i + 1] = std::sin(theta);
  }
}

void rope_apply(float* x, int64_t n_rot, const double* cs, bool interleaved) {
  const int64_t half = n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double c = cs[2 * i], s = cs[2 * i + 1];
    float* a = interleaved ? x + 2 * i : x + i;
    float* b = interleaved ? x + 2 * i + 1 : x + i + half;
    const double x0 = *a, x1 = *b;
    *a = static_cast<float>(x0 * c - x1 * s);
    *b = static_cast<float>(x0 * s + x1 * c);
  }
}

// A row that is entirely −inf (fully masked) becomes all zeros.
void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  if (mx == -INFINITY) {
    std::fill(x, x + n, 0.0f);
    return;
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double g = gate[i];
    gate[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

// 0.5·g·(1 + tanh(u)) with u = √(2/π)·(g + 0.044715·g³), computed through the
// identity 1 + tanh(u) = 2 / (1 + e^{−2u}), which does not cancel where tanh(u) ≈ −1.
void gelu_tanh_mul(float* gate, const float* up, int64_t n) {
  const double k = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < n; ++i) {
    double g = gate[i];
    double u = k * (g + 0.044715 * g * g * g);
    gate[i] = static_cast<float>(g / (1.0 + std::exp(-2.0 * u)) * up[i]);
  }
}

void add(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void scale(float* y, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

void f32_to_f16_row(const float* x, void* dst, int64_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(d + 2 * i, &h, 2);
  }
}

}  // namespace og::kernels::ref
