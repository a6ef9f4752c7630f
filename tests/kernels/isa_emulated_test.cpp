// On a CPU without AVX-512 and AVX-VNNI (an AVX2-only Intel desktop chip, a
// Zen 3) the tables it lacks must be reported as skipped, never as passed,
// and the run must say which tables it exercised (issue 45). This machine
// may have them all, so the test runs this same binary under QEMU's user-mode
// emulator as a Haswell (AVX2, FMA, F16C; no AVX-VNNI, no AVX-512) and reads
// what it printed. Without qemu-x86_64-static (Debian's qemu-user-static, which
// the AArch64 checks also use) it is skipped, saying so.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

// GCC names a sanitizer build by __SANITIZE_ADDRESS__; clang (the CI's ASan
// tree) only by __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OG_SANITIZER_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define OG_SANITIZER_BUILD 1
#endif
#endif

namespace {

[[maybe_unused]] std::string run_and_read(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  *status = pclose(p);
  return out;
}

[[maybe_unused]] bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(IsaEmulated, AnAvx2OnlyCpuSkipsTheTablesItLacksAndSaysWhichRan) {
#if defined(OG_SANITIZER_BUILD)
  GTEST_SKIP() << "a sanitizer build (its shadow memory and QEMU's user-mode emulation do not mix); the Release tree runs it";
#elif !defined(__x86_64__)
  GTEST_SKIP() << "not an x86-64 build";
#else
  const char* qemu = "/usr/bin/qemu-x86_64-static";
  if (access(qemu, X_OK) != 0) GTEST_SKIP() << "no " << qemu << " (Debian qemu-user-static) to emulate an AVX2-only CPU";
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(len, 0);
  self[len] = '\0';
  // The child must pick its table from the emulated CPU, not from this run's OFFGRAPH_ISA.
  const std::string cmd = std::string("env -u OFFGRAPH_ISA ") + qemu + " -cpu Haswell '" + self +
                          "' --gtest_filter='IsaTables.SayWhichRan:Compiled/EachTable.*' 2>&1";
  int status = -1;
  const std::string out = run_and_read(cmd, &status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_TRUE(contains(out, "tables exercised: scalar avx2; skipped (this CPU lacks them): avxvnni avx512")) << out;
  EXPECT_TRUE(contains(out, "[       OK ] Compiled/EachTable.MatmulAgreesWithReferenceAndBatchEqualsAlone/avx2")) << out;
  for (const char* isa : {"avxvnni", "avx512"}) {
    EXPECT_TRUE(contains(out, std::string("[  SKIPPED ] Compiled/EachTable.MatmulAgreesWithReferenceAndBatchEqualsAlone/") +
                                  isa))
        << isa << "\n" << out;
    EXPECT_TRUE(contains(out, std::string("table ") + isa + " not exercised: this CPU lacks it")) << isa << "\n" << out;
    EXPECT_FALSE(contains(out, std::string("[       OK ] Compiled/EachTable.MatmulAgreesWithReferenceAndBatchEqualsAlone/") +
                                   isa))
        << isa << "\n" << out;
  }
#endif
}

}  // namespace
