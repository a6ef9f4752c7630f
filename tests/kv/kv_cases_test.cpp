// Targeted cache cases: ring wrap-around, rewind and fork across a wrapped
// ring, window overrides, describe() text, the Gemma-3-1B memory formula,
// refusals that leave the cache untouched, the batched-cell pool.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "kv/kv_attend.h"
#include "kv/kv_buffer.h"
#include "kv/kv_cache.h"
#include "kv_test_util.h"

namespace og {
namespace {

using kvtest::gemma3_1b_geometry;
using kvtest::simple_geometry;

// Runs one step of `rows` on every cache of `cache` (n_heads = 2 * n_kv_heads)
// and returns all outputs; the K/V/Q of a (seq, pos) are always the same.
std::vector<float> run_step(KvCache& cache, const std::vector<KvRow>& rows) {
  const KvGeometry& g = cache.geometry();
  KvResult r = cache.begin_step(rows);
  if (!r.ok()) return {};
  std::vector<float> all;
  for (size_t l = 0; l < g.layer_cache.size(); ++l) {
    int c = g.layer_cache[l];
    const KvCacheSpec& s = g.caches[c];
    int nh = 2 * s.n_kv_heads;
    std::vector<float> q, k, v, out(rows.size() * nh * s.head_dim_v);
    kvtest::fill_qkv(rows, int(l), c, s, nh, &q, &k, &v);
    bool w = g.layer_writes.empty() || g.layer_writes[l];
    cache.update_and_attend(c, rows, q.data(), nh, w ? k.data() : nullptr, w ? v.data() : nullptr, 0.3f, out.data());
    all.insert(all.end(), out.begin(), out.end());
  }
  cache.end_step();
  return all;
}

std::vector<KvRow> span_rows(int seq, int64_t from, int64_t n) {
  std::vector<KvRow> rows;
  for (int64_t i = 0; i < n; ++i) rows.push_back({seq, from + i});
  return rows;
}

void expect_same(const std::vector<float>& a, const std::vector<float>& b, float tol = 2e-5f) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << "element " << i;
}

// Steps `n` positions of `seq` in chunks of `chunk` on both caches, comparing.
void advance(KvCache& test, KvCache& ref, int seq, int64_t n, int64_t chunk) {
  for (int64_t done = 0; done < n;) {
    int64_t m = std::min(chunk, n - done);
    auto rows = span_rows(seq, test.length(seq), m);
    expect_same(run_step(test, rows), run_step(ref, rows));
    done += m;
  }
}

KvPolicy small_policy(int64_t cap, int64_t mw) {
  KvPolicy p;
  p.max_capacity = cap;
  p.initial_capacity = 4;
  p.max_write = mw;
  p.max_sequences = 4;
  p.block_size = 4;
  return p;
}

const KvKind kStoring[] = {KvKind::kSequence, KvKind::kBatchedSequence, KvKind::kBatchedCell};

TEST(KvCases, DescribeText) {
  KvPolicy p;
  p.max_capacity = 1024;
  p.initial_capacity = 512;
  p.dtype = KvDType::BF16;
  p.max_write = 512;
  auto c = make_kv_cache(KvKind::kSequence, gemma3_1b_geometry(), p);
  EXPECT_EQ(c->describe(),
            "[cache] off-graph sequence | capacity=1024 initial=512 kv_dtype=bf16 max_write=512\n"
            "        26 layers: 4 flat + 22 ring(window 512)");
  p.windows = {0};
  EXPECT_EQ(make_kv_cache(KvKind::kSequence, gemma3_1b_geometry(), p)->describe(),
            "[cache] off-graph sequence | capacity=1024 initial=512 kv_dtype=bf16 max_write=512\n"
            "        26 layers: 26 flat");
  p.windows = {512};
  EXPECT_EQ(make_kv_cache(KvKind::kBatchedCell, gemma3_1b_geometry(), p)->describe(),
            "[cache] off-graph batched-cell | capacity=1024 initial=512 kv_dtype=bf16 max_write=512\n"
            "        26 layers: 0 flat + 26 ring(window 512)");
  p.windows = {512, 256};  // narrows max_write to 256
  auto o = make_kv_cache(KvKind::kBatchedSequence, gemma3_1b_geometry(), p);
  EXPECT_EQ(o->describe(),
            "[cache] off-graph batched-sequence | capacity=1024 initial=512 kv_dtype=bf16 max_write=256\n"
            "        26 layers: 0 flat + 13 ring(256) + 13 ring(512)");
  EXPECT_EQ(o->policy().max_write, 256);
  EXPECT_EQ(o->geometry().caches[1].window, 512);  // the geometry is untouched
  p.windows.clear();
  p.initial_capacity = 4096;  // clamped to the capacity
  EXPECT_EQ(make_kv_cache(KvKind::kReference, gemma3_1b_geometry(), p)->policy().initial_capacity, 1024);
}

// Bytes a sequence-kind cache holds for `slots` positions of k_row + v_row
// bytes (all KV heads): K of f32/f16/bf16 in whole blocks of kKeyBlock keys
// (sequence_cache.cpp), V in rows.
int64_t seq_bytes(int64_t slots, int64_t k_row, int64_t v_row) {
  const int64_t k_slots = (slots + kv::kKeyBlock - 1) / kv::kKeyBlock * kv::kKeyBlock;
  return k_slots * k_row + slots * v_row;
}

TEST(KvCases, Gemma3MemoryFormula) {
  KvPolicy p;
  p.max_capacity = 32768;
  p.dtype = KvDType::BF16;
  const int64_t pos_bytes = 1 * (256 + 256) * 2;  // 1 KV head x (K 256 + V 256) x 2 bytes
  for (int64_t mw : {512, 24576}) {
    p.max_write = mw;
    auto c = make_kv_cache(KvKind::kSequence, gemma3_1b_geometry(), p);
    // Rings start at the initial capacity (512) and grow to window + max_write - 1 slots.
    const int64_t full = 22 * seq_bytes(512 + mw - 1, 256 * 2, 256 * 2);
    KvMemory m = c->memory();
    std::printf("[ kv ] gemma-3-1b bf16 max_write=%lld: ring %.1f MiB at start (at most %.1f MiB), flat %.1f MiB\n",
                (long long)mw, m.ring_allocated / 1048576.0, full / 1048576.0, m.flat_allocated / 1048576.0);
    EXPECT_EQ(m.ring_allocated, 22 * 512 * pos_bytes);
    EXPECT_EQ(m.flat_allocated, 4 * 512 * pos_bytes);  // 4 flat layers at the initial capacity
    if (mw == 512) {
      // Past the slots the rings hold exactly the formula, and wrap instead of growing.
      for (int64_t done = 0; done < 1400; done += 350) run_step(*c, span_rows(0, done, 350));
      EXPECT_EQ(c->memory().ring_allocated, full);
      EXPECT_NEAR(full / 1048576.0, 22, 0.1);
    }
  }
}

// Issue: a huge window with a huge capacity allocated window + chunk - 1 slots
// up front (3.9 GB on a 260K-parameter model). Rings now grow like flat layers:
// the initial capacity first, doubling as positions arrive, never past
// min(window + chunk - 1, capacity); outputs stay those of the reference.
TEST(KvCases, RingsGrowLazilyUpToTheirSlots) {
  KvGeometry g = simple_geometry(2, {100000000, 5}, 2, 8, 8);
  for (KvKind kind : {KvKind::kSequence, KvKind::kBatchedSequence}) {
    SCOPED_TRACE(kv_kind_name(kind));
    KvPolicy p = small_policy(100000000, 4);
    auto t = make_kv_cache(kind, g, p);
    auto r = make_kv_cache(KvKind::kReference, g, p);
    const int64_t pos_bytes = 2 * (8 + 8) * 4;
    const int64_t row = pos_bytes / 2;  // K (or V) bytes of a position
    EXPECT_EQ(t->memory().ring_allocated, 2 * seq_bytes(4, row, row));  // both rings at the initial 4
    advance(*t, *r, 0, 37, 4);
    // The huge ring doubled to 64 rows (>= 37); the small one stopped at its 8 slots and wrapped.
    EXPECT_EQ(t->memory().ring_allocated, seq_bytes(64, row, row) + seq_bytes(8, row, row));
    ASSERT_TRUE(t->rewind(0, 3).ok());
    ASSERT_TRUE(r->rewind(0, 3).ok());
    advance(*t, *r, 0, 40, 3);
    EXPECT_EQ(t->memory().ring_allocated, seq_bytes(128, row, row) + seq_bytes(8, row, row));
  }
}

TEST(KvCases, RingWrapAroundAndRewind) {
  KvGeometry g = simple_geometry(3, {4, 0, 7}, 1, 8, 6);
  for (KvKind kind : kStoring) {
    SCOPED_TRACE(kv_kind_name(kind));
    KvPolicy p = small_policy(64, 3);
    auto t = make_kv_cache(kind, g, p);
    auto r = make_kv_cache(KvKind::kReference, g, p);
    advance(*t, *r, 0, 9, 3);  // prefill in chunks
    advance(*t, *r, 0, 17, 1); // decode: the rings (6 and 9 slots) wrap several times
    int64_t ring_bytes = t->memory().ring_allocated;
    ASSERT_TRUE(t->rewind(0, 3).ok());  // up to max_write back: always available
    ASSERT_TRUE(r->rewind(0, 3).ok());
    advance(*t, *r, 0, 5, 2);
    EXPECT_EQ(t->memory().ring_allocated, ring_bytes);
    KvResult no = t->rewind(0, 12);  // needs positions the rings overwrote
    EXPECT_EQ(no.status, KvStatus::kHistoryUnavailable);
    EXPECT_GT(no.history_begin, 0);
    EXPECT_NE(no.message.find("held only from"), std::string::npos) << no.message;
    EXPECT_EQ(t->length(0), 28);
    advance(*t, *r, 0, 4, 1);  // nothing changed: still matches
    EXPECT_TRUE(t->rewind(0, t->length(0)).ok());  // back to empty needs no history
    ASSERT_TRUE(r->rewind(0, r->length(0)).ok());
    advance(*t, *r, 0, 10, 3);
  }
}

TEST(KvCases, ForkAfterWrap) {
  KvGeometry g = simple_geometry(2, {5, 0}, 2, 4, 4);
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    SCOPED_TRACE(kv_kind_name(kind));
    KvPolicy p = small_policy(64, 2);
    auto t = make_kv_cache(kind, g, p);
    auto r = make_kv_cache(KvKind::kReference, g, p);
    advance(*t, *r, 0, 20, 2);
    ASSERT_TRUE(t->fork(0, 1, 20).ok());
    ASSERT_TRUE(r->fork(0, 1, 20).ok());
    ASSERT_TRUE(t->fork(0, 2, 19).ok());
    ASSERT_TRUE(r->fork(0, 2, 19).ok());
    KvResult no = t->fork(0, 3, 8);
    EXPECT_EQ(no.status, KvStatus::kHistoryUnavailable);
    EXPECT_EQ(t->length(3), -1);
    advance(*t, *r, 1, 7, 1);
    advance(*t, *r, 0, 3, 2);
    advance(*t, *r, 2, 6, 2);
    advance(*t, *r, 1, 2, 2);
  }
  auto s = make_kv_cache(KvKind::kSequence, g, small_policy(64, 2));
  EXPECT_EQ(s->fork(0, 1, 0).status, KvStatus::kInvalid);
  EXPECT_EQ(s->add_sequence(1).status, KvStatus::kInvalid);
}

