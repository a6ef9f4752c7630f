// Reference codecs of the 32-element block formats Q4_0, Q4_1, Q5_0, Q5_1 and
// Q8_0 (layouts in shared/design/MODEL-FORMATS.md §2.2), and the in-memory
// interleaved layouts Q8_0_R and Q4_0_R (ref.h). Element i of a block
// takes the low nibble of qs[i], element i+16 the high nibble.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ref/ref.h"

namespace og::kernels::ref {

namespace {

constexpr int kQK = 32;

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// The element of largest magnitude, sign kept (the first one on ties).
float signed_absmax(const float* x, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

// 4-bit nibbles: q[32] (0..15) into qs[16], and back.
void pack_nibbles(const int* q, uint8_t* qs) {
  for (int i = 0; i < 16; ++i) qs[i] = static_cast<uint8_t>(q[i] | (q[i + 16] << 4));
}
void unpack_nibbles(const uint8_t* qs, int* q) {
  for (int i = 0; i < 16; ++i) {
    q[i] = qs[i] & 0x0F;
    q[i + 16] = qs[i] >> 4;
  }
}

// Symmetric quantization with levels -half..half-1 (Q4_0: half = 8, Q5_0: 16):
// the largest-magnitude element maps to -half exactly.
float quant_sym(const float* x, int half, int* q) {
  float m = signed_absmax(x, kQK);
  // Quantize against the scale the decoder will see (stored as f16).
  float d = f16_to_f32(f32_to_f16(m / -static_cast<float>(half)));
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQK; ++i) {
    int v = static_cast<int>(round_half_away(x[i] * id)) + half;
    q[i] = std::clamp(v, 0, 2 * half - 1);
  }
  return d;
}

// Asymmetric quantization with levels 0..n_levels-1: x ≈ d·q + min.
void quant_asym(const float* x, int n_levels, int* q, float* d_out, float* m_out) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kQK; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  // The stored (f16) values are the ones the decoder sees: quantize against them.
  float d = f16_to_f32(f32_to_f16((hi - lo) / static_cast<float>(n_levels - 1)));
  float m = f16_to_f32(f32_to_f16(lo));
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQK; ++i) {
    int v = static_cast<int>(round_half_away((x[i] - m) * id));
    q[i] = std::clamp(v, 0, n_levels - 1);
  }
  *d_out = d;
  *m_out = m;
}

}  // namespace

void dequant_q4_0(const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  int q[kQK];
  for (int64_t k = 0; k < n / kQK; ++k, b += 18) {
    float d = load_f16(b);
    unpack_nibbles(b + 2, q);
    for (int i = 0; i < kQK; ++i) dst[k * kQK + i] = d * static_cast<float>(q[i] - 8);
  }
}

void quant_q4_0(const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  int q[kQK];
  for (int64_t k = 0; k < n / kQK; ++k, b += 18) {
    store_f16(b, quant_sym(src + k * kQK, 8, q));
    pack_nibbles(q, b + 2);
  }
}

void dequant_q4_1(const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  int q[kQK];
  for (int64_t k = 0; k < n / kQK; ++k, b += 20) {
    float d = load_f16(b), m = load_f16(b + 2);
    unpack_nibbles(b + 4, q);
    for (int i = 0; i < kQK; ++i) dst[k * kQK + i] = d * static_cast<float>(q[i]) + m;
  }
}

void quant_q4_1(const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  int q[kQK];
  for (int64_t k = 0; k < n / kQK; ++k, b += 20) {
    float d, m;
    quant_asym(src + k * kQK, 16, q, &d, &m);
    store_f16(b, d);
    store_f16(b + 2, m);
    pack_nibbles(q, b + 4);
  }
}

// Q5: low 4 bits as Q4 nibbles; bit 4 of element i is bit i of the u32 qh.
static void unpack_q5(const uint8_t* qh_p, const uint8_t* qs, int* q) {
  uint32_t qh = load_u32(qh_p);
  unpack_nibbles(qs, q);
  for (int i = 0; i < kQK; ++i) q[i] |= static_cast<int>((qh >> i) & 1u) << 4;
}
static void pack_q5(const int* q, uint8_t* qh_p, uint8_t* qs) {
  int lo[kQK];
  uint32_t qh = 0;
  for (int i = 0; i < kQK; ++i) {
    lo[i] = q[i] & 0x0F;
    qh |= static_cast<uint32_t>((q[i] >> 4) & 1) << i;
  }
  pack_nibbles(lo, qs);
  store_u32(qh_p, qh);
}

void dequant_q5_0(const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  int q[kQK];
  for (int64_t k = 0; k < n / kQK; ++k, b += 22) {
    float d = load_f16(b);
    unpack_q5(b + 2, b + 6, q);
    for (int i = 0; i < kQK; ++i) dst[k * kQK + i] = d * static_cast<float>(q[i] - 16);
  }
}

void quant_q5_0(const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  int q[kQK];
  for (int64_t k = 0; k < n / kQK; ++k, b += 22) {
    store_f16(b, quant_sym(src + k * kQK, 16, q));
    pack_q5(q, b + 2, b + 6);
  }
}

void dequant_q5_1(const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  int q[kQK];
  for (int64_t k = 0; k < n / kQK; ++k, b += 24) {
    float d = load_f16(b), m = load_f16(b + 2);
    unpack_q5(b + 4, b + 8, q);
    for (int i = 0; i < kQK; ++i) dst[k * kQK + i] = d * static_cast<float>(q[i]) + m;
  }
}

