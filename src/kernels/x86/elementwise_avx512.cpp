// Elementwise kernels built for the AVX-512 table (body in elementwise_x86.inc).
#define OG_X86_NS avx512
#include "kernels/x86/elementwise_x86.inc"
