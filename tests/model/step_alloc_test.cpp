// A forward step allocates nothing on the heap once a step as large has run
// (the forward scratch is reused, ARCHITECTURE.md's "no per-step heap
// allocation"): decode steps and same-size prefill chunks, on every cache kind
// the runtime builds, for the llama and gemma4 synthetic families (gemma4 adds
// per-layer inputs, shared K/V and sliding windows). The caches are sized up
// front so that no step grows them (flat capacity 256, and for batched-cell
// one 256-position block per sequence): growth is the cache's documented
// doubling or block allocation, not a per-step cost. Per-thread scratch grows
// to the largest step a thread has run, so the test warms up with three
// rounds of the same steps it then counts, on one thread: with two, a pool
// worker sizes its thread-local buffers the first time the dynamic chunking
// hands it a task of a kind, which no warm-up can guarantee (under load the
// caller may take every chunk for rounds). The code a worker runs is the
// caller's, and the pool's dispatch is counted too (parallel_for builds its
// job reference even when it runs inline).
//
// This test executable replaces the global operator new to count the
// allocations of every thread (the thread pool's workers included) while a
// test has counting switched on.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "base/thread_pool.h"
#include "synth_fixture.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocs{0};

void* counted_alloc(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
// The nothrow forms too (std::stable_sort's buffer uses them): every form
// this program can call must come from this one allocator, or a sanitizer
// sees memory from its own operator new given to free.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return operator new(n, std::nothrow); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return operator new(n, a, std::nothrow);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace og {
namespace {

using synth::Family;

struct Case {
  Family family;
  KvKind kind;
};

class StepAlloc : public ::testing::TestWithParam<Case> {};

// Runs `steps` steps of `rows` rows each for sequences 0..n_seqs-1 (one row
// per sequence per step when rows == 1), starting at position `pos`.
Batch step_batch(int n_seqs, int64_t pos, int rows, const std::vector<int32_t>& toks) {
  Batch b;
  for (int s = 0; s < n_seqs; ++s)
    for (int i = 0; i < rows; ++i) {
      const int64_t p = pos + i;
      b.rows.push_back({toks[static_cast<size_t>(p) % toks.size()], s, p, i == rows - 1});
    }
  return b;
}

TEST_P(StepAlloc, WarmStepsAllocateNothing) {
  const Case c = GetParam();
  set_num_threads(1);
  std::unique_ptr<Model> m = Model::load(test::synth_gguf(c.family));
  KvPolicy pol;
  pol.max_capacity = 256;
  pol.initial_capacity = 256;  // no growth during the test
  pol.dtype = KvDType::F16;
  pol.block_size = 256;
  const bool batched = c.kind != KvKind::kSequence && c.kind != KvKind::kReference;
  const int n_seqs = batched ? 3 : 1;
  pol.max_sequences = n_seqs;
  auto cache = make_kv_cache(c.kind, m->kv_geometry(), pol);
  for (int s = 1; s < n_seqs; ++s) ASSERT_TRUE(cache->add_sequence(s).ok());
  const std::vector<int32_t> toks = test::test_tokens(64, m->n_vocab());
  std::vector<float> logits;
  int64_t pos = 0;
  // One round: a 16-row prefill chunk per sequence, then four decode steps.
  // The batches are built before counting: only the steps are counted.
  auto round = [&](int64_t* allocs) {
    std::vector<Batch> steps = {step_batch(n_seqs, pos, 16, toks)};
    for (int i = 0; i < 4; ++i) steps.push_back(step_batch(n_seqs, pos + 16 + i, 1, toks));
    pos += 20;
    g_allocs = 0;
    g_counting = true;
    KvResult r = KvResult::success();
    for (const Batch& b : steps)
      if (r.ok()) r = m->forward(b, *cache, logits);
    g_counting = false;
    *allocs = g_allocs.load();
    return r;
  };
  int64_t allocs = 0;
  for (int warm = 0; warm < 3; ++warm) {
    const KvResult r = round(&allocs);
    ASSERT_TRUE(r.ok()) << r.message;
  }
  const KvResult r = round(&allocs);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(allocs, 0) << "heap allocations in one 16-row chunk and four decode steps of "
                       << synth::family_name(c.family) << " on " << kv_kind_name(c.kind);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string k = kv_kind_name(info.param.kind);
  for (char& ch : k)
    if (ch == '-') ch = '_';
  return std::string(synth::family_name(info.param.family)) + "_" + k;
}

INSTANTIATE_TEST_SUITE_P(Kinds, StepAlloc,
                         ::testing::Values(Case{Family::kLlama, KvKind::kSequence},
                                           Case{Family::kLlama, KvKind::kBatchedSequence},
                                           Case{Family::kLlama, KvKind::kBatchedCell},
                                           Case{Family::kGemma4, KvKind::kSequence},
                                           Case{Family::kGemma4, KvKind::kBatchedCell}),
                         case_name);

}  // namespace
}  // namespace og