void quant_q5_1(const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  int q[kQK];
  for (int64_t k = 0; k < n / kQK; ++k, b += 24) {
    float d, m;
    quant_asym(src + k * kQK, 32, q, &d, &m);
    store_f16(b, d);
    store_f16(b + 2, m);
    pack_q5(q, b + 4, b + 8);
  }
}

void dequant_q8_0(const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t k = 0; k < n / kQK; ++k, b += 34) {
    float d = load_f16(b);
    const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
    for (int i = 0; i < kQK; ++i) dst[k * kQK + i] = d * static_cast<float>(qs[i]);
  }
}

// amax/127 with the f32 scale, rounding half away from zero (as ggml's
// activation quantizer); the scale is then stored as f16.
void quant_q8_0(const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  for (int64_t k = 0; k < n / kQK; ++k, b += 34) {
    const float* x = src + k * kQK;
    float amax = 0.0f;
    for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(b, d);
    int8_t* qs = reinterpret_cast<int8_t*>(b + 2);
    for (int i = 0; i < kQK; ++i) qs[i] = static_cast<int8_t>(std::clamp(round_half_away(x[i] * id), -127L, 127L));
  }
}

namespace {

// Byte offsets of block b of row j (0..7) of a group: plain Q8_0 / Q4_0 /
// IQ4_NL / MXFP4 (row stride rb, kBB bytes a block, a kHead-byte scale first)
// and their _R layouts (8·kBB bytes a block: the 8 scales, then the quants);
// the scale moves as one piece, the quants 4 bytes at a time.
template <int kBB, int kHead = 2>
struct Groups {
  static constexpr int kSteps = (kBB - kHead) / 4;
  static int64_t plain(int64_t rb, int j, int64_t b) { return j * rb + kBB * b; }
  static int64_t scale_r(int j, int64_t b) { return 8 * kBB * b + kHead * j; }
  static int64_t quants_r(int j, int s, int64_t b) { return 8 * kBB * b + 8 * kHead + 32 * s + 4 * j; }
};

template <bool kToR, int kBB, int kHead = 2>
void move_groups(uint8_t* data, int64_t n_rows, int64_t n_in) {
  using G = Groups<kBB, kHead>;
  const int64_t nb = n_in / kQK, rb = nb * kBB;
  std::vector<uint8_t> t(static_cast<size_t>(8 * rb));
  for (int64_t g = 0; g + 8 <= n_rows; g += 8) {
    uint8_t* grp = data + g * rb;
    std::memcpy(t.data(), grp, t.size());
    for (int64_t b = 0; b < nb; ++b)
      for (int j = 0; j < 8; ++j) {
        const int64_t p = G::plain(rb, j, b);
        if (kToR) {
          std::memcpy(grp + G::scale_r(j, b), t.data() + p, kHead);
          for (int s = 0; s < G::kSteps; ++s) std::memcpy(grp + G::quants_r(j, s, b), t.data() + p + kHead + 4 * s, 4);
        } else {
          std::memcpy(grp + p, t.data() + G::scale_r(j, b), kHead);
          for (int s = 0; s < G::kSteps; ++s) std::memcpy(grp + p + kHead + 4 * s, t.data() + G::quants_r(j, s, b), 4);
        }
      }
  }
}

template <int kBB, int kHead = 2>
void group_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst) {
  using G = Groups<kBB, kHead>;
  const int64_t nb = n_in / kQK, rb = nb * kBB;
  if (r >= n_rows / 8 * 8) {  // a tail row stays plain
    std::memcpy(dst, data + r * rb, static_cast<size_t>(rb));
    return;
  }
  const uint8_t* grp = data + r / 8 * 8 * rb;
  const int j = static_cast<int>(r % 8);
  for (int64_t b = 0; b < nb; ++b) {
    std::memcpy(dst + kBB * b, grp + G::scale_r(j, b), kHead);
    for (int s = 0; s < G::kSteps; ++s) std::memcpy(dst + kBB * b + kHead + 4 * s, grp + G::quants_r(j, s, b), 4);
  }
}

}  // namespace

void repack_q8_0_r(uint8_t* data, int64_t n_rows, int64_t n_in) { move_groups<true, 34>(data, n_rows, n_in); }
void unpack_q8_0_r(uint8_t* data, int64_t n_rows, int64_t n_in) { move_groups<false, 34>(data, n_rows, n_in); }
void q8_0_r_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst) {
  group_row<34>(data, n_rows, n_in, r, dst);
}
void repack_q4_0_r(uint8_t* data, int64_t n_rows, int64_t n_in) { move_groups<true, 18>(data, n_rows, n_in); }
void unpack_q4_0_r(uint8_t* data, int64_t n_rows, int64_t n_in) { move_groups<false, 18>(data, n_rows, n_in); }
void q4_0_r_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst) {
  group_row<18>(data, n_rows, n_in, r, dst);
}
void repack_mxfp4_r(uint8_t* data, int64_t n_rows, int64_t n_in) { move_groups<true, 17, 1>(data, n_rows, n_in); }
void unpack_mxfp4_r(uint8_t* data, int64_t n_rows, int64_t n_in) { move_groups<false, 17, 1>(data, n_rows, n_in); }
void mxfp4_r_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst) {
  group_row<17, 1>(data, n_rows, n_in, r, dst);
}

}  // namespace og::kernels::ref
