// Queries attended together equal the same queries alone, bit for bit: the
// kernels' scores do not depend on how many queries or keys a call holds
// (every ISA, every storage dtype), attend_fold_rows equals attend_fold per
// row over its visible prefix, and a cache step that carries a prefill chunk
// (its rows attended as tiles) gives each row exactly what a step of that
// row alone gives — so prefill chunking and batching never change results.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/kernel_table.h"
#include "kv/kv_attend.h"
#include "kv/kv_cache.h"
#include "kv/kv_common.h"
#include "kv_test_util.h"

namespace og {
namespace {

using kernels::Isa;

const KvDType kDTypes[] = {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

struct Rows {
  std::vector<uint8_t> k, v;
  int64_t rbk, rbv;
};

Rows random_rows(std::mt19937& rng, KvDType dt, int64_t n, int dk, int dv) {
  Rows r{std::vector<uint8_t>(), std::vector<uint8_t>(), kv::row_bytes(dt, dk), kv::row_bytes(dt, dv)};
  r.k.resize(size_t(n * r.rbk));
  r.v.resize(size_t(n * r.rbv));
  for (int64_t i = 0; i < n; ++i) {
    auto kr = kvtest::random_vec(rng, size_t(dk), -3.f, 3.f), vr = kvtest::random_vec(rng, size_t(dv));
    kv::encode_row(dt, kr.data(), dk, r.k.data() + i * r.rbk);
    kv::encode_row(dt, vr.data(), dv, r.v.data() + i * r.rbv);
  }
  return r;
}

TEST(KvTile, ScoresDoNotDependOnHowManyQueriesOrKeys) {
  std::mt19937 rng(5);
  int checked = 0;
  for (Isa isa : kernels::available_isas())
    for (KvDType dt : kDTypes) {
      const kv::AttendKernels& kr = kernels::attend_kernels_with(kernels::kernel_table(isa), kv::storage_dtype(dt));
      for (int trial = 0; trial < 6; ++trial) {
        const int dk = std::vector<int>{7, 33, 64, 128}[size_t(trial % 4)];
        // The first four trials (one per dk) take shapes the paired-block tiles
        // see (AVX-512: two 16-key blocks at once for groups of up to 4 heads).
        const int g = trial < 4 ? 4 + 3 * (trial % 2) : 1 + int(rng() % 70);
        const int64_t n = trial < 4 ? 70 - trial : 1 + int64_t(rng() % 70);
        const Rows r = random_rows(rng, dt, n, dk, dk);
        auto q = kvtest::random_vec(rng, size_t(g) * dk);
        std::vector<float> all(size_t(g * n)), one(1);
        kr.scores(q.data(), g, dk, r.k.data(), r.rbk, n, 0.7f, all.data(), n);
        for (int j = 0; j < g; ++j)
          for (int64_t i = 0; i < n; ++i) {
            kr.scores(q.data() + int64_t{j} * dk, 1, dk, r.k.data() + i * r.rbk, r.rbk, 1, 0.7f, one.data(), 1);
            ASSERT_TRUE(same_bits(all[size_t(j * n + i)], one[0]))
                << kernels::isa_str(isa) << " " << kv_dtype_name(dt) << " g " << g << " n " << n << " q " << j
                << " k " << i;
            ++checked;
          }
        // Blocked K (kv_common.h k_blocked): the same keys from a random
        // first lane, scored in one call, equal each key alone at lane 0.
        if (kv::k_blocked(dt)) {
          const int lane = int(rng() % kv::kKeyBlock);
          const int64_t block = kv::kKeyBlock * r.rbk;
          std::vector<uint8_t> kb(size_t((lane + n + kv::kKeyBlock - 1) / kv::kKeyBlock * block), 0xff);
          std::vector<uint8_t> alone(size_t(block), 0xff);
          std::vector<float> x(static_cast<size_t>(dk));
          for (int64_t i = 0; i < n; ++i) {
            kv::decode_row(dt, r.k.data() + i * r.rbk, dk, x.data());
            kv::encode_key_lane(dt, x.data(), dk, kb.data() + (lane + i) / kv::kKeyBlock * block,
                                int((lane + i) % kv::kKeyBlock));
          }
          kr.scores_blocked(q.data(), g, dk, kb.data(), lane, n, 0.7f, all.data(), n);
          for (int j = 0; j < g; ++j)
            for (int64_t i = 0; i < n; ++i) {
              kv::decode_row(dt, r.k.data() + i * r.rbk, dk, x.data());
              kv::encode_key_lane(dt, x.data(), dk, alone.data(), 0);
              kr.scores_blocked(q.data() + int64_t{j} * dk, 1, dk, alone.data(), 0, 1, 0.7f, one.data(), 1);
              ASSERT_TRUE(same_bits(all[size_t(j * n + i)], one[0]))
                  << "blocked " << kernels::isa_str(isa) << " " << kv_dtype_name(dt) << " g " << g << " n " << n
                  << " lane " << lane << " q " << j << " k " << i;
              ++checked;
            }
        }
        // accum: g outputs together equal each alone.
        auto w = kvtest::random_vec(rng, size_t(g * n), 0.f, 1.f);
        std::vector<float> o_all(size_t(g) * dk, 0.25f), o_one(static_cast<size_t>(dk));
        kr.accum(w.data(), n, g, r.v.data(), r.rbv, n, dk, o_all.data());
        for (int j = 0; j < g; ++j) {
          std::fill(o_one.begin(), o_one.end(), 0.25f);
          kr.accum(w.data() + j * n, n, 1, r.v.data(), r.rbv, n, dk, o_one.data());
          for (int e = 0; e < dk; ++e) ASSERT_TRUE(same_bits(o_all[size_t(j * dk + e)], o_one[size_t(e)]));
        }
      }
    }
  EXPECT_GT(checked, 1000);
}

TEST(KvTile, FoldRowsEqualsEachRowAloneOverItsPrefix) {
  std::mt19937 rng(9);
  for (Isa isa : kernels::available_isas())
    for (KvDType dt : kDTypes) {
      const kv::AttendKernels& kr = kernels::attend_kernels_with(kernels::kernel_table(isa), kv::storage_dtype(dt));
      for (int trial = 0; trial < 8; ++trial) {
        const int dk = 1 + int(rng() % 80), dv = 1 + int(rng() % 80), g = 1 + int(rng() % 5);
        const int m = 1 + int(rng() % 20);
        const int64_t n = m + int64_t(rng() % 300);
        const Rows r = random_rows(rng, dt, n, dk, dv);
        // Spans cut at random points, as cell blocks and ring wraps cut them.
        std::vector<int64_t> cuts{0, n};
        for (int c = int(rng() % 6); c > 0; --c) cuts.push_back(int64_t(rng() % (n + 1)));
        std::sort(cuts.begin(), cuts.end());
        std::vector<kv::KvSpan> spans;
        for (size_t c = 0; c + 1 < cuts.size(); ++c)
          if (cuts[c] < cuts[c + 1])
            spans.push_back({r.k.data() + cuts[c] * r.rbk, r.v.data() + cuts[c] * r.rbv, cuts[c + 1] - cuts[c]});
        // Row i of m sees the first n - m + 1 + i keys (a causal prefill chunk).
        std::vector<int64_t> n_vis(static_cast<size_t>(m));
        for (int i = 0; i < m; ++i) n_vis[size_t(i)] = n - m + 1 + i;
        auto q = kvtest::random_vec(rng, size_t(m * g * dk));
        const int64_t sn = kv::attend_state_floats(g, dv);
        std::vector<float> states(size_t(m * sn)), scratch;
        for (int i = 0; i < m; ++i) kv::attend_state_reset(states.data() + i * sn, g, dv);
        kv::attend_fold_rows(kr, q.data(), m, g, dk, dv, spans, n_vis.data(), r.rbk, r.rbv, 0.8f, scratch,
                             states.data());
        for (int i = 0; i < m; ++i) {
          std::vector<kv::KvSpan> prefix;
          int64_t left = n_vis[size_t(i)];
          for (kv::KvSpan sp : spans) {
            if (left == 0) break;
            sp.n = std::min(sp.n, left);
            left -= sp.n;
            prefix.push_back(sp);
          }
          std::vector<float> alone(static_cast<size_t>(sn));
          kv::attend_state_reset(alone.data(), g, dv);
          kv::attend_fold(kr, q.data() + int64_t{i} * g * dk, g, dk, dv, prefix, r.rbk, r.rbv, 0.8f, scratch,
                          alone.data());
          for (int64_t e = 0; e < sn; ++e)
            ASSERT_TRUE(same_bits(states[size_t(i * sn + e)], alone[size_t(e)]))
                << kernels::isa_str(isa) << " " << kv_dtype_name(dt) << " m " << m << " g " << g << " row " << i
                << " at " << e;
        }
      }
    }
}

// One step of `rows` over every layer with `group` query heads per KV head;
// returns out[row] = that row's outputs over all layers.
std::vector<std::vector<float>> step(KvCache& cache, const std::vector<KvRow>& rows, int group) {
  const KvGeometry& g = cache.geometry();
  EXPECT_TRUE(cache.begin_step(rows).ok());
  std::vector<std::vector<float>> per_row(rows.size());
  for (size_t l = 0; l < g.layer_cache.size(); ++l) {
    const int c = g.layer_cache[l];
    const KvCacheSpec& s = g.caches[size_t(c)];
    const int nh = group * s.n_kv_heads;
    std::vector<float> q, k, v, out(rows.size() * size_t(nh * s.head_dim_v));
    kvtest::fill_qkv(rows, int(l), c, s, nh, &q, &k, &v);
    cache.update_and_attend(c, rows, q.data(), nh, k.data(), v.data(), 0.3f, out.data());
    const size_t per = size_t(nh * s.head_dim_v);
    for (size_t i = 0; i < rows.size(); ++i)
      per_row[i].insert(per_row[i].end(), out.begin() + i * per, out.begin() + (i + 1) * per);
  }
  cache.end_step();
  return per_row;
}

TEST(KvTile, PrefillChunksAndMixedStepsEqualRowByRowBitForBit) {
  // Flat layers, a window wider than the chunk and one narrower (its rows past
  // the window are not tiled), two KV heads of odd dims.
  const KvGeometry geo = kvtest::simple_geometry(3, {0, 100, 5}, 2, 40, 24);
  int compared = 0;
  for (KvKind kind : {KvKind::kSequence, KvKind::kBatchedSequence, KvKind::kBatchedCell})
    for (KvDType dt : {KvDType::F32, KvDType::F16, KvDType::Q8_0})
      for (int group : {1, 4}) {
        SCOPED_TRACE(::testing::Message() << kv_kind_name(kind) << " " << kv_dtype_name(dt) << " group " << group);
        KvPolicy p;
        p.max_capacity = 256;
        p.initial_capacity = 8;
        p.dtype = dt;
        p.max_write = 80;
        p.max_sequences = 2;
        p.block_size = 16;
        const bool two = kind != KvKind::kSequence;
        auto together = make_kv_cache(kind, geo, p);
        auto alone = make_kv_cache(kind, geo, p);
        if (two) {
          ASSERT_TRUE(together->add_sequence(1).ok());
          ASSERT_TRUE(alone->add_sequence(1).ok());
        }
        // Step 1: a 70-row prefill chunk of seq 0 (sequence: all of it);
        // step 2: seq 0's next 3 rows and seq 1's first 40 (a mixed step).
        std::vector<std::vector<KvRow>> steps;
        std::vector<KvRow> s1, s2;
        for (int64_t i = 0; i < 70; ++i) s1.push_back({0, i});
        for (int64_t i = 70; i < 73; ++i) s2.push_back({0, i});
        if (two)
          for (int64_t i = 0; i < 40; ++i) s2.push_back({1, i});
        for (const auto& rows : {s1, s2}) {
          const auto got = step(*together, rows, group);
          for (size_t i = 0; i < rows.size(); ++i) {
            const auto want = step(*alone, {rows[i]}, group);
            ASSERT_EQ(got[i].size(), want[0].size());
            for (size_t e = 0; e < got[i].size(); ++e)
              ASSERT_TRUE(same_bits(got[i][e], want[0][e])) << "row " << i << " (seq " << rows[i].seq << " pos "
                                                            << rows[i].pos << ") element " << e;
            ++compared;
          }
        }
      }
  EXPECT_EQ(compared, 3 * 3 * 2 * 73 + 2 * 3 * 2 * 40);
}

}  // namespace
}  // namespace og
