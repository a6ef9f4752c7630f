// Export and import of positions (KvCache::export_positions / import_positions,
// the prefix cache's disk tier): every kind exports the same bytes for the same
// K/V; a sequence imported from them attends bit for bit as the original, in
// every kind and storage dtype, across kinds, from an offset, and with ring
// caches (an export of positions a ring no longer holds is refused; an import
// keeps what the ring would have kept); refusals change nothing.
#include <gtest/gtest.h>

#include <cstring>

#include "kv/kv_cache.h"
#include "kv_test_util.h"

namespace og {
namespace {

using kvtest::simple_geometry;

// Three layers over two caches (layer 2 reads cache 0's KV: a donor), odd
// head dims (q8_0 pads the last block of 40).
KvGeometry donor_geometry(int window1) {
  KvGeometry g;
  g.caches = {{2, 40, 24, 0}, {1, 32, 32, window1}};
  g.layer_cache = {0, 1, 0};
  g.layer_writes = {true, true, false};
  return g;
}

KvPolicy policy_of(KvDType dt, int64_t max_write = 8) {
  KvPolicy p;
  p.max_capacity = 96;
  p.initial_capacity = 16;
  p.dtype = dt;
  p.max_write = max_write;
  p.max_sequences = 4;
  p.block_size = 16;
  return p;
}

// One step of `rows` over every layer, Q/K/V drawn as for sequence `as` (so
// two sequences can be fed the same values); returns every output.
std::vector<float> step_as(KvCache& cache, int seq, int64_t from, int64_t n, int as) {
  const KvGeometry& g = cache.geometry();
  std::vector<KvRow> rows, val_rows;
  for (int64_t i = 0; i < n; ++i) rows.push_back({seq, from + i}), val_rows.push_back({as, from + i});
  EXPECT_TRUE(cache.begin_step(rows).ok());
  std::vector<float> all;
  for (size_t l = 0; l < g.layer_cache.size(); ++l) {
    const int c = g.layer_cache[l];
    const KvCacheSpec& s = g.caches[c];
    const int nh = 2 * s.n_kv_heads;
    std::vector<float> q, k, v, out(rows.size() * nh * s.head_dim_v);
    kvtest::fill_qkv(val_rows, int(l), c, s, nh, &q, &k, &v);
    const bool w = g.layer_writes[l];
    cache.update_and_attend(c, rows, q.data(), nh, w ? k.data() : nullptr, w ? v.data() : nullptr, 0.3f, out.data());
    all.insert(all.end(), out.begin(), out.end());
  }
  cache.end_step();
  return all;
}

void prefill(KvCache& cache, int seq, int64_t n, int64_t chunk) {
  for (int64_t done = 0; done < n; done += std::min(chunk, n - done))
    step_as(cache, seq, done, std::min(chunk, n - done), seq);
}

void expect_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

const KvKind kKinds[] = {KvKind::kReference, KvKind::kBatchedSequence, KvKind::kBatchedCell};
const KvDType kDTypes[] = {KvDType::F32, KvDType::F16, KvDType::BF16, KvDType::Q8_0};

TEST(KvExport, RoundTripAttendsBitIdenticallyInEveryKindAndDtype) {
  for (KvDType dt : kDTypes) {
    std::vector<uint8_t> ref_bytes;
    for (KvKind kind : kKinds) {
      SCOPED_TRACE(std::string(kv_kind_name(kind)) + " " + kv_dtype_name(dt));
      const KvGeometry g = donor_geometry(0);
      auto cache = make_kv_cache(kind, g, policy_of(dt));
      prefill(*cache, 0, 37, 8);
      std::vector<uint8_t> bytes;
      ASSERT_TRUE(cache->export_positions(0, 0, 37, &bytes).ok());
      ASSERT_EQ(int64_t(bytes.size()), 37 * kv_position_bytes(g, cache->policy()));
      // Every kind stores the same bytes (the reference kind keeps them as written).
      if (kind == KvKind::kReference) ref_bytes = bytes;
      else EXPECT_EQ(bytes, ref_bytes);
      // Imported whole into sequence 1, and in two parts (from an offset) into sequence 2.
      ASSERT_TRUE(cache->add_sequence(1).ok());
      ASSERT_TRUE(cache->import_positions(1, bytes).ok());
      ASSERT_EQ(cache->length(1), 37);
      std::vector<uint8_t> head, tail;
      ASSERT_TRUE(cache->export_positions(0, 0, 16, &head).ok());
      ASSERT_TRUE(cache->export_positions(0, 16, 37, &tail).ok());
      ASSERT_TRUE(cache->add_sequence(2).ok());
      ASSERT_TRUE(cache->import_positions(2, head).ok());
      ASSERT_TRUE(cache->import_positions(2, tail).ok());
      std::vector<uint8_t> again;
      ASSERT_TRUE(cache->export_positions(2, 0, 37, &again).ok());
      EXPECT_EQ(again, bytes);
      // Decode and a prefill chunk attend alike on all three.
      const auto want = step_as(*cache, 0, 37, 5, 0);
      expect_bits(step_as(*cache, 1, 37, 5, 0), want);
      expect_bits(step_as(*cache, 2, 37, 5, 0), want);
      expect_bits(step_as(*cache, 0, 42, 1, 0), step_as(*cache, 1, 42, 1, 0));
    }
  }
}

TEST(KvExport, BytesMoveBetweenKinds) {
  const KvGeometry g = donor_geometry(0);
  for (KvDType dt : kDTypes) {
    SCOPED_TRACE(kv_dtype_name(dt));
    auto ref = make_kv_cache(KvKind::kReference, g, policy_of(dt));
    prefill(*ref, 0, 29, 8);
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(ref->export_positions(0, 0, 29, &bytes).ok());
    for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
      auto other = make_kv_cache(kind, g, policy_of(dt));
      prefill(*other, 0, 29, 8);
      ASSERT_TRUE(other->add_sequence(1).ok());
      ASSERT_TRUE(other->import_positions(1, bytes).ok());
      expect_bits(step_as(*other, 1, 29, 3, 0), step_as(*other, 0, 29, 3, 0));
    }
  }
}

TEST(KvExport, RingCachesExportWhatTheyHoldAndImportAsAForwardWouldWrite) {
  // Cache 1 is a ring of window 8 (max_write 4: 11 slots).
  const KvGeometry g = donor_geometry(8);
  for (KvDType dt : {KvDType::F16, KvDType::Q8_0}) {
    auto ref = make_kv_cache(KvKind::kReference, g, policy_of(dt, 4));
    prefill(*ref, 0, 30, 4);
    std::vector<uint8_t> all;
    ASSERT_TRUE(ref->export_positions(0, 0, 30, &all).ok());  // the reference keeps everything
    for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
      SCOPED_TRACE(std::string(kv_kind_name(kind)) + " " + kv_dtype_name(dt));
      auto cache = make_kv_cache(kind, g, policy_of(dt, 4));
      prefill(*cache, 0, 30, 4);
      std::vector<uint8_t> bytes = {1, 2, 3};
      const KvResult r = cache->export_positions(0, 0, 30, &bytes);
      EXPECT_EQ(r.status, KvStatus::kHistoryUnavailable) << r.message;
      EXPECT_GT(r.history_begin, 0);
      // The last window's positions are held and exported as the reference exports them.
      std::vector<uint8_t> recent, ref_recent;
      ASSERT_TRUE(cache->export_positions(0, 24, 30, &recent).ok());
      ASSERT_TRUE(ref->export_positions(0, 24, 30, &ref_recent).ok());
      EXPECT_EQ(recent, ref_recent);
      // An import of all 30 positions writes them in max_write steps: the ring
      // keeps what a forward would have kept, and attends the same.
      ASSERT_TRUE(cache->add_sequence(1).ok());
      ASSERT_TRUE(cache->import_positions(1, all).ok());
      expect_bits(step_as(*cache, 1, 30, 4, 0), step_as(*cache, 0, 30, 4, 0));
    }
  }
}