TEST(KvCases, WindowOverrides) {
  KvGeometry g = simple_geometry(4, {16, 0}, 1, 8, 8);
  for (std::vector<int> windows : {std::vector<int>{3}, std::vector<int>{0}, std::vector<int>{5, 2}}) {
    for (KvKind kind : kStoring) {
      KvPolicy p = small_policy(64, 8);
      p.windows = windows;
      auto t = make_kv_cache(kind, g, p);
      auto r = make_kv_cache(KvKind::kReference, g, p);
      advance(*t, *r, 0, 24, t->policy().max_write);
      if (windows[0] == 0) {
        EXPECT_EQ(t->memory().ring_allocated, 0);
        EXPECT_EQ(t->policy().max_write, 8);
      } else {
        EXPECT_EQ(t->policy().max_write, windows.back());
      }
    }
  }
  // The override really changes the attention: narrower than the model's window.
  KvPolicy p = small_policy(64, 4);
  auto model = make_kv_cache(KvKind::kSequence, g, p);
  p.windows = {3};
  auto narrow = make_kv_cache(KvKind::kSequence, g, p);
  std::vector<float> a, b;
  for (int i = 0; i < 10; ++i) a = run_step(*model, span_rows(0, i, 1)), b = run_step(*narrow, span_rows(0, i, 1));
  ASSERT_EQ(a.size(), b.size());
  EXPECT_NE(a, b);
}

