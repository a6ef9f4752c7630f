// x86-64's instruction sets (arch.h): AVX2, AVX-VNNI and AVX-512 found with
// CPUID, and the tuning facts read from it.
#include <cpuid.h>

#include "kernels/arch.h"

namespace og::kernels {

namespace {

// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
// does not know "f16c", and the fuzz build compiles this file with clang.
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}

// AVX-VNNI from CPUID leaf 7 subleaf 1 (EAX bit 4): neither GCC 12's nor
// clang 14's __builtin_cpu_supports knows it.
bool cpu_has_avxvnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4)) != 0;
}

constexpr Isa kX86Isas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512};

}  // namespace

X86Tuning x86_tuning() {
  X86Tuning t;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return t;
  const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;    // "AuthenticAMD"
  const bool intel = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;  // "GenuineIntel"
  t.decode_row_pairs = intel;
  if (amd && __get_cpuid(1, &a, &b, &c, &d)) {
    const unsigned base = (a >> 8) & 0xf, family = base == 0xf ? base + ((a >> 20) & 0xff) : base;
    t.far_l2_prefetch = family != 26;
  }
  return t;
}

namespace arch {

std::span<const Isa> isas() { return kX86Isas; }

const char* isa_names() { return "scalar, avx2, avxvnni or avx512"; }

std::string tuning_summary() {
  const X86Tuning t = x86_tuning();
  return std::string("far L2 prefetch ") + (t.far_l2_prefetch ? "on" : "off") + ", decode row pairs " +
         (t.decode_row_pairs ? "on" : "off");
}

bool available(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case Isa::kAvxVnni:
      return available(Isa::kAvx2) && cpu_has_avxvnni();
    case Isa::kAvx512:
      return available(Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") &&
             __builtin_cpu_supports("avx512bf16");
    default: return false;  // another architecture's
  }
}

void register_kernels(Isa isa, KernelTable& k) { register_x86_kernels(isa, x86_tuning(), k); }

void register_x86_kernels(Isa isa, const X86Tuning& tuning, KernelTable& k) {
  if (isa == Isa::kAvx2 || isa == Isa::kAvxVnni) register_avx2(k, tuning);
  if (isa == Isa::kAvxVnni) register_avxvnni(k, tuning);
  if (isa == Isa::kAvx512) register_avx512(k, tuning);
}

}  // namespace arch
}  // namespace og::kernels
