// Reference codecs of the K-quant super-block formats Q4_K, Q5_K and Q6_K
// (256 elements; layouts and element mappings in MODEL-FORMATS.md §2.3). The
// decoders follow the spec's per-element formulas literally.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ref/ref.h"

namespace og::kernels::ref {

namespace {

constexpr int kQK = 256;

float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

// Σ (x - (scale·q - min))² of one sub-block for quantized levels 0..nmax.
float quantize_affine(const float* x, int n, int nmax, float scale, float min, int* q) {
  float err = 0.0f;
  float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < n; ++i) {
    int v = std::clamp(static_cast<int>(round_half_away((x[i] + min) * inv)), 0, nmax);
    q[i] = v;
    float e = x[i] - (scale * static_cast<float>(v) - min);
    err += e * e;
  }
  return err;
}

// Picks scale ≥ 0 and min ≥ 0 for x ≈ scale·q − min (q in 0..nmax): the
// min/max range first, then a few least-squares refits of (scale, min) to
// the chosen levels, keeping whichever has the lowest squared error.
void fit_scale_min(const float* x, int n, int nmax, float* scale_out, float* min_out) {
  float lo = 0.0f, hi = 0.0f;  // lo ≤ 0 so that min ≥ 0
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  float scale = (hi - lo) / static_cast<float>(nmax), min = -lo;
  int q[kQK];
  float best = quantize_affine(x, n, nmax, scale, min, q);
  float best_scale = scale, best_min = min;
  for (int it = 0; it < 4 && scale > 0.0f; ++it) {
    // Least squares of x ≈ a·q + b over the current levels; min = −b.
    double sq = 0, sqq = 0, sx = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      sq += q[i];
      sqq += static_cast<double>(q[i]) * q[i];
      sx += x[i];
      sqx += static_cast<double>(q[i]) * x[i];
    }
    double det = n * sqq - sq * sq;
    if (det <= 0) break;
    double a = (n * sqx - sq * sx) / det, b = (sx - a * sq) / n;
    if (b > 0) {  // min must stay ≥ 0: refit the scale alone with b = 0
      b = 0;
      a = sqq > 0 ? sqx / sqq : 0;
    }
    if (a <= 0) break;
    scale = static_cast<float>(a);
    min = static_cast<float>(-b);
    float err = quantize_affine(x, n, nmax, scale, min, q);
    if (err < best) {
      best = err;
      best_scale = scale;
      best_min = min;
    }
  }
  *scale_out = best_scale;
  *min_out = best_min;
}

// Q4_K / Q5_K: per-sub-block levels q[256] (0..nmax) with d, dmin and the
// 6-bit sc/m, chosen from the per-sub-block fits.
void quant_k_affine(const float* x, int nmax, float* d_out, float* dmin_out, uint8_t* sc, uint8_t* m,
                    int* q) {
  float scales[8], mins[8], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    fit_scale_min(x + 32 * j, 32, nmax, &scales[j], &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  float d = round_f16(max_scale / 63.0f), dmin = round_f16(max_min / 63.0f);
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(d > 0 ? std::clamp(round_half_away(scales[j] / d), 0L, 63L) : 0);
    m[j] = static_cast<uint8_t>(dmin > 0 ? std::clamp(round_half_away(mins[j] / dmin), 0L, 63L) : 0);
    // Levels against the scale and min the decoder will actually use.
    quantize_affine(x + 32 * j, 32, nmax, d * sc[j], dmin * m[j], q + 32 * j);
  }
  *d_out = d;
  *dmin_out = dmin;
}

}  // namespace

