// Decode attention over a deep KV cache on one thread, timed in this
// thread's CPU time (other tenants of a shared machine slow the wall clock
// but barely this): one token of a Llama-3.2-1B-shaped model (16 layers x 8
// KV heads x head dim 64, 4 query heads per KV head) over `depth` stored
// positions, with the K/V of all 16 layers (streamed from memory, as in a
// real decode step: copies used in turn, so that a large L3 cannot hold
// them) and with one layer's K/V 16 times (in cache: the kernels'
// arithmetic alone); then each kernel alone on in-cache rows (scores, the
// weighted V sum, max + exp), in ns per position and KV head; and the whole
// token on the thread pool (wall time), the heads split as a decode step does.
// K is laid out as the sequence kinds keep it (in blocks of 16 keys for
// f32/f16/bf16, in rows for q8_0).
// Usage: bench_attend_bench [depth=4096] [repetitions=15] [f16|bf16|f32|q8_0] [small|huge]
// (the K/V buffers in ordinary pages or in 2 MiB-aligned MADV_HUGEPAGE memory).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "kv/kv_attend.h"
#include "kv/kv_common.h"
#include "dram_copies.h"

namespace {

double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Best and median of `reps` timings of f(), in seconds of this thread's CPU time.
template <class F>
std::pair<double, double> time_best_median(int reps, F&& f) {
  std::vector<double> t;
  f();
  for (int r = 0; r < reps; ++r) {
    const double t0 = thread_seconds();
    f();
    t.push_back(thread_seconds() - t0);
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

constexpr int kLayers = 16, kKv = 8, kGroup = 4, kDim = 64;

}  // namespace

int main(int argc, char** argv) {
  const int64_t depth = argc > 1 ? std::max(64, std::atoi(argv[1])) : 4096;
  const int reps = argc > 2 ? std::max(3, std::atoi(argv[2])) : 15;
  const std::string dts = argc > 3 ? argv[3] : "f16";
  og::KvDType dt = og::KvDType::F16;
  if (dts == "bf16") dt = og::KvDType::BF16;
  else if (dts == "f32") dt = og::KvDType::F32;
  else if (dts == "q8_0") dt = og::KvDType::Q8_0;
  else if (dts != "f16") {
    std::fprintf(stderr, "attend_bench: unknown dtype '%s' (f16, bf16, f32, q8_0)\n", dts.c_str());
    return 2;
  }
  const int64_t rb = og::kv::row_bytes(dt, kDim);
  // K laid out as the sequence kinds keep it: in blocks of kKeyBlock keys
  // where the dtype allows (depth is a multiple of it, so every head's
  // region starts a block), else in rows.
  const bool blocked = og::kv::k_blocked(dt) && depth % og::kv::kKeyBlock == 0;
  constexpr int64_t kB = og::kv::kKeyBlock;
  const int lane0 = blocked ? 0 : -1;
  const int64_t per_head = depth * rb;  // K (or V) bytes of one KV head
  const bool huge = argc > 4 && std::string(argv[4]) == "huge";
  // The 16 layers' K (and V), in copies used in turn by the "from memory" runs (dram_copies.h).
  const size_t layers_bytes = size_t(kLayers) * kKv * size_t(per_head);
  const int copies = static_cast<int>(og::bench::dram_copies(int64_t(2 * layers_bytes)));
  const size_t kv_bytes = layers_bytes * size_t(copies);
  std::vector<uint8_t> k_small, v_small;
  og::HugePageBuffer k_huge, v_huge;
  if (huge) k_huge = og::HugePageBuffer(kv_bytes), v_huge = og::HugePageBuffer(kv_bytes);
  else k_small.resize(kv_bytes), v_small.resize(kv_bytes);
  uint8_t* const kp = huge ? k_huge.data() : k_small.data();
  uint8_t* const vp = huge ? v_huge.data() : v_small.data();
  struct {
    uint8_t* p;
    uint8_t* data() const { return p; }
  } k{kp}, v{vp};
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> row(kDim);
  for (int64_t i = 0; i < int64_t(layers_bytes) / rb; ++i) {
    for (float& x : row) x = nd(rng);
    if (blocked) og::kv::encode_key_lane(dt, row.data(), kDim, k.data() + i / kB * kB * rb, int(i % kB));
    else og::kv::encode_row(dt, row.data(), kDim, k.data() + i * rb);
    for (float& x : row) x = nd(rng);
    og::kv::encode_row(dt, row.data(), kDim, v.data() + i * rb);
  }
  for (int c = 1; c < copies; ++c) {
    std::copy_n(k.data(), layers_bytes, k.data() + c * layers_bytes);
    std::copy_n(v.data(), layers_bytes, v.data() + c * layers_bytes);
  }
  int next_copy = 0;  // the copy the next token from memory reads
  auto copy_base = [&] {
    const size_t at = size_t(next_copy) * layers_bytes;
    next_copy = (next_copy + 1) % copies;
    return at;
  };
  std::vector<float> q(size_t(kLayers) * kKv * kGroup * kDim), out(size_t(kKv) * kGroup * kDim);
  for (float& x : q) x = nd(rng);
  const og::kv::AttendKernels& kr = og::kv::attend_kernels(dt);
  std::vector<float> scratch, state(size_t(og::kv::attend_state_floats(kGroup, kDim)));
  const float scale = 0.125f;
  // One token: every layer's 8 KV heads over all `depth` positions (layer_of(l) picks the rows).
  auto token = [&](auto layer_of, size_t base) {
    for (int l = 0; l < kLayers; ++l)
      for (int h = 0; h < kKv; ++h) {
        const int64_t at = int64_t(base) + (int64_t{layer_of(l)} * kKv + h) * per_head;
        og::kv::KvSpan span{k.data() + at, v.data() + at, depth, lane0};
        og::kv::attend_state_reset(state.data(), kGroup, kDim);
        og::kv::attend_fold(kr, q.data() + (int64_t{l} * kKv + h) * kGroup * kDim, kGroup, kDim, kDim, {&span, 1}, rb,
                            rb, scale, scratch, state.data());
        og::kv::attend_state_finish(state.data(), kGroup, kDim, out.data() + h * kGroup * kDim);
      }
  };
  const double bytes = 2.0 * kLayers * kKv * double(per_head);
  std::printf("decode attention, %s K/V (K in %s), %d layers x %d KV heads x %d, GQA %d, depth %lld: %.1f MB K+V "
              "per token "
              "(%d copies in turn), %s pages, 1 thread, CPU time, best / median of %d\n",
              og::kv_dtype_name(dt), blocked ? "blocks of 16 keys" : "rows", kLayers, kKv, kDim, kGroup, (long long)depth,
              bytes / 1e6, copies,
              huge ? "huge" : "small", reps);
  auto report = [&](const char* what, std::pair<double, double> t, double units) {
    std::printf("  %-34s %8.3f / %8.3f ms  %6.2f / %6.2f ns per position-head  %5.1f GB/s\n", what, t.first * 1e3,
                t.second * 1e3, t.first * 1e9 / units, t.second * 1e9 / units, bytes / t.first / 1e9);
  };
  const double units = double(kLayers) * kKv * double(depth);
  report("token, 16 layers from memory",
         time_best_median(reps, [&] { token([](int l) { return l; }, copy_base()); }), units);
  report("token, one layer 16x (in cache)", time_best_median(reps, [&] { token([](int) { return 0; }, 0); }), units);
  // The pool's threads splitting each layer's 8 KV heads as the model's decode
  // step does, in wall time (other tenants do move this one).
  auto token_pool = [&] {
    const size_t base = copy_base();
    for (int l = 0; l < kLayers; ++l)
      og::thread_pool().parallel_for(kKv, [&](int64_t h0, int64_t h1) {
        thread_local std::vector<float> tscratch, tstate;
        tstate.resize(state.size());
        for (int64_t h = h0; h < h1; ++h) {
          const int64_t at = int64_t(base) + (int64_t{l} * kKv + h) * per_head;
          og::kv::KvSpan span{k.data() + at, v.data() + at, depth, lane0};
          og::kv::attend_state_reset(tstate.data(), kGroup, kDim);
          og::kv::attend_fold(kr, q.data() + (int64_t{l} * kKv + h) * kGroup * kDim, kGroup, kDim, kDim, {&span, 1},
                              rb, rb, scale, tscratch, tstate.data());
          og::kv::attend_state_finish(tstate.data(), kGroup, kDim, out.data() + h * kGroup * kDim);
        }
      });
  };
  {
    std::vector<double> t;
    token_pool();
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      token_pool();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    char what[64];
    std::snprintf(what, sizeof what, "token from memory, %d threads, wall", og::thread_pool().size());
    report(what, {t.front(), t[t.size() / 2]}, units);
  }
  // The kernels alone over layer 0 (in cache), in the driver's blocks of kAttendBlock rows.
  constexpr int64_t B = og::kv::kAttendBlock;
  std::vector<float> s(size_t(kGroup) * B);
  std::vector<float> acc(size_t(kGroup) * kDim);
  const double kunits = double(kKv) * double(depth) * kLayers;
  auto each_block = [&](auto f) {
    for (int rep = 0; rep < kLayers; ++rep)
      for (int h = 0; h < kKv; ++h)
        for (int64_t i = 0; i < depth; i += B) f(int64_t{h} * per_head + i * rb, std::min(B, depth - i));
  };
  report("  scores", time_best_median(reps, [&] {
           each_block([&](int64_t at, int64_t n) {
             if (blocked) kr.scores_blocked(q.data(), kGroup, kDim, k.data() + at, 0, n, scale, s.data(), B);
             else kr.scores(q.data(), kGroup, kDim, k.data() + at, rb, n, scale, s.data(), B);
           });
         }), kunits);
  for (float& x : s) x = -std::abs(nd(rng));
  report("  accum", time_best_median(reps, [&] {
           each_block([&](int64_t at, int64_t n) { kr.accum(s.data(), B, kGroup, v.data() + at, rb, n, kDim, acc.data()); });
         }), kunits);
  std::vector<float> s0 = s;
  volatile float sink = 0;
  report("  max + exp_sum", time_best_median(reps, [&] {
           each_block([&](int64_t, int64_t n) {
             for (int j = 0; j < kGroup; ++j) {
               float* sj = s.data() + j * B;
               std::copy_n(s0.data() + j * B, n, sj);
               sink = sink + kr.exp_sum(sj, n, kr.max(sj, n));
             }
           });
         }), kunits);
  return 0;
}
