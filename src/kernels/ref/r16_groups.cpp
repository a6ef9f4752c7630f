// Groups of 16 interleaved rows (r16_groups.h): the moves and the row gather
// every such layout shares.
#include "kernels/ref/r16_groups.h"

#include <cstring>
#include <vector>

namespace og::kernels::ref {

namespace {
constexpr int64_t kG = 16;
}  // namespace

void r16_move_groups(const R16Codec& c, bool to_r16, uint8_t* data, int64_t n_rows, int64_t n_in) {
  const int64_t nb = n_in / 256, bb = c.block_bytes, rb = nb * bb, gb = kG * bb;
  std::vector<uint8_t> t(static_cast<size_t>(kG * rb));
  for (int64_t r = 0; r + kG <= n_rows; r += kG) {
    uint8_t* grp = data + r * rb;
    std::memcpy(t.data(), grp, t.size());
    if (to_r16) std::memset(grp, 0, t.size());
    for (int64_t b = 0; b < nb; ++b)
      for (int j = 0; j < kG; ++j) {
        if (to_r16)
          c.to_r16(t.data() + j * rb + bb * b, grp + gb * b, j);
        else
          c.from_r16(t.data() + gb * b, grp + j * rb + bb * b, j);
      }
  }
}

void r16_row(const R16Codec& c, const uint8_t* data, int64_t n_rows, int64_t n_in, int64_t r, uint8_t* dst) {
  const int64_t nb = n_in / 256, bb = c.block_bytes, rb = nb * bb;
  if (r >= n_rows / kG * kG) {  // a tail row stays plain
    std::memcpy(dst, data + r * rb, static_cast<size_t>(rb));
    return;
  }
  const uint8_t* grp = data + r / kG * kG * rb;
  for (int64_t b = 0; b < nb; ++b) c.from_r16(grp + kG * bb * b, dst + bb * b, static_cast<int>(r % kG));
}

}  // namespace og::kernels::ref