void get_scale_min_k4(const uint8_t* s, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

void pack_scale_min_k4(const uint8_t* sc, const uint8_t* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// ---- Q4_K: d · dmin · scales[12] · qs[128] (144 bytes) ----
void dequant_q4_k(const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t k = 0; k < n / kQK; ++k, b += 144) {
    float d = load_f16(b), dmin = load_f16(b + 2);
    const uint8_t* qs = b + 16;
    for (int e = 0; e < kQK; ++e) {
      int c = e / 64, r = e % 64, j = e / 32;
      uint8_t byte = qs[32 * c + r % 32];
      int q = r < 32 ? (byte & 0xF) : (byte >> 4);
      uint8_t sc, m;
      get_scale_min_k4(b + 4, j, &sc, &m);
      dst[k * kQK + e] = d * sc * static_cast<float>(q) - dmin * m;
    }
  }
}

void quant_q4_k(const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  for (int64_t k = 0; k < n / kQK; ++k, b += 144) {
    float d, dmin;
    uint8_t sc[8], m[8];
    int q[kQK];
    quant_k_affine(src + k * kQK, 15, &d, &dmin, sc, m, q);
    store_f16(b, d);
    store_f16(b + 2, dmin);
    pack_scale_min_k4(sc, m, b + 4);
    uint8_t* qs = b + 16;
    std::memset(qs, 0, 128);
    for (int e = 0; e < kQK; ++e) {
      int c = e / 64, r = e % 64;
      qs[32 * c + r % 32] |= static_cast<uint8_t>(r < 32 ? q[e] : q[e] << 4);
    }
  }
}

// ---- Q5_K: d · dmin · scales[12] · qh[32] · qs[128] (176 bytes) ----
void dequant_q5_k(const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t k = 0; k < n / kQK; ++k, b += 176) {
    float d = load_f16(b), dmin = load_f16(b + 2);
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + 48;
    for (int e = 0; e < kQK; ++e) {
      int c = e / 64, r = e % 64, j = e / 32;
      uint8_t byte = qs[32 * c + r % 32];
      int q = r < 32 ? (byte & 0xF) : (byte >> 4);
      q += 16 * ((qh[r % 32] >> j) & 1);
      uint8_t sc, m;
      get_scale_min_k4(b + 4, j, &sc, &m);
      dst[k * kQK + e] = d * sc * static_cast<float>(q) - dmin * m;
    }
  }
}

void quant_q5_k(const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  for (int64_t k = 0; k < n / kQK; ++k, b += 176) {
    float d, dmin;
    uint8_t sc[8], m[8];
    int q[kQK];
    quant_k_affine(src + k * kQK, 31, &d, &dmin, sc, m, q);
    store_f16(b, d);
    store_f16(b + 2, dmin);
    pack_scale_min_k4(sc, m, b + 4);
    uint8_t* qh = b + 16;
    uint8_t* qs = b + 48;
    std::memset(qh, 0, 32 + 128);
    for (int e = 0; e < kQK; ++e) {
      int c = e / 64, r = e % 64, j = e / 32, lo = q[e] & 0xF;
      qs[32 * c + r % 32] |= static_cast<uint8_t>(r < 32 ? lo : lo << 4);
      qh[r % 32] |= static_cast<uint8_t>(((q[e] >> 4) & 1) << j);
    }
  }
}

// ---- Q6_K: ql[128] · qh[64] · scales int8[16] · d (210 bytes, d last) ----
void dequant_q6_k(const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t k = 0; k < n / kQK; ++k, b += 210) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
    float d = load_f16(b + 208);
    for (int e = 0; e < kQK; ++e) {
      int h = e / 128, g = (e % 128) / 32, l = e % 32;
      uint8_t byte = ql[64 * h + l + 32 * (g & 1)];
      int low = g < 2 ? (byte & 0xF) : (byte >> 4);
      int high = (qh[32 * h + l] >> (2 * g)) & 3;
      int q = low | (high << 4);
      dst[k * kQK + e] = d * scales[e / 16] * static_cast<float>(q - 32);
    }
  }
}

void quant_q6_k(const float* src, void* dst, int64_t n) {
  uint8_t* b = static_cast<uint8_t*>(dst);
  for (int64_t k = 0; k < n / kQK; ++k, b += 210) {
    const float* x = src + k * kQK;
    // Per 16-element sub-block: the largest-magnitude element maps to q−32 = −32.
    float sub[16], max_abs = 0.0f;
    for (int s = 0; s < 16; ++s) {
      float m = 0.0f;
      for (int i = 0; i < 16; ++i)
        if (std::fabs(x[16 * s + i]) > std::fabs(m)) m = x[16 * s + i];
      sub[s] = m / -32.0f;
      max_abs = std::max(max_abs, std::fabs(sub[s]));
    }
    float d = round_f16(max_abs / 127.0f);
    int8_t* scales = reinterpret_cast<int8_t*>(b + 192);
    int q[kQK];
    for (int s = 0; s < 16; ++s) {
      long sc = d > 0 ? std::clamp(round_half_away(sub[s] / d), -128L, 127L) : 0;
      scales[s] = static_cast<int8_t>(sc);
      float eff = d * static_cast<float>(sc);
      float inv = eff != 0.0f ? 1.0f / eff : 0.0f;
      for (int i = 0; i < 16; ++i)
        q[16 * s + i] = std::clamp(static_cast<int>(round_half_away(x[16 * s + i] * inv)) + 32, 0, 63);
    }
    store_f16(b + 208, d);
    uint8_t* ql = b;
    uint8_t* qh = b + 128;
    std::memset(b, 0, 192);
    for (int e = 0; e < kQK; ++e) {
      int h = e / 128, g = (e % 128) / 32, l = e % 32;
      int low = q[e] & 0xF, high = q[e] >> 4;
      ql[64 * h + l + 32 * (g & 1)] |= static_cast<uint8_t>(g < 2 ? low : low << 4);
      qh[32 * h + l] |= static_cast<uint8_t>(high << (2 * g));
    }
  }
}

