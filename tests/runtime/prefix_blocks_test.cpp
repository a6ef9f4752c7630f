// The prefix cache as a chain of hashed blocks, through the scheduler: which
// blocks a capture stores and an eviction removes (as KV events), that a hit
// is found through the deepest cached block, that a cache salt isolates, and
// that a shutdown clears every block.
#include <gtest/gtest.h>

#include <map>

#include "runtime/block_hash.h"
#include "runtime/scheduler.h"
#include "scheduler_fakes.h"

namespace og {
namespace {

using namespace og::test;

constexpr int kBlock = 4;

struct Blocks {
  explicit Blocks(int prefix_entries) : engine([](int32_t, int64_t) -> int32_t { return kX; }) {
    SchedulerOptions o;
    o.max_decode_sequences = 2;
    o.step_tokens = 16;
    o.max_session_tokens = 32;
    o.prefix_cache_entries = prefix_entries;
    o.prefix_block_size = kBlock;
    o.prefix_hash_seed = "7";
    o.kv_events = [this](std::vector<KvEvent>&& ev) {
      for (KvEvent& e : ev) events.push_back(std::move(e));
    };
    KvPolicy p;
    p.max_capacity = 32;
    p.initial_capacity = 8;
    p.max_write = 4;
    p.max_sequences = o.max_decode_sequences + o.prefix_cache_entries;
    p.block_size = kBlock;
    sched = std::make_unique<Scheduler>(engine, tok, make_kv_cache(KvKind::kBatchedCell, engine.kv_geometry(), p), o);
  }
  // Runs one request to its end; returns the prompt tokens it took from the
  // cache. One new token: only the prompt is ever forwarded (no reply to keep).
  int64_t run(const std::vector<int32_t>& prompt, const std::string& salt = "", int64_t max_new = 1) {
    RequestOptions r;
    r.prompt = prompt;
    r.max_new_tokens = max_new;
    r.cache_salt = salt;
    int64_t cached = -1;
    RequestCallbacks cb;
    cb.on_finish = [&](const RequestReport& rep) {
      cached = rep.cached_tokens;
      reply = rep.tokens;
    };
    sched->submit(std::move(r), std::move(cb));
    sched->run_until_idle();
    return cached;
  }
  std::vector<KvEvent> take() {
    std::vector<KvEvent> out;
    out.swap(events);
    return out;
  }

  FakeTokenizer tok;
  SeqFakeEngine engine;
  std::vector<KvEvent> events;  // before sched: its shutdown at destruction still sends events
  std::vector<int32_t> reply;   // the last request's sampled tokens
  std::unique_ptr<Scheduler> sched;
};

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(PrefixBlocks, CapturesStoreNewBlocksAndHitsFollowTheChain) {
  Blocks b(3);
  const BlockHasher h(kBlock, "7");
  const std::vector<int32_t> a = {kX, kY, kZ, kA, kB, kX, kX, kY, kZ, kA};  // two full blocks + 2
  EXPECT_EQ(b.run(a), 0);
  std::vector<KvEvent> ev = b.take();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, KvEvent::Type::kBlockStored);
  EXPECT_EQ(ev[0].hashes, h.chain(a, ""));
  EXPECT_FALSE(ev[0].parent.has_value());
  EXPECT_EQ(ev[0].token_ids, std::vector<int32_t>(a.begin(), a.begin() + 8));
  EXPECT_EQ(ev[0].block_size, kBlock);
  EXPECT_STREQ(ev[0].medium.c_str(), kMediumMemory);

  // The same two blocks and another tail: a hit through block 1, extended to
  // the shared ninth token; nothing new to store.
  const std::vector<int32_t> same = concat(std::vector<int32_t>(a.begin(), a.begin() + 9), {kB, kB});
  EXPECT_EQ(b.run(same), 9);
  EXPECT_TRUE(b.take().empty());

