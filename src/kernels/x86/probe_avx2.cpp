// AVX2 peak multiply-add probe (probe_x86.inc).
#define OG_X86_NS avx2
#define OG_X86_VNNI 0
#define OG_X86_ZMM 0
#include "kernels/x86/probe_x86.inc"
