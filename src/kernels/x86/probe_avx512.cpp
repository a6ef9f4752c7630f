// AVX-512 VNNI peak multiply-add probe (probe_x86.inc).
// GCC 12's AVX-512 headers build some intrinsics from _mm512_undefined_*(),
// which -Wuninitialized reports at every use: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifndef __clang__  // clang has no such warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define OG_X86_NS avx512
#define OG_X86_VNNI 1
#define OG_X86_ZMM 1
#include "kernels/x86/probe_x86.inc"
