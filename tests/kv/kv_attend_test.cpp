// Every instruction set's attention kernels against the scalar ones, per storage dtype, over
// odd head dims (q8_0 padded blocks), GQA group sizes and span lengths; the
// one-pass driver (online softmax over blocks, spans of any length, states
// split at any row and merged) against a plain softmax in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "kernels/kernel_table.h"
#include "kv/kv_attend.h"
#include "kv/kv_common.h"
#include "kv_test_util.h"

namespace og {
namespace {

using kernels::Isa;

// 40 random cases of one dtype: `fast` against the scalar kernels `slow`
// (scores, weighted V sums, exp, max) over odd head dims, group sizes and lengths.
int compare_with_scalar(const kv::AttendKernels& fast, const kv::AttendKernels& slow, KvDType dt, uint32_t seed) {
  std::mt19937 rng(seed);
  const int dims[] = {1, 7, 16, 31, 32, 33, 64, 70, 128, 160, 256};
  const int groups[] = {1, 2, 3, 4, 5, 8, 9};
  int cases = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int dk = dims[rng() % 11], dv = dims[rng() % 11], g = groups[rng() % 7];
    const int64_t n = 1 + rng() % 150;
    const int64_t rbk = kv::row_bytes(dt, dk), rbv = kv::row_bytes(dt, dv);
    // The same keys in rows and in blocks of kKeyBlock from a random lane;
    // the blocks' unwritten lanes hold all-ones bits (NaN in every dtype),
    // which must not reach a score.
    const int lane = int(rng() % kv::kKeyBlock);
    const int64_t n_blocks = (lane + n + kv::kKeyBlock - 1) / kv::kKeyBlock;
    std::vector<uint8_t> k(n * rbk), v(n * rbv), kb(size_t(n_blocks * kv::kKeyBlock * rbk), 0xff);
    for (int64_t i = 0; i < n; ++i) {
      auto kr = kvtest::random_vec(rng, dk), vr = kvtest::random_vec(rng, dv);
      kv::encode_row(dt, kr.data(), dk, k.data() + i * rbk);
      kv::encode_row(dt, vr.data(), dv, v.data() + i * rbv);
      if (kv::k_blocked(dt))
        kv::encode_key_lane(dt, kr.data(), dk, kb.data() + (lane + i) / kv::kKeyBlock * kv::kKeyBlock * rbk,
                            int((lane + i) % kv::kKeyBlock));
    }
    auto q = kvtest::random_vec(rng, size_t(g) * dk);
    std::vector<float> s1(g * n), s2(g * n);
    fast.scores(q.data(), g, dk, k.data(), rbk, n, 0.7f, s1.data(), n);
    slow.scores(q.data(), g, dk, k.data(), rbk, n, 0.7f, s2.data(), n);
    for (size_t i = 0; i < s1.size(); ++i) EXPECT_NEAR(s1[i], s2[i], 1e-5f * (1 + std::fabs(s2[i]))) << dk;
    EXPECT_EQ(fast.scores_blocked != nullptr, kv::k_blocked(dt));
    EXPECT_EQ(slow.scores_blocked != nullptr, kv::k_blocked(dt));
    if (kv::k_blocked(dt) && fast.scores_blocked && slow.scores_blocked) {
      std::vector<float> b1(g * n), b2(g * n);
      fast.scores_blocked(q.data(), g, dk, kb.data(), lane, n, 0.7f, b1.data(), n);
      slow.scores_blocked(q.data(), g, dk, kb.data(), lane, n, 0.7f, b2.data(), n);
      for (size_t i = 0; i < s1.size(); ++i) {
        EXPECT_NEAR(b1[i], s2[i], 1e-5f * (1 + std::fabs(s2[i]))) << "blocked, dk " << dk << " lane " << lane;
        EXPECT_NEAR(b2[i], s2[i], 1e-5f * (1 + std::fabs(s2[i]))) << "blocked scalar, dk " << dk << " lane " << lane;
      }
    }
    auto w = kvtest::random_vec(rng, g * n, 0.f, 1.f);
    std::vector<float> o1(g * dv, 0.5f), o2(g * dv, 0.5f);
    fast.accum(w.data(), n, g, v.data(), rbv, n, dv, o1.data());
    slow.accum(w.data(), n, g, v.data(), rbv, n, dv, o2.data());
    for (size_t i = 0; i < o1.size(); ++i) EXPECT_NEAR(o1[i], o2[i], 1e-5f * (1 + std::fabs(o2[i]))) << dv;
    auto x1 = kvtest::random_vec(rng, n, -30.f, 0.f), x2 = x1;
    float e1 = fast.exp_sum(x1.data(), n, 0.f), e2 = slow.exp_sum(x2.data(), n, 0.f);
    EXPECT_NEAR(e1, e2, 1e-5f * e2);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(x1[i], x2[i], 2e-6f * x2[i] + 1e-30f);
    // max: exact, so equal for every length (tails of 1-15 past the vector blocks included).
    for (int64_t len : {int64_t{1}, n / 2 + 1, n}) EXPECT_EQ(fast.max(s2.data(), len), slow.max(s2.data(), len)) << len;
    ++cases;
  }
  return cases;
}

// Every instruction set this CPU runs has attention kernels for every storage
// dtype (its own or the reference), and they agree with the scalar reference.
TEST(KvAttend, EveryIsaKernelsMatchScalar) {
  const kernels::KernelTable& ref = kernels::kernel_table(Isa::kScalar);
  const std::vector<Isa> isas = kernels::available_isas();
  int cases = 0, own = 0;
  for (Isa isa : isas) {
    const kernels::KernelTable& table = kernels::kernel_table(isa);
    bool differs = false;
    for (KvDType dt : {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0}) {
      const kv::AttendKernels& fast = kernels::attend_kernels_with(table, kv::storage_dtype(dt));
      ASSERT_TRUE(fast.scores && fast.accum && fast.exp_sum && fast.max) << kernels::isa_str(isa) << " " << kv_dtype_name(dt);
      const kv::AttendKernels& slow = kernels::attend_kernels_with(ref, kv::storage_dtype(dt));
      differs |= fast.scores != slow.scores || fast.scores_blocked != slow.scores_blocked ||
                 fast.accum != slow.accum || fast.exp_sum != slow.exp_sum || fast.max != slow.max;
      SCOPED_TRACE(::testing::Message() << kernels::isa_str(isa) << " " << kv_dtype_name(dt));
      cases += compare_with_scalar(fast, slow, dt, 11 + static_cast<uint32_t>(dt));
    }
    own += differs;
  }
  EXPECT_EQ(cases, 160 * int(isas.size()));
  std::printf("[ kv ] %zu instruction sets, %d with attention kernels of their own\n", isas.size(), own);
}

// The instruction set chosen for the process (OFFGRAPH_ISA, or set_active_isa)
// is the one attention over the cache runs with.
TEST(KvAttend, ActiveIsaReachesAttention) {
  const Isa saved = kernels::active_table().isa;
  for (Isa isa : kernels::available_isas()) {
    kernels::set_active_isa(isa);
    for (KvDType dt : {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0}) {
      const kv::AttendKernels& want = kernels::attend_kernels_with(kernels::kernel_table(isa), kv::storage_dtype(dt));
      const kv::AttendKernels& got = kv::attend_kernels(dt);
      EXPECT_EQ(got.scores, want.scores) << kernels::isa_str(isa) << " " << kv_dtype_name(dt);
      EXPECT_EQ(got.scores_blocked, want.scores_blocked) << kernels::isa_str(isa) << " " << kv_dtype_name(dt);
      EXPECT_EQ(got.accum, want.accum) << kernels::isa_str(isa) << " " << kv_dtype_name(dt);
    }
  }
  kernels::set_active_isa(saved);
  EXPECT_THROW(kernels::attend_kernels(DType::Q4_K), Error);
}

// softmax(scale q kᵀ) v in double over the decoded rows: the plain twin of attend().
std::vector<double> naive_attend(KvDType dt, const std::vector<float>& q, int g, int dk, int dv,
                                 const std::vector<uint8_t>& k, const std::vector<uint8_t>& v, int64_t n,
                                 float scale) {
  const int64_t rbk = kv::row_bytes(dt, dk), rbv = kv::row_bytes(dt, dv);
  std::vector<float> kr(dk), vr(dv);
  std::vector<double> out(size_t(g) * dv, 0.0);
  for (int j = 0; j < g; ++j) {
    std::vector<double> s(n);
    double mx = -1e300, sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      kv::decode_row(dt, k.data() + i * rbk, dk, kr.data());
      double d = 0;
      for (int e = 0; e < dk; ++e) d += double(q[size_t(j) * dk + e]) * kr[e];
      s[i] = d * scale;
      mx = std::max(mx, s[i]);
    }
    for (int64_t i = 0; i < n; ++i) sum += (s[i] = std::exp(s[i] - mx));
    for (int64_t i = 0; i < n; ++i) {
      kv::decode_row(dt, v.data() + i * rbv, dv, vr.data());
      for (int e = 0; e < dv; ++e) out[size_t(j) * dv + e] += s[i] / sum * vr[e];
    }
  }
  return out;
}

