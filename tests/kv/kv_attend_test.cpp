// The fast attention kernels against the scalar ones, per storage dtype, over
// odd head dims (q8_0 padded blocks), GQA group sizes and span lengths.
#include <gtest/gtest.h>

#include <cmath>

#include "kv/kv_attend.h"
#include "kv/kv_common.h"
#include "kv_test_util.h"

namespace og {
namespace {

using kv::KvIsa;

TEST(KvAttend, FastKernelsMatchScalar) {
  if (!kv::kv_isa_available(KvIsa::kAvx512)) {
    std::printf("[ kv ] no AVX-512 here: only the scalar kernels exist, nothing to compare\n");
    EXPECT_EQ(kv::kv_isa(), KvIsa::kScalar);
    return;
  }
  std::mt19937 rng(11);
  const int dims[] = {1, 7, 16, 31, 32, 33, 64, 70, 128, 160, 256};
  const int groups[] = {1, 2, 3, 4, 5, 8, 9};
  int cases = 0;
  for (KvDType dt : {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0}) {
    const kv::AttendKernels& fast = kv::attend_kernels(dt, KvIsa::kAvx512);
    const kv::AttendKernels& slow = kv::attend_kernels(dt, KvIsa::kScalar);
    ASSERT_NE(&fast, &slow);
    for (int trial = 0; trial < 40; ++trial) {
      const int dk = dims[rng() % 11], dv = dims[rng() % 11], g = groups[rng() % 7];
      const int64_t n = 1 + rng() % 150;
      const int64_t rbk = kv::row_bytes(dt, dk), rbv = kv::row_bytes(dt, dv);
      std::vector<uint8_t> k(n * rbk), v(n * rbv);
      for (int64_t i = 0; i < n; ++i) {
        auto kr = kvtest::random_vec(rng, dk), vr = kvtest::random_vec(rng, dv);
        kv::encode_row(dt, kr.data(), dk, k.data() + i * rbk);
        kv::encode_row(dt, vr.data(), dv, v.data() + i * rbv);
      }
      auto q = kvtest::random_vec(rng, size_t(g) * dk);
      std::vector<float> s1(g * n), s2(g * n);
      fast.scores(q.data(), g, dk, k.data(), rbk, n, 0.7f, s1.data(), n);
      slow.scores(q.data(), g, dk, k.data(), rbk, n, 0.7f, s2.data(), n);
      for (size_t i = 0; i < s1.size(); ++i) ASSERT_NEAR(s1[i], s2[i], 1e-5f * (1 + std::fabs(s2[i]))) << dk;
      auto w = kvtest::random_vec(rng, g * n, 0.f, 1.f);
      std::vector<float> o1(g * dv, 0.5f), o2(g * dv, 0.5f);
      fast.accum(w.data(), n, g, v.data(), rbv, n, dv, o1.data());
      slow.accum(w.data(), n, g, v.data(), rbv, n, dv, o2.data());
      for (size_t i = 0; i < o1.size(); ++i) ASSERT_NEAR(o1[i], o2[i], 1e-5f * (1 + std::fabs(o2[i]))) << dv;
      auto x1 = kvtest::random_vec(rng, n, -30.f, 0.f), x2 = x1;
      float e1 = fast.exp_sum(x1.data(), n, 0.f), e2 = slow.exp_sum(x2.data(), n, 0.f);
      EXPECT_NEAR(e1, e2, 1e-5f * e2);
      for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(x1[i], x2[i], 2e-6f * x2[i] + 1e-30f);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 160);
}

}  // namespace
}  // namespace og
