// The mechanism shared by the layouts that interleave rows in groups of 16
// (Q4_K_R16, Q6_K_R16; ref.h): group block b holds block b of each of the 16
// rows, arranged by the dtype's codec; rows past the last whole group stay
// plain. Only the codec differs between the layouts.
#pragma once

#include <cstdint>

namespace og::kernels::ref {

struct R16Codec {
  int64_t block_bytes;  // one plain 256-element block
  // Plain block p of row j (0..15) into group block g (16 · block_bytes),
  // which the caller has zeroed; and back, writing every byte of p.
  void (*to_r16)(const uint8_t* p, uint8_t* g, int j);
  void (*from_r16)(const uint8_t* g, uint8_t* p, int j);
};

// Rewrites the whole groups of n_rows rows (n_in elements each) in place:
// plain -> interleaved (to_r16) or back.
void r16_move_groups(const R16Codec& c, bool to_r16, uint8_t* data, int64_t n_rows, int64_t n_in);
// Row r as plain bytes (dst: its row bytes), from a group or from the tail.
void r16_row(const R16Codec& c, const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst);

}  // namespace og::kernels::ref
