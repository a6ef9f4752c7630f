// AVX2 + AVX-VNNI matmul kernels: the AVX2 table's tiles with each u8×s8 dot
// as one VEX vpdpbusd (vpmaddubsw + vpmaddwd + add on AVX2) and the K-quant
// scale step as vpdpwssd. 16 ymm registers, as on AVX2. Only the int8
// matmuls differ from the AVX2 table (register_avxvnni below).
#define OG_X86_NS avxvnni
#define OG_X86_VNNI 1
// Q8_0_R prefill: 1 x 8 tiles. Q6_K_R prefill: 1 x 4 (1 x 8 had measured
// faster before the prefill tiles went in weight-row blocks, ktiles_blocked;
// since, on the AMD Zen 5, 1 x 4 is 1.10-1.14x 1 x 8 at 2048x2048 and
// 2048x8192 with 512 rows, 1.07-1.10x with 7 and 37 rows: one thread,
// thread CPU time, alternately).
#define OG_X86_K6XP 4
#define OG_X86_Q8RXT 8
// Q4_K_R and Q5_K_R: the AVX2 table's KR8 tiles and their 1 x 8 default
// (matmul_q5r_x86.inc: vpdpbusd lane sums scaled by vpmulld).
#include "kernels/x86/matmul_ymm_tiles.inc"
#include "kernels/x86/matmul_x86.inc"

namespace og::kernels {
namespace avxvnni {
void fill_probe(KernelTable& k);  // probe_avxvnni.cpp
}  // namespace avxvnni

// Over a table register_avx2 filled: the int8 matmuls and the int8 peak probe.
void register_avxvnni(KernelTable& k, const X86Tuning& tuning) {
  avxvnni::fill_matmul(k, tuning);
  avxvnni::fill_probe(k);
}
}  // namespace og::kernels
