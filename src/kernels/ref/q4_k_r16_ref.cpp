// Q4_K_R16 (ref.h): Q4_K rows interleaved in groups of 16 so that one 32-bit
// lane of a 512-bit register holds one weight row. Repacking both ways and
// gathering one row back as plain Q4_K.
#include <cstring>

#include "kernels/ref/r16_groups.h"
#include "kernels/ref/ref.h"

namespace og::kernels::ref {

namespace {

constexpr int64_t kBB = 144;  // a plain block

// Quant byte of element pair (32l + 4s + k, 32l + 16 + 4s + k) of a plain
// Q4_K block: both elements sit in the same half of the same byte (a
// 64-element chunk c = l / 2 keeps sub-block 2c in the low nibbles and 2c + 1
// in the high ones), so the pair is one nibble of byte 32c + 4s + k and one of
// byte 32c + 16 + 4s + k.
struct Pair {
  int lo_byte, hi_byte, shift;
};
Pair pair_of(int l, int s, int k) {
  const int c = l / 2, i = 4 * s + k;
  return {16 + 32 * c + i, 16 + 32 * c + 16 + i, 4 * (l % 2)};
}

// Where scale byte i (0..11) of row j sits in a group block: the bytes i
// of one 32-bit lane per row, four 64-byte rows of lanes (ref.h).
int scale_byte(int i, int j) { return 64 + 64 * (i / 4) + 4 * j + i % 4; }

// Block b of row j (0..15) of a group: plain bytes p (144) <-> interleaved group block g (2304).
void to_r16(const uint8_t* p, uint8_t* g, int j) {
  std::memcpy(g + 2 * j, p, 2);           // d
  std::memcpy(g + 32 + 2 * j, p + 2, 2);  // dmin
  for (int i = 0; i < 12; ++i) g[scale_byte(i, j)] = p[4 + i];
  for (int l = 0; l < 8; ++l)
    for (int s = 0; s < 4; ++s)
      for (int k = 0; k < 4; ++k) {
        const Pair q = pair_of(l, s, k);
        const int lo = (p[q.lo_byte] >> q.shift) & 0xF, hi = (p[q.hi_byte] >> q.shift) & 0xF;
        g[256 + 256 * l + 64 * s + 4 * j + k] = static_cast<uint8_t>(lo | hi << 4);
      }
}

void from_r16(const uint8_t* g, uint8_t* p, int j) {
  std::memcpy(p, g + 2 * j, 2);
  std::memcpy(p + 2, g + 32 + 2 * j, 2);
  for (int i = 0; i < 12; ++i) p[4 + i] = g[scale_byte(i, j)];
  std::memset(p + 16, 0, 128);
  for (int l = 0; l < 8; ++l)
    for (int s = 0; s < 4; ++s)
      for (int k = 0; k < 4; ++k) {
        const Pair q = pair_of(l, s, k);
        const int v = g[256 + 256 * l + 64 * s + 4 * j + k];
        p[q.lo_byte] = static_cast<uint8_t>(p[q.lo_byte] | (v & 0xF) << q.shift);
        p[q.hi_byte] = static_cast<uint8_t>(p[q.hi_byte] | (v >> 4) << q.shift);
      }
}

constexpr R16Codec kCodec{kBB, to_r16, from_r16};

}  // namespace

void repack_q4_k_r16(uint8_t* data, int64_t n_rows, int64_t n_in) { r16_move_groups(kCodec, true, data, n_rows, n_in); }
void unpack_q4_k_r16(uint8_t* data, int64_t n_rows, int64_t n_in) { r16_move_groups(kCodec, false, data, n_rows, n_in); }
void q4_k_r16_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst) {
  r16_row(kCodec, data, n_rows, n_in, r, dst);
}

}  // namespace og::kernels::ref