TEST(KvAttend, OnePassSplitAndMergedMatchesPlainSoftmax) {
  std::mt19937 rng(23);
  const int dims[] = {1, 7, 16, 33, 64, 70, 128, 256};
  const int groups[] = {1, 2, 3, 4, 5, 8, 9};
  const std::vector<Isa> isas = kernels::available_isas();
  int cases = 0;
  for (Isa isa : isas)
    for (KvDType dt : {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0}) {
      const kv::AttendKernels& kr = kernels::attend_kernels_with(kernels::kernel_table(isa), kv::storage_dtype(dt));
      for (int trial = 0; trial < 12; ++trial) {
        const int dk = dims[rng() % 8], dv = dims[rng() % 8], g = groups[rng() % 7];
        const int64_t n = 1 + rng() % 300;  // tails of blocks, several blocks
        const int64_t rbk = kv::row_bytes(dt, dk), rbv = kv::row_bytes(dt, dv);
        std::vector<uint8_t> k(n * rbk), v(n * rbv);
        for (int64_t i = 0; i < n; ++i) {
          // Scores spread over a wide range, so the running max moves and rescales.
          auto kr_ = kvtest::random_vec(rng, dk, -3.f, 3.f), vr = kvtest::random_vec(rng, dv);
          kv::encode_row(dt, kr_.data(), dk, k.data() + i * rbk);
          kv::encode_row(dt, vr.data(), dv, v.data() + i * rbv);
        }
        auto q = kvtest::random_vec(rng, size_t(g) * dk);
        const float scale = 0.9f;
        const std::vector<double> want = naive_attend(dt, q, g, dk, dv, k, v, n, scale);
        // Rows cut into spans at random points (as ring wraps and cell blocks do),
        // and the spans' rows cut again into 1-4 merged pieces.
        std::vector<int64_t> cuts{0, n};
        for (int c = int(rng() % 6); c > 0; --c) cuts.push_back(int64_t(rng() % (n + 1)));
        std::sort(cuts.begin(), cuts.end());
        std::vector<int64_t> pieces{0, n};
        for (int c = int(rng() % 4); c > 0; --c) pieces.push_back(int64_t(rng() % (n + 1)));
        std::sort(pieces.begin(), pieces.end());
        std::vector<float> merged(kv::attend_state_floats(g, dv)), part(merged.size()), scratch;
        kv::attend_state_reset(merged.data(), g, dv);
        for (size_t p = 0; p + 1 < pieces.size(); ++p) {
          std::vector<kv::KvSpan> spans;
          for (size_t c = 0; c + 1 < cuts.size(); ++c) {
            const int64_t a = std::max(cuts[c], pieces[p]), b = std::min(cuts[c + 1], pieces[p + 1]);
            if (a < b) spans.push_back({k.data() + a * rbk, v.data() + a * rbv, b - a});
          }
          kv::attend_state_reset(part.data(), g, dv);
          kv::attend_fold(kr, q.data(), g, dk, dv, spans, rbk, rbv, scale, scratch, part.data());
          kv::attend_state_merge(merged.data(), part.data(), g, dv);
        }
        std::vector<float> out(size_t(g) * dv);
        kv::attend_state_finish(merged.data(), g, dv, out.data());
        for (size_t i = 0; i < out.size(); ++i)
          ASSERT_NEAR(out[i], want[i], 2e-5 * (1 + std::fabs(want[i])))
              << kernels::isa_str(isa) << " " << kv_dtype_name(dt) << " dk " << dk << " dv " << dv << " g " << g
              << " n " << n << " at " << i;
        ++cases;
      }
    }
  EXPECT_EQ(cases, 48 * int(isas.size()));
}

