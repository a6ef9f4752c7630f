// Attention over stored K/V rows, read directly in the storage dtype (no
// dequantised copy of the history). A query group (the g query heads sharing
// one KV head) attends over a list of spans of consecutive stored rows. The
// scalar kernels are the reference; kv_attend_avx512.cpp holds the fast ones,
// chosen at run time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_types.h"

namespace og::kv {

// n consecutive stored rows of one KV head: K row i at k + i * row_bytes_k.
struct KvSpan {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  int64_t n = 0;
};

struct AttendKernels {
  // s[j * s_stride + i] = scale * (q_j · k_i)   q [g, dk], k: n rows of rbk bytes
  void (*scores)(const float* q, int g, int dk, const uint8_t* k, int64_t rbk, int64_t n, float scale, float* s,
                 int64_t s_stride);
  // out_j[dv] += Σ_i w[j * w_stride + i] * v_i   v: n rows of rbv bytes
  void (*accum)(const float* w, int64_t w_stride, int g, const uint8_t* v, int64_t rbv, int64_t n, int dv,
                float* out);
  // x[n] = exp(x - mx), returns the sum
  float (*exp_sum)(float* x, int64_t n, float mx);
};

enum class KvIsa { kScalar, kAvx512 };
const char* kv_isa_name(KvIsa isa);
bool kv_isa_available(KvIsa isa);
// The kernels in use: the best available unless set_kv_isa chose another
// (tests compare every available ISA with the scalar kernels).
KvIsa kv_isa();
void set_kv_isa(KvIsa isa);  // throws og::Error if not available
const AttendKernels& attend_kernels(KvDType t, KvIsa isa);
const AttendKernels* attend_kernels_avx512(KvDType t);  // kv_attend_avx512.cpp

// out[g, dv] = softmax(scale * q kᵀ) v over the spans, for q [g, dk].
// scratch is resized to hold g * (total rows) scores.
void attend(KvDType t, const float* q, int g, int dk, int dv, std::span<const KvSpan> spans, int64_t rbk,
            int64_t rbv, float scale, std::vector<float>& scratch, float* out);

}  // namespace og::kv