TEST(KvCases, RefusalsLeaveCacheUntouched) {
  KvGeometry g = simple_geometry(2, {3, 0}, 1, 4, 4);
  for (KvKind kind : kStoring) {
    SCOPED_TRACE(kv_kind_name(kind));
    KvPolicy p = small_policy(10, 4);
    auto t = make_kv_cache(kind, g, p);
    auto r = make_kv_cache(KvKind::kReference, g, p);
    advance(*t, *r, 0, 9, 4);
    KvMemory before = t->memory();
    EXPECT_EQ(t->begin_step(span_rows(0, 9, 2)).status, KvStatus::kCapacityExceeded);
    EXPECT_EQ(t->can_extend(0, 2).status, KvStatus::kCapacityExceeded);
    EXPECT_TRUE(t->can_extend(0, 1).ok());
    ASSERT_TRUE(t->rewind(0, 4).ok());
    ASSERT_TRUE(r->rewind(0, 4).ok());
    EXPECT_EQ(t->begin_step(span_rows(0, 5, 5)).status, KvStatus::kWriteTooLong);
    EXPECT_EQ(t->begin_step(span_rows(0, 6, 1)).status, KvStatus::kInvalid);
    EXPECT_EQ(t->begin_step(span_rows(9, 0, 1)).status, KvStatus::kUnknownSequence);
    EXPECT_EQ(t->length(0), 5);
    EXPECT_EQ(t->memory().allocated(), before.allocated());
    advance(*t, *r, 0, 5, 1);
    EXPECT_THROW(t->update_and_attend(0, span_rows(0, 10, 1), nullptr, 2, nullptr, nullptr, 1.f, nullptr), Error);
  }
}