namespace {

inline uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void store32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Quants 4s..4s+3 of sub-block l (as 4 bytes of nibble values) are word s of
// the 32-byte row 32(l/2) in Q4_K, nibble l&1; in Q4_K_R word (s/2)·8 + l, nibble s&1.
// Q5_K's 128 quant bytes (kBytes 176, at kQs 48) move the same way; the kQs
// bytes before them are copied.
template <bool kToR, int kBytes = 144, int kQs = 16>
void move_q4_k_quants(const uint8_t* src, uint8_t* dst, int64_t n_blocks) {
  constexpr uint32_t kLow = 0x0F0F0F0Fu;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* in = src + kBytes * b + kQs;
    uint8_t out[128];
    for (int w = 0; w < 32; ++w) {  // output word w
      uint32_t lo, hi;
      if (kToR) {  // w = 8t + l: steps 2t (low) and 2t+1 (high) of sub-block l
        const int t = w / 8, l = w % 8, sh = 4 * (l & 1);
        lo = (load32(in + 32 * (l / 2) + 4 * (2 * t)) >> sh) & kLow;
        hi = (load32(in + 32 * (l / 2) + 4 * (2 * t + 1)) >> sh) & kLow;
      } else {  // w = 8p + s: step s of sub-blocks 2p (low) and 2p+1 (high)
        const int p = w / 8, s = w % 8, sh = 4 * (s & 1);
        lo = (load32(in + 4 * (8 * (s / 2) + 2 * p)) >> sh) & kLow;
        hi = (load32(in + 4 * (8 * (s / 2) + 2 * p + 1)) >> sh) & kLow;
      }
      store32(out + 4 * w, lo | (hi << 4));
    }
    if (dst != src) std::memcpy(dst + kBytes * b, src + kBytes * b, kQs);
    std::memcpy(dst + kBytes * b + kQs, out, 128);
  }
}

// Where the levels (0..63) of elements 4w..4w+3 (w = 0..63) of a Q6_K block
// (kR false) or a Q6_K_R block (kR true) live: reading them as one byte each,
// and ORing them into a zeroed 192-byte level area.
template <bool kR>
void q6_word_place(int w, int* lo_byte, int* lo_shift, int* hi_byte, int* hi_shift) {
  if (kR) {  // sub-block w/4 is lane l = (w/4)%8 of step s = 4·(w/32) + w%4
    const int s = 4 * (w / 32) + w % 4, l = (w / 4) % 8;
    if (s < 4) {  // the whole level in bits 0-5 of byte 32s + 4l
      *lo_byte = *hi_byte = 32 * s + 4 * l, *lo_shift = 0, *hi_shift = 4;
    } else {  // low nibble in the last 64 bytes, top bits in bits 6, 7 of step s - 4's byte
      *lo_byte = 128 + 32 * ((s - 4) / 2) + 4 * l, *lo_shift = 4 * (s % 2);
      *hi_byte = 32 * (s - 4) + 4 * l, *hi_shift = 6;
    }
  } else {  // element e = 4w: half e/128, quarter c = (e%128)/32, offset j = e%32
    const int e = 4 * w, h = e / 128, c = (e % 128) / 32, j = e % 32;
    *lo_byte = 64 * h + 32 * (c & 1) + j, *lo_shift = 4 * (c >> 1);
    *hi_byte = 128 + 32 * h + j, *hi_shift = 2 * c;
  }
}

template <bool kR>
uint32_t q6_levels(const uint8_t* b, int w) {
  int lb, ls, hb, hs;
  q6_word_place<kR>(w, &lb, &ls, &hb, &hs);
  return ((load32(b + lb) >> ls) & 0x0F0F0F0Fu) | (((load32(b + hb) >> hs) & 0x03030303u) << 4);
}

