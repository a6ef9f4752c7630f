// KV cache benchmarks: decode attention over 4k and 32k positions for f16,
// bf16 and q8_0 storage as GB/s of K/V read against this machine's read
// bandwidth measured in the same round on as many threads (one thread for the
// kernels alone, the pool for the split decode); and a batch of 8 sequences sharing a 1k-token
// prefix in batched-cell against batched-sequence (memory and decode speed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/ops.h"
#include "kv/kv_attend.h"
#include "kv/kv_cache.h"
#include "kv/kv_common.h"
#include "dram_copies.h"

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// GB/s of one pass summing `buf` on `threads` threads (each its own contiguous
// share), with the ISA's read probe (kernels::read_sum, as offgraph bench).
double read_pass(const std::vector<uint64_t>& buf, int threads) {
  const int64_t n = int64_t(buf.size());
  std::vector<uint64_t> sums(threads);
  auto t0 = Clock::now();
  auto body = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = n * p / threads, e = n * (p + 1) / threads;
      sums[p] = og::kernels::read_sum(buf.data() + b, 8 * (e - b));
    }
  };
  if (threads == 1) body(0, 1);
  else og::thread_pool().parallel_for(threads, body);
  const double t = seconds_since(t0);
  volatile uint64_t sink = 0;
  for (uint64_t x : sums) sink = sink + x;
  return double(n) * 8 / t / 1e9;
}

// Read bandwidth on `threads` threads: best of 3 passes over a 512 MiB buffer.
double read_bandwidth(const std::vector<uint64_t>& buf, int threads) {
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) best = std::max(best, read_pass(buf, threads));
  return best;
}

struct DecodeCase {
  int nkv, group, d;
  bool all_threads;  // false: the kernels on one thread; true: the pool, long histories split by position
};

