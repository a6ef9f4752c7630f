// Q6_K_R16 (ref.h): Q6_K rows interleaved in groups of 16 so that one 32-bit
// lane of a 512-bit register holds one weight row. Repacking both ways and
// gathering one row back as plain Q6_K.
#include <cstring>

#include "kernels/ref/r16_groups.h"
#include "kernels/ref/ref.h"

namespace og::kernels::ref {

namespace {

constexpr int64_t kBB = 210;  // a plain block

// Where the levels (0..63) of elements 4w..4w+3 (w = 0..63) of plain Q6_K
// live: low four bits in nibbles of four consecutive bytes (ql, bytes
// 0..127), top two bits in bit pairs of four consecutive bytes (qh, 128..191).
struct Place {
  int lo_byte, lo_shift, hi_byte, hi_shift;
};
Place plain_place(int w) {
  const int e = 4 * w, h = e / 128, c = (e % 128) / 32, j = e % 32;
  return {64 * h + 32 * (c & 1) + j, 4 * (c >> 1), 128 + 32 * h + j, 2 * c};
}

uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void or32(uint8_t* p, uint32_t v) {
  const uint32_t o = load32(p) | v;
  std::memcpy(p, &o, 4);
}
// Four levels, one per byte.
uint32_t get_levels(const uint8_t* b, Place p) {
  return ((load32(b + p.lo_byte) >> p.lo_shift) & 0x0F0F0F0Fu) | ((load32(b + p.hi_byte) >> p.hi_shift) & 0x03030303u) << 4;
}
// ORs four levels into their places (which the caller has zeroed).
void put_levels(uint8_t* b, Place p, uint32_t v) {
  or32(b + p.lo_byte, (v & 0x0F0F0F0Fu) << p.lo_shift);
  or32(b + p.hi_byte, ((v >> 4) & 0x03030303u) << p.hi_shift);
}

// In a group block, step s = 4u + i (u = 0, 1; i = 0..3) of chunk c holds
// elements 32c + 4s..+3 of row j in the four bytes at 4j of 64-byte rows
// x_0, x_1, x_2 = 384c + 192u + 64·{0, 1, 2} (ref.h): levels of steps
// 4u..4u+2 in bits 0..5 of x_i, step 4u + 3's level split over their bits 6-7.
const uint8_t* r16_x(const uint8_t* g, int c, int u, int i, int j) { return g + 384 * c + 192 * u + 64 * i + 4 * j; }
uint8_t* r16_x(uint8_t* g, int c, int u, int i, int j) { return g + 384 * c + 192 * u + 64 * i + 4 * j; }

uint32_t get_r16(const uint8_t* g, int w, int j) {
  const int c = w / 8, u = (w % 8) / 4, i = w % 4;
  if (i < 3) return load32(r16_x(g, c, u, i, j)) & 0x3F3F3F3Fu;
  uint32_t v = 0;
  for (int k = 0; k < 3; ++k) v |= ((load32(r16_x(g, c, u, k, j)) >> 6) & 0x03030303u) << (2 * k);
  return v;
}
void put_r16(uint8_t* g, int w, int j, uint32_t v) {
  const int c = w / 8, u = (w % 8) / 4, i = w % 4;
  if (i < 3) return or32(r16_x(g, c, u, i, j), v);
  for (int k = 0; k < 3; ++k) or32(r16_x(g, c, u, k, j), ((v >> (2 * k)) & 0x03030303u) << 6);
}

// Block b of row j (0..15) of a group: plain bytes p (210) -> group block g
// (3360, zeroed by the caller), and back.
void to_r16(const uint8_t* p, uint8_t* g, int j) {
  for (int w = 0; w < 64; ++w) put_r16(g, w, j, get_levels(p, plain_place(w)));
  std::memcpy(g + 3072 + 2 * j, p + 208, 2);                       // d
  for (int l = 0; l < 16; ++l) g[3104 + 16 * l + j] = p[192 + l];  // scales
}
void from_r16(const uint8_t* g, uint8_t* p, int j) {
  std::memset(p, 0, 192);
  for (int w = 0; w < 64; ++w) put_levels(p, plain_place(w), get_r16(g, w, j));
  for (int l = 0; l < 16; ++l) p[192 + l] = g[3104 + 16 * l + j];
  std::memcpy(p + 208, g + 3072 + 2 * j, 2);
}

constexpr R16Codec kCodec{kBB, to_r16, from_r16};

}  // namespace

void repack_q6_k_r16(uint8_t* data, int64_t n_rows, int64_t n_in) { r16_move_groups(kCodec, true, data, n_rows, n_in); }
void unpack_q6_k_r16(uint8_t* data, int64_t n_rows, int64_t n_in) { r16_move_groups(kCodec, false, data, n_rows, n_in); }
void q6_k_r16_row(const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst) {
  r16_row(kCodec, data, n_rows, n_in, r, dst);
}

}  // namespace og::kernels::ref
