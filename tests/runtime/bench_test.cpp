// The benchmark's byte accounting and its timed runs on a tiny model (no
// speed is asserted: only that the runs complete and report time).
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/bench.h"

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

}  // namespace
}  // namespace og
