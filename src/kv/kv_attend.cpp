// Scalar attention kernels for every storage dtype, the ISA choice, and the
// span-level attend() driver (scores, softmax, weighted sum of V).
#include "kv/kv_attend.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "kv/kv_common.h"
#include "tensor/dtype.h"

namespace og::kv {
namespace {

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

struct LoadF32 {
  static float at(const uint8_t* row, int e) {
    float f;
    std::memcpy(&f, row + 4 * e, 4);
    return f;
  }
};
struct LoadF16 {
  static float at(const uint8_t* row, int e) { return f16_to_f32(load_u16(row + 2 * e)); }
};
struct LoadBF16 {
  static float at(const uint8_t* row, int e) { return bf16_to_f32(load_u16(row + 2 * e)); }
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
        d += part * f16_to_f32(load_u16(blk));
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
        float wd = w[j * w_stride + i] * f16_to_f32(load_u16(blk));
        int m = std::min(kQ8Block, dv - b0);
        for (int e = 0; e < m; ++e) o[b0 + e] += wd * static_cast<float>(qs[e]);
      }
    }
  }
}

float exp_sum_scalar(float* x, int64_t n, float mx) {
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - mx));
  return sum;
}

const AttendKernels kScalarF32{scores_plain<LoadF32>, accum_plain<LoadF32>, exp_sum_scalar};
const AttendKernels kScalarF16{scores_plain<LoadF16>, accum_plain<LoadF16>, exp_sum_scalar};
const AttendKernels kScalarBF16{scores_plain<LoadBF16>, accum_plain<LoadBF16>, exp_sum_scalar};
const AttendKernels kScalarQ8{scores_q8, accum_q8, exp_sum_scalar};

KvIsa best_isa() { return kv_isa_available(KvIsa::kAvx512) ? KvIsa::kAvx512 : KvIsa::kScalar; }
KvIsa g_isa = best_isa();

}  // namespace

const char* kv_isa_name(KvIsa isa) { return isa == KvIsa::kAvx512 ? "avx512" : "scalar"; }

bool kv_isa_available(KvIsa isa) {
  if (isa == KvIsa::kScalar) return true;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c") &&
         attend_kernels_avx512(KvDType::F32) != nullptr;
}

KvIsa kv_isa() { return g_isa; }

void set_kv_isa(KvIsa isa) {
  OG_CHECK(kv_isa_available(isa), "kv attention: instruction set ", kv_isa_name(isa), " is not available here");
  g_isa = isa;
}

const AttendKernels& attend_kernels(KvDType t, KvIsa isa) {
  if (isa == KvIsa::kAvx512) {
    const AttendKernels* k = attend_kernels_avx512(t);
    if (k != nullptr) return *k;
  }
  switch (t) {
    case KvDType::F32: return kScalarF32;
    case KvDType::F16: return kScalarF16;
    case KvDType::BF16: return kScalarBF16;
    case KvDType::Q8_0: return kScalarQ8;
  }
  return kScalarF32;
}

void attend(KvDType t, const float* q, int g, int dk, int dv, std::span<const KvSpan> spans, int64_t rbk,
            int64_t rbv, float scale, std::vector<float>& scratch, float* out) {
  const AttendKernels& kr = attend_kernels(t, g_isa);
  int64_t total = 0;
  for (const KvSpan& s : spans) total += s.n;
  std::fill(out, out + int64_t{g} * dv, 0.f);
  if (total == 0) return;
  if (scratch.size() < size_t(g) * total) scratch.resize(size_t(g) * total);
  float* s = scratch.data();
  int64_t at = 0;
  for (const KvSpan& sp : spans) {
    kr.scores(q, g, dk, sp.k, rbk, sp.n, scale, s + at, total);
    at += sp.n;
  }
  std::vector<float> inv(g);
  for (int j = 0; j < g; ++j) {
    float* sj = s + j * total;
    float mx = *std::max_element(sj, sj + total);
    inv[j] = 1.f / kr.exp_sum(sj, total, mx);
  }
  at = 0;
  for (const KvSpan& sp : spans) {
    kr.accum(s + at, total, g, sp.v, rbv, sp.n, dv, out);
    at += sp.n;
  }
  for (int j = 0; j < g; ++j)
    for (int e = 0; e < dv; ++e) out[int64_t{j} * dv + e] *= inv[j];
}

}  // namespace og::kv
