// The per-ISA table of kernel implementations (internal to kernels/ and its
// tests). dispatch.cpp fills one table per instruction set: the reference
// first, then each available x86 variant overrides the entries it speeds up.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"
#include "tensor/dtype.h"
#include "tensor/tensor_view.h"

namespace og::kernels {

// Every architecture's instruction sets (a build has tables for its own:
// kernels/arch.h); within one architecture a later one is preferred when the
// CPU has it. kAvxVnni is AVX2 with AVX-VNNI (VEX vpdpbusd on ymm: Intel
// Alder Lake and later client cores, Sapphire Rapids and later, Zen 5).
// kNeon is AArch64's baseline Advanced SIMD, kDotprod adds sdot/udot
// (ARMv8.2 FEAT_DotProd), kI8mm adds smmla (FEAT_I8MM).
enum class Isa { kScalar = 0, kAvx2 = 1, kAvxVnni = 2, kAvx512 = 3, kNeon = 4, kDotprod = 5, kI8mm = 6 };
constexpr int kNumIsas = 7;
constexpr int kNumDTypeIds = 50;  // dtype ids are < 50 (see tensor/dtype.h)

// One weight dtype's matmul y[n_x, n_out] = x[n_x, n_in] · W^T, in two steps:
// prepare() converts the activations once per matmul into act (act_bytes of
// scratch, 64-byte aligned; both may be null when the kernel reads x
// directly), then rows() computes output rows [r0, r1) from any thread. r0 is
// a multiple of row_tile. Every act layout is row by row: activation row i
// owns bytes [i·act_bytes(1), (i + 1)·act_bytes(1)) and prepare() of rows
// [i0, i1) writes those rows from x's rows alone, so large batches prepare
// their rows over the pool (dispatch.cpp). The layout is a function of
// prepare alone: impls with the same prepare and act_bytes read the same
// bytes, so matmul_group prepares them once.
struct MatmulImpl {
  int64_t (*act_bytes)(int64_t n_x, int64_t n_in) = nullptr;
  void (*prepare)(const float* x, int64_t n_x, int64_t n_in, void* act) = nullptr;
  void (*rows)(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
               const void* act, int64_t n_x, float* y, int64_t n_out) = nullptr;
  int64_t row_tile = 1;
};

using DotFn = float (*)(const void* w_row, const float* x, int64_t n);
using RowFn = void (*)(const void* src, float* dst, int64_t n);

struct KernelTable {
  Isa isa = Isa::kScalar;
  MatmulImpl matmul[kNumDTypeIds];
  // repack_to[t]: the dtype id of the layout this table's matmul prefers for
  // weights of dtype t (ops.h matmul_layout); 0 = t itself.
  int repack_to[kNumDTypeIds] = {};
  DotFn dot[kNumDTypeIds] = {};           // null: the reference
  RowFn dequantize[kNumDTypeIds] = {};    // null: the reference
  void (*rms_norm)(const float* x, const float* w, float eps, int64_t n, float* y) = nullptr;
  void (*softmax)(float* x, int64_t n) = nullptr;
  void (*silu_mul)(float* gate, const float* up, int64_t n) = nullptr;
  void (*gelu_tanh_mul)(float* gate, const float* up, int64_t n) = nullptr;
  void (*add)(float* y, const float* x, int64_t n) = nullptr;
  void (*scale)(float* y, float s, int64_t n) = nullptr;
  void (*f32_to_f16_row)(const float* x, void* dst, int64_t n) = nullptr;
  AttendKernels attend[kNumDTypeIds];  // K/V storage dtypes only (attend_dtype_supported)
  // The peak-rate probe: `iters` rounds of a register-only loop of the ISA's
  // int8 dot-product (int8) or f32 FMA instruction; returns the multiply-adds done.
  int64_t (*madd_loop)(bool int8, int64_t iters) = nullptr;
  // The read-bandwidth probe: the sum of the 64-bit words of [buf, buf +
  // bytes) (bytes a multiple of 8), read in order with the ISA's widest loads
  // into independent accumulators, no software prefetch: a plain stream.
  uint64_t (*read_sum)(const void* buf, int64_t bytes) = nullptr;
};

const char* isa_str(Isa isa);
// Whether this CPU can run `isa`'s kernels (false for another architecture's).
bool isa_available(Isa isa);
// The table of `isa` (must be available); the chosen one is active_table().
const KernelTable& kernel_table(Isa isa);
const KernelTable& active_table();
// The instruction sets this CPU can run, scalar first (tests loop over them).
std::vector<Isa> available_isas();
// The instruction sets this build has tables for, scalar first, whether or
// not this CPU can run them (tests say which they skipped).
std::vector<Isa> compiled_isas();
// Makes `isa` (must be available) the one every op in ops.h uses, attention
// included, as OFFGRAPH_ISA does at start-up; returns the previous one. For
// tests and benchmarks that compare ISAs end to end: call it while no op runs.
Isa set_active_isa(Isa isa);

// matmul, matmul_group / dot_row / dequantize_row through a given table (tests compare ISAs).
void matmul_with(const KernelTable& k, const TensorView& w, const float* x, int64_t n_x, float* y);
void matmul_group_with(const KernelTable& k, std::span<const MatmulTarget> targets, const float* x, int64_t n_x);
const AttendKernels& attend_kernels_with(const KernelTable& k, DType t);
float dot_row_with(const KernelTable& k, DType t, const void* w_row, const float* x, int64_t n);
void dequantize_row_with(const KernelTable& k, DType t, const void* src, float* dst, int64_t n);

// Fill in each instruction set's variants (x86/*_avx2.cpp, *_avxvnni.cpp,
// *_avx512.cpp); x86/cpu_x86.cpp calls them only when the CPU has that
// instruction set (x86 builds only). register_avxvnni overrides the int8 matmuls of a table
// that register_avx2 filled.
//
// Where two variants of a kernel compute the same values but stream the memory
// differently, and which streams faster depends on the CPU, X86Tuning says
// which the table takes: tuning facts of the running CPU (x86_tuning(), from
// CPUID), not features. Tests register each variant to check them all.
struct X86Tuning {
  // Q8_0_R's zmm decode, the AVX-512 attention kernels and the 256-bit tables'
  // Q6_K_R streaming tiles (decode, small batches) also prefetch far ahead into
  // L2 only (T1), on top of an L1 prefetch nearer (Q6_K_R: T1 3 KiB + T0 1 KiB
  // ahead, else T0 8 KiB). False on AMD family 26 (Zen 5), where the Q8_0_R
  // matvec streamed 3-5 %, attention over an f16 cache 5-10 % and the ymm
  // Q6_K_R decode 10-30 % faster without it; true elsewhere (the Intel Xeons
  // gained 5 %, 15-22 % and 18-45 %; other CPUs unmeasured). The R16 tiles keep
  // their T1 prefetch on every CPU.
  bool far_l2_prefetch = true;
  // The 256-bit tables' Q4_K_R / Q5_K_R 8-row decode tile reads rows of fewer
  // than 20 blocks a pair of rows at a time (all of rows 0, 1, then 2, 3, ...)
  // instead of the 8 rows side by side: true on Intel (a Sapphire Rapids-class
  // Xeon streamed 1.2-1.3x faster that way), false elsewhere (the AMD Zen 5
  // streamed 0.65-0.7x as fast; other CPUs unmeasured).
  bool decode_row_pairs = true;
};
X86Tuning x86_tuning();
void register_avx2(KernelTable& k, const X86Tuning& tuning);
void register_avxvnni(KernelTable& k, const X86Tuning& tuning);
void register_avx512(KernelTable& k, const X86Tuning& tuning);

}  // namespace og::kernels