// Decode attention of one token (nkv KV heads x group query heads) over n_pos
// stored positions of storage dtype dt. Each round measures the read
// bandwidth (on as many threads as the attention uses), then times the
// attention for ~0.25 s; reports the best GB/s of K/V read against the best
// bandwidth, and the median against the median.
void bench_decode(og::KvDType dt, int64_t n_pos, const DecodeCase& dc, const std::vector<uint64_t>& bwbuf,
                  int rounds) {
  const int nkv = dc.nkv, group = dc.group, dk = dc.d, dv = dc.d;
  const int threads = dc.all_threads ? og::thread_pool().size() : 1;
  const int64_t rbk = og::kv::row_bytes(dt, dk), rbv = og::kv::row_bytes(dt, dv);
  // K as the sequence kinds keep it: in blocks of kKeyBlock keys where the
  // dtype allows (n_pos is a multiple of it: each head starts a block).
  const bool blocked = og::kv::k_blocked(dt) && n_pos % og::kv::kKeyBlock == 0;
  constexpr int64_t kB = og::kv::kKeyBlock;
  // One layer's K/V, in as many copies as make ~512 MiB, used in turn: a
  // single copy (8 MiB at 4k positions) stays in a large L3 (260 MiB on one
  // Intel Xeon here) and the figure would be the cache's, not memory's.
  const int64_t layer_bytes = nkv * n_pos * (rbk + rbv);
  const int64_t copies = og::bench::dram_copies(layer_bytes);
  const int64_t kc = nkv * n_pos * rbk, vc = nkv * n_pos * rbv;  // one copy's K and V bytes
  std::vector<uint8_t> k(copies * kc), v(copies * vc);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> row(std::max(dk, dv));
  for (int64_t i = 0; i < nkv * n_pos; ++i) {
    for (float& x : row) x = u(rng);
    if (blocked) og::kv::encode_key_lane(dt, row.data(), dk, k.data() + i / kB * kB * rbk, int(i % kB));
    else og::kv::encode_row(dt, row.data(), dk, k.data() + i * rbk);
    og::kv::encode_row(dt, row.data(), dv, v.data() + i * rbv);
  }
  for (int64_t c = 1; c < copies; ++c) {
    std::memcpy(k.data() + c * kc, k.data(), size_t(kc));
    std::memcpy(v.data() + c * vc, v.data(), size_t(vc));
  }
  int64_t cur = 0;  // the copy the next step reads
  std::vector<float> q(nkv * group * dk), out(nkv * group * dv);
  for (float& x : q) x = u(rng);
  const og::kv::AttendKernels& kr = og::kv::attend_kernels(dt);
  // The same plan, pieces and merge as StoreCacheBase::update_and_attend.
  std::vector<int64_t> task_rows(nkv, n_pos);
  std::vector<og::kv::AttendPart> parts;
  const int64_t n_slots = og::kv::plan_attend_parts(task_rows, threads, &parts);
  const int64_t state_n = og::kv::attend_state_floats(group, dv);
  std::vector<float> partials(n_slots * state_n);
  auto run = [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> scratch, state;
    state.resize(state_n);
    for (int64_t i = i0; i < i1; ++i) {
      const og::kv::AttendPart& pt = parts[i];
      const int64_t h = pt.task;
      const int64_t key = h * n_pos + pt.begin;  // the span's first key in the copy
      og::kv::KvSpan span{k.data() + cur * kc + (blocked ? key / kB * kB : key) * rbk,
                          v.data() + cur * vc + key * rbv, pt.n, blocked ? int(key % kB) : -1};
      float* st = pt.slot >= 0 ? partials.data() + pt.slot * state_n : state.data();
      og::kv::attend_state_reset(st, group, dv);
      og::kv::attend_fold(kr, q.data() + h * group * dk, group, dk, dv, {&span, 1}, rbk, rbv, 0.088f, scratch, st);
      if (pt.slot < 0) og::kv::attend_state_finish(st, group, dv, out.data() + h * group * dv);
    }
  };
  auto step = [&] {
    cur = (cur + 1) % copies;
    if (threads > 1) og::thread_pool().parallel_for(int64_t(parts.size()), run);
    else run(0, int64_t(parts.size()));
    for (size_t i = 0; i < parts.size();) {
      size_t e = i + 1;
      if (parts[i].slot >= 0) {
        float* first = partials.data() + parts[i].slot * state_n;
        for (; e < parts.size() && parts[e].task == parts[i].task; ++e)
          og::kv::attend_state_merge(first, partials.data() + parts[e].slot * state_n, group, dv);
        og::kv::attend_state_finish(first, group, dv, out.data() + parts[i].task * group * dv);
      }
      i = e;
    }
  };
  std::vector<double> gbs, bws;
  for (int r = 0; r < rounds; ++r) {
    const double bw = read_bandwidth(bwbuf, threads);
    step();
    int iters = 0;
    auto t0 = Clock::now();
    while (seconds_since(t0) < 0.25 || iters < 3) step(), ++iters;
    const double g = double(layer_bytes) / (seconds_since(t0) / iters) / 1e9;
    gbs.push_back(g), bws.push_back(bw);
  }
  auto best_median = [](std::vector<double> x) {
    std::sort(x.begin(), x.end());
    return std::make_pair(x.back(), x[x.size() / 2]);
  };
  auto [g_best, g_med] = best_median(gbs);
  auto [b_best, b_med] = best_median(bws);
  std::printf("decode %-4s %6lld pos, %d KV x %3d, GQA %d, %dT (%2zu pieces): best %7.3f ms/token %5.1f GB/s = %5.1f%% of best "
              "bandwidth %.1f; median %5.1f GB/s = %5.1f%% of median bandwidth %.1f\n",
              og::kv_dtype_name(dt), (long long)n_pos, nkv, dc.d, group, threads, parts.size(),
              double(layer_bytes) / g_best / 1e6, g_best, 100 * g_best / b_best, b_best, g_med,
              100 * g_med / b_med, b_med);
  std::fflush(stdout);
}

