// The prefix cache's disk tier through the scheduler on a synthetic Llama:
// blocks evicted from memory (or every block, with persist) are written; a
// restarted scheduler over the same directory reads a prompt's blocks back,
// alone or after a shorter prefix held in memory, and its greedy output equals
// the output computed without any cache; a corrupt file is a miss with the
// same output; disk blocks are announced as "disk" events.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/synth_fixture.h"
#include "runtime/scheduler.h"
#include "temp_dir.h"
#include "tokenizer/tokenizer.h"

namespace og {
namespace {

using namespace og::test;

constexpr int kBlock = 4;  // prefix-cache block: a 30-token prompt has 7 full blocks

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
};

Loaded load_llama() {
  Loaded l;
  l.model = Model::load(synth_gguf(synth::Family::kLlama));
  l.tok = Tokenizer::from_gguf(*l.model->gguf());
  return l;
}

KvPolicy policy(int sequences) {
  KvPolicy p;
  p.max_capacity = 64;
  p.initial_capacity = 8;
  p.max_write = 8;
  p.max_sequences = sequences;
  p.dtype = KvDType::F16;
  return p;
}

// Greedy tokens with no cache reuse at all, as `offgraph run` computes them.
std::vector<int32_t> cold(const Loaded& l, const std::vector<int32_t>& prompt) {
  ModelEngine engine(*l.model);
  Session s(engine, make_kv_cache(KvKind::kSequence, l.model->kv_geometry(), policy(1)), *l.tok);
  Sampler sampler(SamplerConfig{});
  GenerateOptions o;
  o.max_new_tokens = 8;
  return s.generate(prompt, sampler, o, nullptr).tokens;
}

struct Replica {
  Replica(const Loaded& l, KvKind kind, const std::string& dir, bool persist) : engine(*l.model) {
    SchedulerOptions o;
    o.max_decode_sequences = 1;
    o.step_tokens = 16;
    o.max_session_tokens = 64;
    o.prefix_cache_entries = 1;
    o.prefix_block_size = kBlock;
    o.prefix_disk.dir = dir;
    o.prefix_disk.max_bytes = int64_t{1} << 26;
    o.prefix_disk.persist = persist;
    o.kv_events = [this](std::vector<KvEvent>&& ev) {
      for (const KvEvent& e : ev)
        if (e.medium == std::string(kMediumDisk) && e.type == KvEvent::Type::kBlockStored) disk_stored += e.hashes.size();
    };
    sched = std::make_unique<Scheduler>(engine, *l.tok, make_kv_cache(kind, l.model->kv_geometry(), policy(2)), o);
  }
  RequestReport generate(const std::vector<int32_t>& prompt) {
    RequestOptions r;
    r.prompt = prompt;
    r.max_new_tokens = 8;
    RequestReport out;
    RequestCallbacks cb;
    cb.on_finish = [&](const RequestReport& rep) { out = rep; };
    sched->submit(std::move(r), std::move(cb));
    sched->run_until_idle();
    return out;
  }
  ModelEngine engine;
  size_t disk_stored = 0;  // before sched: its shutdown may still send events
  std::unique_ptr<Scheduler> sched;
};

std::vector<std::string> block_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".kvb") out.push_back(e.path().string());
  return out;
}

TEST(PrefixDiskScheduler, DiskHitsEqualOutputWithoutAnyCache) {
  const Loaded l = load_llama();
  const int32_t nv = l.model->n_vocab();
  const std::vector<int32_t> a = test_tokens(30, nv, 41);
  const std::vector<int32_t> other = test_tokens(12, nv, 42);
  std::vector<int32_t> shorter(a.begin(), a.begin() + 10);  // shares 10 tokens: 2 blocks and 2 tokens
  shorter.push_back(a[10] == 3 ? 4 : 3);
  const std::vector<int32_t> want = cold(l, a);
  for (KvKind kind : {KvKind::kBatchedSequence, KvKind::kBatchedCell}) {
    SCOPED_TRACE(kv_kind_name(kind));
    TempDir dir;
    {
      Replica r(l, kind, dir.path(), false);
      EXPECT_EQ(r.generate(a).tokens, want);
      EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 0);  // a is in memory only
      // Its capture evicts a's entry (a's prompt and the 7 reply tokens it
      // forwarded: 37 positions, 9 blocks), which go to disk.
      r.generate(other);
      EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 9);
      EXPECT_EQ(r.disk_stored, 9u);
      EXPECT_EQ(block_files(dir.path()).size(), 9u);
    }
    {
      // A restart: the prompt's 7 blocks (28 of the 29 positions a lookup may take) come from disk.
      Replica r(l, kind, dir.path(), false);
      const RequestReport rep = r.generate(a);
      EXPECT_EQ(rep.cached_tokens, 28);
      EXPECT_EQ(rep.tokens, want);
      const SchedulerSnapshot s = r.sched->snapshot();
      EXPECT_EQ(s.prefix_hits, 1);
      EXPECT_EQ(s.prefix_hit_tokens, 28);
      EXPECT_EQ(s.prefix_disk_hits, 1);
      EXPECT_EQ(s.prefix_disk_hit_tokens, 28);
    }
    {
      // Memory holds a shorter prefix (10 tokens: 2 blocks and part of a third); disk continues from block 2.
      Replica r(l, kind, dir.path(), false);
      EXPECT_EQ(r.generate(shorter).tokens, cold(l, shorter));
      const RequestReport rep = r.generate(a);
      EXPECT_EQ(rep.cached_tokens, 28);
      EXPECT_EQ(rep.tokens, want);
      // shorter took its 2 blocks from disk; a took 10 tokens from memory, its blocks 2..6 from disk.
      EXPECT_EQ(r.sched->snapshot().prefix_disk_hit_tokens, 8 + 20);
    }
    {
      // Every file corrupted: a miss (block 0's file is found bad and removed), the same output.
      const size_t files = block_files(dir.path()).size();
      for (const std::string& f : block_files(dir.path())) {
        std::fstream s(f, std::ios::in | std::ios::out | std::ios::binary);
        s.seekp(-5, std::ios::end);
        s.put('\x7f');
      }
      Replica r(l, kind, dir.path(), false);
      const RequestReport rep = r.generate(a);
      EXPECT_EQ(rep.cached_tokens, 0);
      EXPECT_EQ(rep.tokens, want);
      EXPECT_EQ(block_files(dir.path()).size(), files - 1);
    }
  }
}

TEST(PrefixDiskScheduler, PersistWritesEveryStoredBlock) {
  const Loaded l = load_llama();
  const std::vector<int32_t> a = test_tokens(30, l.model->n_vocab(), 43);
  TempDir dir;
  {
    Replica r(l, KvKind::kBatchedCell, dir.path(), true);
    r.generate(a);
    // At capture, nothing evicted: the prompt's 7 blocks, then the 2 its reply completes.
    EXPECT_EQ(r.sched->snapshot().prefix_disk_writes, 9);
  }
  Replica r(l, KvKind::kBatchedCell, dir.path(), true);
  const RequestReport rep = r.generate(a);
  EXPECT_EQ(rep.cached_tokens, 28);
  EXPECT_EQ(rep.tokens, cold(l, a));
}

}  // namespace
}  // namespace og