TEST(KvExport, RefusalsChangeNothing) {
  const KvGeometry g = simple_geometry(2, {0}, 1, 16, 16);
  for (KvKind kind : kKinds) {
    SCOPED_TRACE(kv_kind_name(kind));
    KvPolicy p = policy_of(KvDType::F16);
    p.max_capacity = 20;
    auto cache = make_kv_cache(kind, g, p);
    prefill(*cache, 0, 12, 8);
    std::vector<uint8_t> bytes;
    EXPECT_EQ(cache->export_positions(0, 5, 13, &bytes).status, KvStatus::kInvalid);
    EXPECT_EQ(cache->export_positions(7, 0, 1, &bytes).status, KvStatus::kUnknownSequence);
    ASSERT_TRUE(cache->export_positions(0, 0, 12, &bytes).ok());
    // Not whole positions; past the capacity; an unknown sequence.
    EXPECT_EQ(cache->import_positions(0, std::span(bytes).first(bytes.size() - 1)).status, KvStatus::kInvalid);
    EXPECT_EQ(cache->import_positions(0, bytes).status, KvStatus::kCapacityExceeded);
    EXPECT_EQ(cache->import_positions(9, bytes).status, KvStatus::kUnknownSequence);
    EXPECT_EQ(cache->length(0), 12);
    std::vector<uint8_t> again;
    ASSERT_TRUE(cache->export_positions(0, 0, 12, &again).ok());
    EXPECT_EQ(again, bytes);
  }
}

}  // namespace
}  // namespace og
