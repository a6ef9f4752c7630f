// AArch64's instruction sets (arch.h): the baseline Advanced SIMD table
// (ARMv8.0 NEON, which every AArch64 CPU a general-purpose OS runs on has),
// the dot-product table (sdot/udot, ARMv8.2 FEAT_DotProd) and the int8
// matrix table (smmla, FEAT_I8MM). Linux reports them in the HWCAP words of
// the auxiliary vector; macOS in sysctl hw.optional.arm.* (that branch is not
// compiled or run by this project's checks: docs/contributing.md).
//
// Each table starts from the one before it: neon is matmul_neon.cpp's and
// elementwise_neon.cpp's kernels, dotprod adds matmul_dotprod.cpp's sdot int8 matmuls, i8mm
// replaces those with matmul_i8mm.cpp's smmla ones (same types, same bits)
// and, when the CPU also has FEAT_BF16 (a separate HWCAP2 bit), BF16 weights
// with matmul_bf16.cpp's bfmmla; without it i8mm keeps the f32 BF16 kernel.
#include "kernels/arch.h"

#if defined(__linux__)
#include <sys/auxv.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace og::kernels {

namespace {

// The kernel ABI's bits (Linux arch/arm64/include/uapi/asm/hwcap.h), for C
// libraries whose headers predate them.
#if defined(__linux__)
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif
#endif

struct ArmFeatures {
  bool asimd = false, dotprod = false, i8mm = false, bf16 = false;
};

#if defined(__APPLE__)
bool sysctl_flag(const char* name) {
  int v = 0;
  size_t n = sizeof v;
  return sysctlbyname(name, &v, &n, nullptr, 0) == 0 && v != 0;
}
#endif

ArmFeatures read_features() {
  ArmFeatures f;
#if defined(__linux__)
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.asimd = (hw & HWCAP_ASIMD) != 0;
  f.dotprod = f.asimd && (hw & HWCAP_ASIMDDP) != 0;
  f.i8mm = f.dotprod && (hw2 & HWCAP2_I8MM) != 0;
  f.bf16 = f.asimd && (hw2 & HWCAP2_BF16) != 0;
#elif defined(__APPLE__)
  f.asimd = true;  // every Apple arm64 CPU
  f.dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
  f.i8mm = f.dotprod && sysctl_flag("hw.optional.arm.FEAT_I8MM");
  f.bf16 = sysctl_flag("hw.optional.arm.FEAT_BF16");
#elif defined(__ARM_NEON)
  f.asimd = true;  // an OS with no feature query: the baseline the compiler assumed
#endif
  return f;
}

const ArmFeatures& features() {
  static const ArmFeatures f = read_features();
  return f;
}

constexpr Isa kArmIsas[] = {Isa::kScalar, Isa::kNeon, Isa::kDotprod, Isa::kI8mm};

}  // namespace

void register_neon(KernelTable& k);     // matmul_neon.cpp
void register_neon_elementwise(KernelTable& k);  // elementwise_neon.cpp
void register_neon_attend(KernelTable& k);       // attend_neon.cpp
void register_dotprod(KernelTable& k);  // matmul_dotprod.cpp (armv8.2-a+dotprod)
void register_i8mm(KernelTable& k);     // matmul_i8mm.cpp (+i8mm)
void register_bf16(KernelTable& k);     // matmul_bf16.cpp (+bf16)

namespace arch {

std::span<const Isa> isas() { return kArmIsas; }

const char* isa_names() { return "scalar, neon, dotprod or i8mm"; }

std::string tuning_summary() { return ""; }  // no ARM table has variants to choose

bool available(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kNeon: return features().asimd;
    case Isa::kDotprod: return features().dotprod;
    case Isa::kI8mm: return features().i8mm;
    default: return false;  // another architecture's
  }
}

void register_kernels(Isa isa, KernelTable& k) { register_arm_kernels(isa, features().bf16, k); }

void register_arm_kernels(Isa isa, bool bf16, KernelTable& k) {
  if (isa == Isa::kNeon || isa == Isa::kDotprod || isa == Isa::kI8mm) {
    register_neon(k);
    register_neon_elementwise(k);
    register_neon_attend(k);
  }
  if (isa == Isa::kDotprod || isa == Isa::kI8mm) register_dotprod(k);
  if (isa == Isa::kI8mm) {
    register_i8mm(k);
    if (bf16) register_bf16(k);
  }
}

}  // namespace arch
}  // namespace og::kernels
