// AVX2 + FMA + F16C matmul kernels (16 ymm registers: 2×4 tiles).
#define OG_X86_NS avx2
#define OG_X86_VNNI 0
#include "kernels/x86/matmul_ymm_tiles.inc"
#include "kernels/x86/matmul_x86.inc"

namespace og::kernels {
namespace avx2 {
void fill_elementwise(KernelTable& k);  // elementwise_avx2.cpp
void fill_probe(KernelTable& k);        // probe_avx2.cpp
void fill_attend(KernelTable& k);       // attend_avx2.cpp
}  // namespace avx2

void register_avx2(KernelTable& k, const X86Tuning& tuning) {
  avx2::fill_matmul(k, tuning);
  avx2::fill_elementwise(k);
  avx2::fill_probe(k);
  avx2::fill_attend(k);
}
}  // namespace og::kernels