// 8 sequences sharing a 1024-token prefix, then 64 decode steps of all 8.
void bench_shared_prefix(og::KvKind kind) {
  og::KvGeometry g;
  const int n_layers = 4, nkv = 8, d = 128, nh = 32;
  for (int l = 0; l < n_layers; ++l) g.caches.push_back({nkv, d, d, 0}), g.layer_cache.push_back(l), g.layer_writes.push_back(true);
  og::KvPolicy p;
  p.max_capacity = 2048;
  p.dtype = og::KvDType::BF16;
  p.max_write = 512;
  p.max_sequences = 8;
  auto cache = og::make_kv_cache(kind, g, p);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  auto run = [&](const std::vector<og::KvRow>& rows) {
    if (!cache->begin_step(rows).ok()) og::fail("bench: step refused");
    std::vector<float> q(rows.size() * nh * d), k(rows.size() * nkv * d), v(k.size()), out(q.size());
    for (float& x : q) x = u(rng);
    for (float& x : k) x = u(rng);
    for (float& x : v) x = u(rng);
    for (int l = 0; l < n_layers; ++l) cache->update_and_attend(l, rows, q.data(), nh, k.data(), v.data(), 0.088f, out.data());
    cache->end_step();
  };
  for (int64_t at = 0; at < 1024; at += 512) {
    std::vector<og::KvRow> rows;
    for (int64_t i = 0; i < 512; ++i) rows.push_back({0, at + i});
    run(rows);
  }
  for (int s = 1; s < 8; ++s)
    if (!cache->fork(0, s, 1024).ok()) og::fail("bench: fork refused");
  auto t0 = Clock::now();
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    std::vector<og::KvRow> rows;
    for (int s = 0; s < 8; ++s) rows.push_back({s, cache->length(s)});
    run(rows);
  }
  double t = seconds_since(t0) / steps;
  og::KvMemory m = cache->memory();
  std::printf("8 x (1024 shared + 64) bf16, 4 layers x 8 KV heads x 128, %-16s: allocated %7.1f MiB, used %7.1f MiB, decode %7.2f ms/step (%.0f tokens/s)\n",
              og::kv_kind_name(kind), m.allocated() / 1048576.0, m.used() / 1048576.0, t * 1e3, 8 / t);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::printf("kv attention kernels: %s, %d threads, %d rounds per case (best and median)\n",
              og::kernels::isa_name(), og::thread_pool().size(), rounds);
  std::vector<uint64_t> bwbuf((size_t(512) << 20) / 8);
  for (size_t i = 0; i < bwbuf.size(); ++i) bwbuf[i] = i;
  std::printf("read bandwidth (512 MiB): 1 thread %.1f GB/s, %d threads %.1f GB/s\n", read_bandwidth(bwbuf, 1),
              og::thread_pool().size(), read_bandwidth(bwbuf, og::thread_pool().size()));
  // argv[2] (optional) runs only the cases whose label "<dtype>/<positions>/<KV heads>x<dim>/<threads>T"
  // contains it, e.g. "f16/32768" or "/1T"; "prefix" runs only the shared-prefix comparison.
  const std::string only = argc > 2 ? argv[2] : "";
  // 8 x 64 is Llama-3.2-1B's shape (GQA 4, head dim 64).
  const DecodeCase cases[] = {{8, 4, 128, false}, {8, 4, 128, true}, {1, 4, 256, true}, {8, 4, 64, false}, {8, 4, 64, true}};
  for (const DecodeCase& dc : cases)
    for (int64_t n : {4096, 32768})
      for (og::KvDType dt : {og::KvDType::F16, og::KvDType::BF16, og::KvDType::Q8_0}) {
        const std::string label = std::string(og::kv_dtype_name(dt)) + "/" + std::to_string(n) + "/" +
                                  std::to_string(dc.nkv) + "x" + std::to_string(dc.d) + "/" +
                                  (dc.all_threads ? std::to_string(og::thread_pool().size()) : "1") + "T";
        if (label.find(only) != std::string::npos) bench_decode(dt, n, dc, bwbuf, rounds);
      }
  if (only.empty() || only == "prefix") {
    bench_shared_prefix(og::KvKind::kBatchedCell);
    bench_shared_prefix(og::KvKind::kBatchedSequence);
  }
  return 0;
}