TEST(KvCases, CellPoolSharingAndExhaustion) {
  KvGeometry g = simple_geometry(1, {0}, 1, 32, 32);
  KvPolicy p = small_policy(32, 4);
  p.max_sequences = 1;  // pool: 32 / 4 + 1 = 9 blocks of 4 positions
  auto t = make_kv_cache(KvKind::kBatchedCell, g, p);
  auto r = make_kv_cache(KvKind::kReference, g, p);
  advance(*t, *r, 0, 30, 4);  // 8 blocks, the last holds 2 positions
  const int64_t block = 4 * (32 + 32) * 4;
  EXPECT_EQ(t->memory().flat_used, 8 * block);
  ASSERT_TRUE(t->fork(0, 1, 30).ok());  // shares every block
  ASSERT_TRUE(r->fork(0, 1, 30).ok());
  EXPECT_EQ(t->memory().flat_used, 8 * block);
  // Blocks held by sequences, a shared block once: 8 for either or both.
  const std::vector<int> s0 = {0}, s1 = {1}, both = {0, 1}, none = {};
  EXPECT_EQ(t->block_usage(s0).used, 8);
  EXPECT_EQ(t->block_usage(both).used, 8);
  EXPECT_EQ(t->block_usage(both).total, 9);
  EXPECT_EQ(t->block_usage(none).used, 0);
  EXPECT_EQ(r->block_usage(both).total, 0);  // no block pool
  advance(*t, *r, 1, 1, 1);  // copy-on-write of the shared last block
  EXPECT_EQ(t->memory().flat_used, 9 * block);
  EXPECT_EQ(t->block_usage(s1).used, 8);
  EXPECT_EQ(t->block_usage(both).used, 9);
  ASSERT_TRUE(t->add_sequence(2).ok());
  ASSERT_TRUE(r->add_sequence(2).ok());
  KvResult no = t->begin_step(span_rows(2, 0, 1));
  EXPECT_EQ(no.status, KvStatus::kPoolExhausted);
  EXPECT_EQ(t->can_extend(2, 1).status, KvStatus::kPoolExhausted);
  EXPECT_EQ(t->length(2), 0);
  EXPECT_EQ(t->memory().flat_used, 9 * block);
  ASSERT_TRUE(t->remove_sequence(1).ok());
  ASSERT_TRUE(r->remove_sequence(1).ok());
  advance(*t, *r, 2, 3, 3);
  advance(*t, *r, 0, 2, 1);
  int64_t alloc = t->memory().allocated();
  ASSERT_TRUE(t->clear(0).ok());
  ASSERT_TRUE(t->clear(2).ok());
  EXPECT_EQ(t->memory().allocated(), alloc);  // clear keeps the allocation
  EXPECT_EQ(t->memory().used(), 0);
  t->release_unused();
  EXPECT_EQ(t->memory().allocated(), 0);
}

