// The KV-cache size the scheduler reports (vllm:cache_config_info's
// num_gpu_blocks) is the block count its usage figure (vllm:kv_cache_usage_perc)
// divides by. Issue 50: the block pool keeps a spare block per sequence, so the
// gauge divided by 1290 blocks while cache_config_info said 1280.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/scheduler.h"
#include "scheduler_fakes.h"

namespace og {
namespace {

using namespace og::test;

TEST(SchedulerSnapshot, BlockCountIsWhatTheUsageDividesBy) {
  SeqFakeEngine engine([](int32_t tok, int64_t) -> int32_t { return tok == kX ? kY : kX; });
  FakeTokenizer tok;
  SchedulerOptions o;
  o.max_decode_sequences = 10;
  o.step_tokens = 64;
  o.max_session_tokens = 512;
  KvPolicy p;
  p.max_capacity = o.max_session_tokens;
  p.initial_capacity = 8;
  p.max_write = 4;
  p.max_sequences = o.max_decode_sequences;
  p.block_size = 4;
  auto c = make_kv_cache(KvKind::kBatchedCell, engine.kv_geometry(), p);
  const KvCache* cache = c.get();
  Scheduler sched(engine, tok, std::move(c), o);

  const int64_t pool = cache->block_usage({}).total;
  ASSERT_GT(pool, 0);
  // 10 sequences x 128 blocks of capacity; the pool holds 10 x 129.
  EXPECT_EQ(pool, 1290);
  EXPECT_EQ(sched.snapshot().block_size, 4);
  EXPECT_EQ(sched.snapshot().num_blocks, pool);

  // With a request running, usage x num_blocks is a whole number of blocks.
  RequestOptions r;
  r.prompt = {kBos, kX, kY, kX, kY, kX, kY, kX, kY, kX};
  r.max_new_tokens = 8;
  sched.submit(std::move(r), RequestCallbacks{});
  ASSERT_TRUE(sched.step());
  const SchedulerSnapshot s = sched.snapshot();
  ASSERT_GT(s.kv_cache_usage, 0.0);
  const double blocks = s.kv_cache_usage * static_cast<double>(s.num_blocks);
  EXPECT_NEAR(blocks, std::round(blocks), 1e-9) << s.kv_cache_usage;
  sched.run_until_idle();
}

}  // namespace
}  // namespace og
