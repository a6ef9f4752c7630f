// Shared helpers of the kernel tests: random rows, error measures, and the
// list of weight dtypes with kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tensor/dtype.h"

namespace og::kernels::testing {

inline const std::vector<DType>& all_weight_dtypes() {
  static const std::vector<DType> v = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                                       DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                       DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q2_K,
                                       DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
  return v;
}

inline std::vector<float> random_normal(int64_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return v;
}

// sqrt(Σ(a−b)² / Σb²)
inline double rel_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}


}  // namespace og::kernels::testing
