// The target architecture's half of dispatch.cpp: which instruction sets
// this build has tables for, whether the running CPU has each, and what each
// table overrides of the reference. One implementation is compiled per
// architecture (src/kernels/x86/cpu_x86.cpp or src/kernels/arm/cpu_arm.cpp;
// src/kernels/arch.cmake picks the folder).
#pragma once

#include <span>
#include <string>

#include "kernels/kernel_table.h"

namespace og::kernels::arch {

// This architecture's instruction sets, scalar first, then in order of
// preference (the last one the CPU has is chosen).
std::span<const Isa> isas();
// Whether the running CPU can run isa's kernels (false for another
// architecture's instruction sets).
bool available(Isa isa);
// Overrides the reference entries of k with isa's kernels (isa available).
void register_kernels(Isa isa, KernelTable& k);
// The names OFFGRAPH_ISA accepts here, for its usage error: "scalar, avx2, avxvnni or avx512".
const char* isa_names();
// The tuning facts the tables were built with, for offgraph --version ("" where
// there are none): on x86 X86Tuning's, e.g. "far L2 prefetch off, decode row pairs off".
std::string tuning_summary();

#if defined(__x86_64__)
// register_kernels as a CPU with `tuning` (kernel_table.h X86Tuning) gets it:
// tests build every variant's table through this.
void register_x86_kernels(Isa isa, const X86Tuning& tuning, KernelTable& k);
#endif

#if defined(__aarch64__)
// register_kernels as a CPU whose FEAT_BF16 bit is `bf16` gets it (only the
// i8mm table depends on it: bfmmla for BF16 weights or the f32 kernel).
// qemu 7.2 has no CPU with I8MM and without BF16 (-cpu max has both and no
// property removes one), so tests build that table through this.
void register_arm_kernels(Isa isa, bool bf16, KernelTable& k);
#endif

}  // namespace og::kernels::arch
