// AVX2 + FMA + F16C matmul kernels (16 ymm registers: 2×4 tiles).
#define OG_X86_NS avx2
#define OG_X86_VNNI 0
#define OG_X86_FRT 2
#define OG_X86_FXT 4
#define OG_X86_QRT 2
#define OG_X86_QRD 2
#define OG_X86_QXT 4
#define OG_X86_KRT 1
#define OG_X86_KXT 4
#define OG_X86_KR8RT 1  // Q4_K_R, Q5_K_R prefill tiles (KR8): 1 weight row x 6 activation rows
#define OG_X86_KR8XT 6
#define OG_X86_KXT6 4
#define OG_X86_KRD 2
#define OG_X86_KRD6 2
#define OG_X86_ZMM 0
#define OG_X86_K6RD 2  // Q6_K_R tiles, weight rows x activation rows: decode 2 x 1,
#define OG_X86_K6RS 1  // small batches 1 x n_x (n_x <= 4),
#define OG_X86_K6XS 4
#define OG_X86_K6RP 1  // prefill 1 x 4
#define OG_X86_K6XP 4
#define OG_X86_Q8RG 1   // Q8_0_R: groups of 8 rows per tile
#define OG_X86_Q8RXT 4
#define OG_X86_Q8RD 2   // Q8_0_R decode: groups per tile
#include "kernels/x86/matmul_x86.inc"

namespace og::kernels {
namespace avx2 {
void fill_elementwise(KernelTable& k);  // elementwise_avx2.cpp
void fill_probe(KernelTable& k);        // probe_avx2.cpp
void fill_attend(KernelTable& k);       // attend_avx2.cpp
}  // namespace avx2

void register_avx2(KernelTable& k) {
  avx2::fill_matmul(k);
  avx2::fill_elementwise(k);
  avx2::fill_probe(k);
  avx2::fill_attend(k);
}
}  // namespace og::kernels