TEST(KvAttend, EmptyStatesMergeAndFinishToZeros) {
  const int g = 3, dv = 5;
  std::vector<float> a(kv::attend_state_floats(g, dv)), b(a.size()), out(g * dv, 7.f);
  kv::attend_state_reset(a.data(), g, dv);
  kv::attend_state_reset(b.data(), g, dv);
  kv::attend_state_merge(a.data(), b.data(), g, dv);
  EXPECT_EQ(a[0], -std::numeric_limits<float>::infinity());
  kv::attend_state_finish(a.data(), g, dv, out.data());
  for (float x : out) EXPECT_EQ(x, 0.f);
}

TEST(KvAttend, SplitPlanCoversEveryRowOnce) {
  const kv::AttendSplit saved = kv::attend_split();
  kv::set_attend_split({100, 4});
  std::vector<int64_t> rows{1000, 5, 250, 99};
  std::vector<kv::AttendPart> parts;
  const int64_t slots = kv::plan_attend_parts(rows, 2, &parts);  // 4 tasks < 8: split up to 2 pieces each
  kv::set_attend_split(saved);
  std::vector<int64_t> covered(rows.size(), 0);
  int64_t next_slot = 0;
  for (const kv::AttendPart& p : parts) {
    EXPECT_EQ(p.begin, covered[p.task]);  // pieces in row order, no gap, no overlap
    EXPECT_GE(p.n, 1);
    covered[p.task] += p.n;
    if (p.slot >= 0) {
      EXPECT_EQ(p.slot, next_slot++);
    }
  }
  EXPECT_EQ(covered, rows);
  EXPECT_EQ(slots, next_slot);
  EXPECT_EQ(slots, 4);  // 1000 and 250 rows split in 2; 5 and 99 (< 2 x 100) whole
  EXPECT_THROW(kv::set_attend_split({0, 4}), Error);
}

}  // namespace
}  // namespace og
