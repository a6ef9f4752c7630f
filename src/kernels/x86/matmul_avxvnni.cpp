// AVX2 + AVX-VNNI matmul kernels: the AVX2 table's tiles with each u8×s8 dot
// as one VEX vpdpbusd (vpmaddubsw + vpmaddwd + add on AVX2) and the K-quant
// scale step as vpdpwssd. 16 ymm registers, as on AVX2. Only the int8
// matmuls differ from the AVX2 table (register_avxvnni below).
#define OG_X86_NS avxvnni
#define OG_X86_VNNI 1
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
#define OG_X86_K6RP 1  // prefill 1 x 8
#define OG_X86_K6XP 8  // (AVX2: 1 x 4)
#define OG_X86_Q8RG 1   // Q8_0_R: groups of 8 rows per tile
#define OG_X86_Q8RXT 8  // 1 x 8 (AVX2: 1 x 4)
#define OG_X86_Q8RD 2   // Q8_0_R decode: groups per tile
#include "kernels/x86/matmul_x86.inc"

namespace og::kernels {
namespace avxvnni {
void fill_probe(KernelTable& k);  // probe_avxvnni.cpp
}  // namespace avxvnni

// Over a table register_avx2 filled: the int8 matmuls and the int8 peak probe.
void register_avxvnni(KernelTable& k) {
  avxvnni::fill_matmul(k);
  avxvnni::fill_probe(k);
}
}  // namespace og::kernels