TEST(KvCases, SequenceClearAndRelease) {
  KvGeometry g = simple_geometry(2, {4, 0}, 1, 8, 8);
  auto t = make_kv_cache(KvKind::kSequence, g, small_policy(64, 4));
  auto r = make_kv_cache(KvKind::kReference, g, small_policy(64, 4));
  advance(*t, *r, 0, 40, 4);
  int64_t grown = t->memory().flat_allocated;
  EXPECT_EQ(grown, 64 * (8 + 8) * 4);  // 4 doubled to 64
  ASSERT_TRUE(t->clear(0).ok());
  ASSERT_TRUE(r->clear(0).ok());
  EXPECT_EQ(t->memory().flat_allocated, grown);
  advance(*t, *r, 0, 6, 3);
  t->release_unused();
  EXPECT_EQ(t->memory().flat_allocated, seq_bytes(6, 8 * 4, 8 * 4));
  advance(*t, *r, 0, 6, 3);
}

// Buffers past kv_buffer.h's threshold (huge pages for the sequence kinds;
// the batched-cell pool keeps ordinary pages, but its chunks, 16 KV heads per
// block, are laid out per head): the same results through growth, ring wrap,
// fork (a copied ring, shared blocks), rewind and release, for every storing
// kind. Rows of 16 KV heads x 512 floats make the flat cache's 128 positions
// 4 MiB per K or V buffer (two huge pages) and the ring's 67 slots 2.1 MiB (past
// the 2 MiB threshold), so the attention stays cheap (1024 floats took 37 s
// under ASan, most of it the reference cache's attention).
TEST(KvCases, HugePageBuffersMatchReference) {
  KvGeometry g = simple_geometry(2, {0, 60}, 16, 512, 512);
  const int64_t pos_bytes = 16 * (512 + 512) * 4;
  for (KvKind kind : kStoring) {
    SCOPED_TRACE(kv_kind_name(kind));
    KvPolicy p = small_policy(128, 8);  // ring slots: 60 + 8 - 1 = 67
    p.initial_capacity = 16;
    p.block_size = 16;
    p.max_sequences = 2;
    auto t = make_kv_cache(kind, g, p);
    auto r = make_kv_cache(KvKind::kReference, g, p);
    if (t->length(0) < 0) {
      ASSERT_TRUE(t->add_sequence(0).ok());
    }
    advance(*t, *r, 0, 100, 8);  // flat 16 -> 128 rows, ring 16 -> 67 slots, wrapped
    // The flat cache alone holds 128 rows: its K and V buffers are 8 MiB each.
    EXPECT_GE(t->memory().allocated(), 128 * pos_bytes);
    EXPECT_GE(128 * pos_bytes / 2, 2 * int64_t(kv::kKvHugePageMin));
    ASSERT_TRUE(t->rewind(0, 5).ok());
    ASSERT_TRUE(r->rewind(0, 5).ok());
    advance(*t, *r, 0, 9, 3);
    if (kind != KvKind::kSequence) {
      ASSERT_TRUE(t->fork(0, 1, 104).ok());
      ASSERT_TRUE(r->fork(0, 1, 104).ok());
      advance(*t, *r, 1, 11, 4);
      advance(*t, *r, 0, 3, 3);
      ASSERT_TRUE(t->remove_sequence(1).ok());
      ASSERT_TRUE(r->remove_sequence(1).ok());
    }
    t->release_unused();
    advance(*t, *r, 0, 4, 2);
  }
}

}  // namespace
}  // namespace og