  // Block 0 shared, then new blocks: stored after their parent.
  const std::vector<int32_t> c = concat(std::vector<int32_t>(a.begin(), a.begin() + 4), {kA, kB, kB, kB, kY, kY, kY, kY, kZ});
  EXPECT_EQ(b.run(c), 4);
  ev = b.take();
  ASSERT_EQ(ev.size(), 1u);
  const std::vector<BlockHash> cc = h.chain(c, "");
  EXPECT_EQ(ev[0].hashes, std::vector<BlockHash>(cc.begin() + 1, cc.end()));
  ASSERT_TRUE(ev[0].parent.has_value());
  EXPECT_EQ(*ev[0].parent, cc[0]);
  EXPECT_EQ(ev[0].token_ids, std::vector<int32_t>(c.begin() + 4, c.begin() + 12));
}

TEST(PrefixBlocks, SaltIsolatesAndShortPromptsMatchBySalt) {
  Blocks b(4);
  const BlockHasher h(kBlock, "7");
  const std::vector<int32_t> a = {kX, kY, kZ, kA, kB, kX, kX, kY, kZ};
  EXPECT_EQ(b.run(a), 0);
  b.take();
  EXPECT_EQ(b.run(a, "tenant-1"), 0);  // another tenant: a miss
  std::vector<KvEvent> ev = b.take();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].hashes, h.chain(a, "tenant-1"));
  EXPECT_NE(ev[0].hashes[0], h.chain(a, "")[0]);
  EXPECT_EQ(b.run(a, "tenant-1"), 8);  // its own entry: a hit
  EXPECT_EQ(b.run(a), 8);
  // Shorter than a block: the longest common prefix among the same salt's entries.
  const std::vector<int32_t> s1 = {kY, kY, kA};
  EXPECT_EQ(b.run(s1, "tenant-2"), 0);
  EXPECT_EQ(b.run({kY, kY, kB}, "tenant-2"), 2);
  EXPECT_EQ(b.run({kY, kY, kB}, "tenant-3"), 0);
  EXPECT_EQ(b.run({kY, kY, kB}), 0);
}

TEST(PrefixBlocks, AFinishedReplyExtendsItsPromptsEntry) {
  Blocks b(2);
  const BlockHasher h(kBlock, "7");
  const std::vector<int32_t> prompt = {kY, kZ, kA, kB, kB, kA};  // one full block + 2
  EXPECT_EQ(b.run(prompt, "", 5), 0);
  // The sequence held the prompt and 4 of the 5 sampled tokens (the last is
  // never forwarded): 10 positions, 2 full blocks; the second is stored after
  // the prompt's block, and the prompt's entry gives way to the longer one.
  std::vector<int32_t> turn = prompt;
  turn.insert(turn.end(), b.reply.begin(), b.reply.end() - 1);
  ASSERT_EQ(turn.size(), 10u);
  std::vector<KvEvent> ev = b.take();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].hashes, h.chain(prompt, ""));
  const std::vector<BlockHash> tc = h.chain(turn, "");
  EXPECT_EQ(ev[1].hashes, std::vector<BlockHash>{tc[1]});
  EXPECT_EQ(*ev[1].parent, tc[0]);
  EXPECT_EQ(ev[1].token_ids, std::vector<int32_t>(turn.begin() + 4, turn.begin() + 8));
  EXPECT_EQ(b.sched->snapshot().prefix_entries, 1);
  // The next turn repeats the prompt and the reply: it starts from all 10.
  std::vector<int32_t> next = turn;
  next.insert(next.end(), {kZ, kZ, kY});
  EXPECT_EQ(b.run(next), 10);
  EXPECT_EQ(b.sched->snapshot().prefix_evictions, 0);
}

TEST(PrefixBlocks, EvictionRemovesTheLastHoldersBlocksAndShutdownClearsAll) {
  Blocks b(2);
  const BlockHasher h(kBlock, "7");
  const std::vector<int32_t> a = {kX, kY, kZ, kA, kB, kX, kX, kY, kZ};
  const std::vector<int32_t> c = {kX, kY, kZ, kA, kB, kB, kB, kB, kZ};  // shares block 0 with a
  const std::vector<int32_t> d = {kA, kA, kA, kA, kZ};
  b.run(a);
  b.run(c);
  b.take();
  b.run(d);  // two entries at most: a (least recently used) goes; block 0 stays with c
  std::vector<KvEvent> ev = b.take();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].type, KvEvent::Type::kBlockRemoved);
  EXPECT_EQ(ev[0].hashes, std::vector<BlockHash>{h.chain(a, "")[1]});
  EXPECT_EQ(ev[1].type, KvEvent::Type::kBlockStored);
  EXPECT_EQ(ev[1].hashes, h.chain(d, ""));
  EXPECT_EQ(b.sched->snapshot().prefix_evictions, 1);
  b.sched->shutdown(1.0);
  ev = b.take();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, KvEvent::Type::kAllBlocksCleared);
}

}  // namespace
}  // namespace og
