// The benchmark's byte accounting and its timed runs on tiny models (no
// speed is asserted: only that the runs complete and report time, and the
// expert bytes a mixture of experts' steps read).
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/bench.h"
#include "model/synth_fixture.h"

namespace og {
namespace {

TEST(BenchKvBytes, WindowsCapThePositionsAndDtypesSetTheWidth) {
  KvGeometry g;
  g.caches = {{2, 8, 4, 0}, {1, 16, 16, 10}};  // flat, and a window of 10
  g.layer_cache = {0, 1, 1};
  g.layer_writes = {true, true, false};
  // 100 positions: flat 100·2·(8+4) + two window layers 10·1·32 each.
  EXPECT_EQ(kv_bytes_read(g, KvDType::F32, 100), 4 * (100 * 2 * 12 + 2 * 10 * 32));
  EXPECT_EQ(kv_bytes_read(g, KvDType::F16, 100), 2 * (100 * 2 * 12 + 2 * 10 * 32));
  EXPECT_EQ(kv_bytes_read(g, KvDType::F32, 5), 4 * (5 * 2 * 12 + 2 * 5 * 32));
  EXPECT_EQ(kv_bytes_read(g, KvDType::Q8_0, 64), (64 * 2 * 12 + 2 * 10 * 32) * 34 / 32);
  EXPECT_EQ(kv_bytes_read(g, KvDType::F32, 0), 0);
}

TEST(BenchRuns, PrefillAndBatchedDecodeAtDepthComplete) {
  const std::string path = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
  ASSERT_TRUE(std::filesystem::exists(path)) << "missing test data " << path;
  auto m = Model::load(path);
  BenchCacheOptions o;
  o.prefill_chunk = 5;  // depth and prompt cross chunk edges
  EXPECT_GT(bench_prefill_seconds(*m, o, 7, 12, 1), 0.0);
  o.dtype = KvDType::Q8_0;
  EXPECT_GT(bench_decode_seconds(*m, o, 9, 3, 4, 2), 0.0);
  EXPECT_GT(bench_decode_seconds(*m, o, 0, 2, 1, 3), 0.0);
}

// A mixture of experts' decode reports the experts its steps read: one row
// reads its n_experts_used experts a layer (what weight_traffic counts), a
// batch of rows each routed expert once a step, at least that and at most
// one row's experts times the rows.
TEST(BenchRuns, DecodeCountsTheExpertsItsStepsRead) {
  auto m = Model::load(test::synth_gguf(synth::Family::kQwen3Moe));
  const WeightTraffic t = m->weight_traffic();
  ASSERT_GT(t.expert_bytes_per_row, 0);
  ASSERT_LT(t.expert_bytes_per_row, t.matmul_bytes);
  BenchCacheOptions o;
  int64_t bytes = -1;
  EXPECT_GT(bench_decode_seconds(*m, o, 3, 5, 1, 1, &bytes), 0.0);
  EXPECT_EQ(bytes, 5 * t.expert_bytes_per_row);
  EXPECT_GT(bench_decode_seconds(*m, o, 3, 5, 4, 1, &bytes), 0.0);
  EXPECT_GT(bytes, 5 * t.expert_bytes_per_row);
  EXPECT_LE(bytes, 5 * 4 * t.expert_bytes_per_row);
  // A dense model reads no experts.
  auto dense = Model::load(std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf");
  EXPECT_EQ(dense->weight_traffic().expert_bytes_per_row, 0);
  EXPECT_GT(bench_decode_seconds(*dense, o, 0, 2, 2, 1, &bytes), 0.0);
  EXPECT_EQ(bytes, 0);
}

}  // namespace
}  // namespace og
