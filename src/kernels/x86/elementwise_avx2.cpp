// AVX2 + FMA elementwise kernels (body in elementwise_x86.inc).
#define OG_X86_NS avx2
#include "kernels/x86/elementwise_x86.inc"
