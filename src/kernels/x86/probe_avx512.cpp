// AVX-512 VNNI peak multiply-add probe (probe_x86.inc).
#define OG_X86_NS avx512
#define OG_X86_VNNI 1
#define OG_X86_ZMM 1
#include "kernels/x86/probe_x86.inc"
