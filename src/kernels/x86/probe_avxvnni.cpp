// AVX-VNNI peak multiply-add probe (probe_x86.inc): ymm vpdpbusd.
#define OG_X86_NS avxvnni
#define OG_X86_VNNI 1
#define OG_X86_ZMM 0
#include "kernels/x86/probe_x86.inc"