template <bool kR>
void q6_put_levels(uint8_t* b, int w, uint32_t v) {
  int lb, ls, hb, hs;
  q6_word_place<kR>(w, &lb, &ls, &hb, &hs);
  store32(b + lb, load32(b + lb) | (v & 0x0F0F0F0Fu) << ls);
  store32(b + hb, load32(b + hb) | ((v >> 4) & 0x03030303u) << hs);
}

}  // namespace

// The same placement as q6_word_place<true>, a word at a time with the places
// worked out (model loading repacks every Q6_K matrix through this): Q6_K_R's
// element (h, m, l, k) = 128h + 16l + 4m + k (step s = 4h + m, lane l) is
// quarter l/2 of half h at offset 16(l&1) + 4m + k in Q6_K.
void repack_q6_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* in = src + 210 * b;
    uint8_t out[192] = {};
    for (int m = 0; m < 4; ++m)
      for (int l = 0; l < 8; ++l) {
        const int j = 16 * (l & 1) + 4 * m;  // offset in the quarter
        const uint8_t* p = in + 32 * ((l >> 1) & 1) + j;
        const int sh = 4 * (l >> 2), hsh = 2 * (l >> 1);
        const uint32_t lo0 = (load32(p) >> sh) & 0x0F0F0F0Fu, lo1 = (load32(p + 64) >> sh) & 0x0F0F0F0Fu;
        const uint32_t hi0 = (load32(in + 128 + j) >> hsh) & 0x03030303u;
        const uint32_t hi1 = (load32(in + 160 + j) >> hsh) & 0x03030303u;
        store32(out + 32 * m + 4 * l, lo0 | hi0 << 4 | hi1 << 6);  // step m whole, step m + 4's top bits
        uint8_t* q = out + 128 + 32 * (m >> 1) + 4 * l;           // step m + 4's low nibble
        store32(q, load32(q) | lo1 << (4 * (m & 1)));
      }
    std::memcpy(dst + 210 * b, out, 192);
    if (dst != src) std::memcpy(dst + 210 * b + 192, src + 210 * b + 192, 18);
  }
}
// Every element word read through Q6_K_R's places and written through Q6_K's:
// the plain form of the placement, which the tests hold repack_q6_k_r's
// formulas to (unpack(repack) == bytes).
void unpack_q6_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t out[192] = {};
    for (int w = 0; w < 64; ++w) q6_put_levels<false>(out, w, q6_levels<true>(src + 210 * b, w));
    std::memcpy(dst + 210 * b, out, 192);
    if (dst != src) std::memcpy(dst + 210 * b + 192, src + 210 * b + 192, 18);
  }
}

namespace {
// Q5_K_R's fifth bits: element e = 32l + 8t + 4n + k (Q5_K: bit l of qh byte
// 8t + 4n + k) goes to bit 4(t/2) + 2n + t%2 of qh byte 4l + k; for each
// (bit i, sub-block l) the four bytes k = 0..3 move as one 32-bit word.
template <bool kToR>
void move_q5_k_high_bits(const uint8_t* src, uint8_t* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* in = src + 176 * b + 16;
    uint8_t out[32] = {};
    for (int i = 0; i < 8; ++i) {
      const int t = 2 * (i / 4) + i % 2, n = (i / 2) % 2, plain = 8 * t + 4 * n;
      for (int l = 0; l < 8; ++l) {
        if (kToR)
          store32(out + 4 * l, load32(out + 4 * l) | ((load32(in + plain) >> l) & 0x01010101u) << i);
        else
          store32(out + plain, load32(out + plain) | ((load32(in + 4 * l) >> i) & 0x01010101u) << l);
      }
    }
    std::memcpy(dst + 176 * b + 16, out, 32);
  }
}
}  // namespace

void repack_q5_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks) {
  move_q4_k_quants<true, 176, 48>(src, dst, n_blocks);  // copies the header and qh when dst != src
  move_q5_k_high_bits<true>(dst, dst, n_blocks);
}
void unpack_q5_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks) {
  move_q4_k_quants<false, 176, 48>(src, dst, n_blocks);
  move_q5_k_high_bits<false>(dst, dst, n_blocks);
}

void repack_q4_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks) { move_q4_k_quants<true>(src, dst, n_blocks); }
void unpack_q4_k_r(const uint8_t* src, uint8_t* dst, int64_t n_blocks) { move_q4_k_quants<false>(src, dst, n_blocks); }

}  // namespace og::kernels::ref
