// Scalar attention kernels over stored K/V rows, one per storage dtype: the
// reference every faster variant (x86/attend_avx2.cpp, x86/attend_avx512.cpp) is
// tested against.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ops.h"
#include "kernels/ref/ref.h"

namespace og::kernels::ref {
namespace {

constexpr int kQ8Block = 32;             // values per q8_0 block
constexpr int kQ8BlockBytes = 2 + kQ8Block;  // f16 scale + int8 values

struct LoadF32 {
  static constexpr int kBytes = 4;
  static float at(const uint8_t* row, int e) {
    float f;
    std::memcpy(&f, row + 4 * e, 4);
    return f;
  }
};
struct LoadF16 {
  static constexpr int kBytes = 2;
  static float at(const uint8_t* row, int e) { return load_f16(row + 2 * e); }
};
struct LoadBF16 {
  static constexpr int kBytes = 2;
  static float at(const uint8_t* row, int e) {
    uint16_t b;
    std::memcpy(&b, row + 2 * e, 2);
    return bf16_to_f32(b);
  }
};

template <class L>
void scores_plain(const float* q, int g, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
                  int64_t s_stride) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = k + i * rbk;
    for (int j = 0; j < g; ++j) {
      const float* qj = q + int64_t{j} * dk;
      float d = 0.f;
      for (int e = 0; e < dk; ++e) d += qj[e] * L::at(row, e);
      s[j * s_stride + i] = d * scale;
    }
  }
}

// K in blocks of kKeyBlock keys (ops.h): key i's value e is element
// e * kKeyBlock + l of its block, l its lane; a block is dk * kKeyBlock values.
template <class L>
void scores_blocked_plain(const float* q, int g, int dk, const uint8_t* kb, int lane, int64_t n, float scale,
                          float* s, int64_t s_stride) {
  const int64_t block_bytes = L::kBytes * int64_t{dk} * kKeyBlock;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = lane + i;
    const uint8_t* block = kb + (at / kKeyBlock) * block_bytes;
    const int l = int(at % kKeyBlock);
    for (int j = 0; j < g; ++j) {
      const float* qj = q + int64_t{j} * dk;
      float d = 0.f;
      for (int e = 0; e < dk; ++e) d += qj[e] * L::at(block, e * kKeyBlock + l);
      s[j * s_stride + i] = d * scale;
    }
  }
}

template <class L>
void accum_plain(const float* w, int64_t w_stride, int g, const uint8_t* v, int64_t rbv, int64_t n, int dv,
                 float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = v + i * rbv;
    for (int j = 0; j < g; ++j) {
      float wj = w[j * w_stride + i];
      float* o = out + int64_t{j} * dv;
      for (int e = 0; e < dv; ++e) o[e] += wj * L::at(row, e);
    }
  }
}

void scores_q8(const float* q, int g, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
               int64_t s_stride) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = k + i * rbk;
    for (int j = 0; j < g; ++j) {
      const float* qj = q + int64_t{j} * dk;
      float d = 0.f;
      for (int b0 = 0; b0 < dk; b0 += kQ8Block) {
        const uint8_t* blk = row + (b0 / kQ8Block) * kQ8BlockBytes;
        const auto* qs = reinterpret_cast<const int8_t*>(blk + 2);
        int m = std::min(kQ8Block, dk - b0);
        float part = 0.f;
        for (int e = 0; e < m; ++e) part += qj[b0 + e] * static_cast<float>(qs[e]);
        d += part * load_f16(blk);
      }
      s[j * s_stride + i] = d * scale;
    }
  }
}

void accum_q8(const float* w, int64_t w_stride, int g, const uint8_t* v, int64_t rbv, int64_t n, int dv, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* row = v + i * rbv;
    for (int j = 0; j < g; ++j) {
      float* o = out + int64_t{j} * dv;
      for (int b0 = 0; b0 < dv; b0 += kQ8Block) {
        const uint8_t* blk = row + (b0 / kQ8Block) * kQ8BlockBytes;
        const auto* qs = reinterpret_cast<const int8_t*>(blk + 2);
        float wd = w[j * w_stride + i] * load_f16(blk);
        int m = std::min(kQ8Block, dv - b0);
        for (int e = 0; e < m; ++e) o[b0 + e] += wd * static_cast<float>(qs[e]);
      }
    }
  }
}

float exp_sum(float* x, int64_t n, float mx) {
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - mx));
  return sum;
}

float max_of(const float* x, int64_t n) {
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

const AttendKernels kF32{scores_plain<LoadF32>, scores_blocked_plain<LoadF32>, accum_plain<LoadF32>, exp_sum, max_of};
const AttendKernels kF16{scores_plain<LoadF16>, scores_blocked_plain<LoadF16>, accum_plain<LoadF16>, exp_sum, max_of};
const AttendKernels kBF16{scores_plain<LoadBF16>, scores_blocked_plain<LoadBF16>, accum_plain<LoadBF16>, exp_sum,
                         max_of};
const AttendKernels kQ8{scores_q8, nullptr, accum_q8, exp_sum, max_of};

}  // namespace

const AttendKernels* attend_kernels(DType t) {
  switch (t) {
    case DType::F32: return &kF32;
    case DType::F16: return &kF16;
    case DType::BF16: return &kBF16;
    case DType::Q8_0: return &kQ8;
    default: return nullptr;
  }
}

}  // namespace og::kernels::ref
