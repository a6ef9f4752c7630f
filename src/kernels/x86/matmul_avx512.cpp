// AVX-512 (VL + VNNI) matmul kernels: vpdpbusd int8 dot products, 32 ymm
// registers so larger 4×4 tiles; Q4_K_R on zmm (matmul_k_zmm.inc).
// GCC 12's AVX-512 headers build some intrinsics from _mm512_undefined_*(),
// which -Wuninitialized reports at every use: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__  // clang has no such warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define OG_X86_NS avx512
#define OG_X86_VNNI 1
#define OG_X86_FRT 4
#define OG_X86_FXT 4
#define OG_X86_QRT 4
#define OG_X86_QRD 2
#define OG_X86_QXT 4
#define OG_X86_KRT 2
#define OG_X86_KXT 6
#define OG_X86_KXT6 8
#define OG_X86_KRD 4
#define OG_X86_KRD6 2  // Q6_K decode: 2-row tiles stream DRAM faster
#define OG_X86_ZMM 1   // Q4_K_R on zmm (matmul_k_zmm.inc)
#define OG_X86_ZRT 2
#define OG_X86_ZXT 8
#define OG_X86_ZRD 2
#define OG_X86_Z16XT 8  // Q4_K_R16, Q6_K_R16 (matmul_k16_zmm.inc): activation rows per tile
#define OG_X86_K6RD 2  // Q6_K_R tiles, weight rows x activation rows: decode 2 x 1,
#define OG_X86_K6RS 1  // small batches 1 x n_x (n_x <= 8),
#define OG_X86_K6XS 8
#define OG_X86_K6RP 4  // prefill 4 x 4
#define OG_X86_K6XP 4
#define OG_X86_K6ZP 2  // prefill on zmm: RP x 2·K6ZP tiles (KQ6RP)
#define OG_X86_Q8RG 4   // Q8_0_R: groups of 8 rows per tile
#define OG_X86_Q8RXT 3
#define OG_X86_Q8RD 4   // Q8_0_R decode: groups per tile
#define OG_X86_MXRD 1   // MXFP4_R decode: one group per tile (one weight stream; 4 and 2 were slower)
#include "kernels/x86/matmul_x86.inc"

namespace og::kernels {
namespace avx512 {
void fill_elementwise(KernelTable& k);  // elementwise_avx512.cpp
void fill_matmul_bf16(KernelTable& k);   // matmul_bf16_avx512.cpp
void fill_matmul_float(KernelTable& k);  // matmul_float_avx512.cpp
void fill_attend(KernelTable& k, const X86Tuning& tuning);  // attend_avx512.cpp
void fill_probe(KernelTable& k);        // probe_avx512.cpp
}  // namespace avx512

void register_avx512(KernelTable& k, const X86Tuning& tuning) {
  avx512::fill_matmul(k, tuning);
  avx512::fill_matmul_bf16(k);  // replaces the f32-FMA BF16 kernel with vdpbf16ps
  avx512::fill_matmul_float(k);  // F32, F16: zmm tiles in place of the shared ymm ones
  avx512::fill_elementwise(k);
  avx512::fill_attend(k, tuning);
  avx512::fill_probe(k);
}
}  // namespace og::kernels
