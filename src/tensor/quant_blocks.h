// Block structs of the low-bit GGUF weight types Q2_K, Q3_K, IQ4_NL, IQ4_XS
// and MXFP4 (ggml type ids 10, 11, 20, 23, 39), laid out byte for byte as the
// GGUF format stores them (MODEL-FORMATS.md §2.5). Blocks are packed back to
// back with no padding, so a block may start at any address: the multi-byte
// fields are kept as byte arrays and read with memcpy (kernels/ref/ref.h).
#pragma once

#include <cstdint>

namespace og {

// Q2_K, 84 bytes per 256 elements. Element e: n = e/128, j = (e%128)/32,
// l = e%32; level q = (qs[32n + l] >> 2j) & 3 (0..3), sub-block k = e/16;
// x = d·(scales[k] & 15)·q − dmin·(scales[k] >> 4).
struct BlockQ2K {
  uint8_t scales[16];  // low nibble scale, high nibble min, per 16 elements
  uint8_t qs[64];      // 2-bit levels
  uint8_t d[2];        // f16 super-block scale of the scales
  uint8_t dmin[2];     // f16 super-block scale of the mins
};
static_assert(sizeof(BlockQ2K) == 84);

// Q3_K, 110 bytes per 256 elements. Element e: n = e/128, j = (e%128)/32,
// l = e%32; q = ((qs[32n + l] >> 2j) & 3) + 4·((hmask[l] >> (4n + j)) & 1) − 4
// (−4..3); x = d·(s_k − 32)·q for the 6-bit scale s_k of k = e/16, whose low
// 4 bits are scales[k] & 15 (k < 8) or scales[k − 8] >> 4 (k ≥ 8) and whose
// high 2 bits are (scales[8 + k%4] >> 2·(k/4)) & 3.
struct BlockQ3K {
  uint8_t hmask[32];   // the third bit of each level
  uint8_t qs[64];      // the low 2 bits
  uint8_t scales[12];  // 16 packed 6-bit scales
  uint8_t d[2];        // f16
};
static_assert(sizeof(BlockQ3K) == 110);

// IQ4_NL, 18 bytes per 32 elements: element i < 16 is the low nibble of
// qs[i], element i + 16 its high nibble; x = d·kIq4nlValues[nibble].
struct BlockIQ4NL {
  uint8_t d[2];  // f16
  uint8_t qs[16];
};
static_assert(sizeof(BlockIQ4NL) == 18);

// IQ4_XS, 136 bytes per 256 elements: 8 sub-blocks of 32, sub-block j with
// the 6-bit scale ls_j = ((scales_l[j/2] >> 4(j%2)) & 15) | ((scales_h >> 2j) & 3) << 4
// and its 16 bytes qs[16j..] as in IQ4_NL; x = d·(ls_j − 32)·kIq4nlValues[nibble].
struct BlockIQ4XS {
  uint8_t d[2];         // f16
  uint8_t scales_h[2];  // u16: the high 2 bits of the 8 scales
  uint8_t scales_l[4];  // the low 4 bits, two scales per byte
  uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4XS) == 136);

// MXFP4, 17 bytes per 32 elements: an E8M0 exponent e, then nibbles as in
// IQ4_NL holding FP4 E2M1 codes; x = 2^(e − 128)·kMxfp4Values[nibble] (the
// table holds twice the E2M1 values, hence 2^(e − 128) for the OCP 2^(e − 127)).
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[16];
};
static_assert(sizeof(BlockMXFP4) == 17);

// The 16 non-linear levels of IQ4_NL and IQ4_XS (ascending).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// Twice the FP4 E2M1 values of codes 0..15 (bit 3 is the sign).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace og
