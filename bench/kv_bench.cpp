// KV cache benchmarks: decode attention over 4k and 32k positions for f16,
// bf16 and q8_0 storage as GB/s of K/V read against this machine's measured
// single-thread read bandwidth; and a batch of 8 sequences sharing a 1k-token
// prefix in batched-cell against batched-sequence (memory and decode speed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "kv/kv_attend.h"
#include "kv/kv_cache.h"
#include "kv/kv_common.h"

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Best of several passes summing a 512 MiB buffer (one thread), in GB/s.
double read_bandwidth() {
  const size_t n = (size_t(512) << 20) / 8;
  std::vector<uint64_t> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = i;
  double best = 0;
  volatile uint64_t sink = 0;
  for (int pass = 0; pass < 5; ++pass) {
    auto t0 = Clock::now();
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i < n; i += 4) a += buf[i], b += buf[i + 1], c += buf[i + 2], d += buf[i + 3];
    sink = sink + a + b + c + d;
    best = std::max(best, n * 8.0 / seconds_since(t0) / 1e9);
  }
  return best;
}

// Decode attention of one token over n_pos stored positions, through the
// kernels the caches use (kv::attend over one span per KV head), one thread.
void bench_decode(og::KvDType dt, int64_t n_pos, double bw) {
  const int nkv = 8, group = 4, dk = 128, dv = 128;
  const int64_t rbk = og::kv::row_bytes(dt, dk), rbv = og::kv::row_bytes(dt, dv);
  std::vector<uint8_t> k(nkv * n_pos * rbk), v(nkv * n_pos * rbv);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> row(std::max(dk, dv));
  for (int64_t i = 0; i < nkv * n_pos; ++i) {
    for (float& x : row) x = u(rng);
    og::kv::encode_row(dt, row.data(), dk, k.data() + i * rbk);
    og::kv::encode_row(dt, row.data(), dv, v.data() + i * rbv);
  }
  std::vector<float> q(nkv * group * dk), out(nkv * group * dv), scratch;
  for (float& x : q) x = u(rng);
  auto step = [&] {
    for (int h = 0; h < nkv; ++h) {
      og::kv::KvSpan span{k.data() + h * n_pos * rbk, v.data() + h * n_pos * rbv, n_pos};
      og::kv::attend(dt, q.data() + h * group * dk, group, dk, dv, {&span, 1}, rbk, rbv, 0.088f, scratch,
                     out.data() + h * group * dv);
    }
  };
  step();
  int iters = 0;
  auto t0 = Clock::now();
  while (seconds_since(t0) < 1.0 || iters < 3) step(), ++iters;
  double t = seconds_since(t0) / iters;
  double gbs = double(k.size() + v.size()) / t / 1e9;
  std::printf("decode attention %-4s %6lld positions (8 KV heads x 128, GQA 4): %8.3f ms/token  %6.1f GB/s  = %5.1f%% of %.1f GB/s\n",
              og::kv_dtype_name(dt), (long long)n_pos, t * 1e3, gbs, 100 * gbs / bw, bw);
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

int main() {
  std::printf("kv attention kernels: %s\n", og::kv::kv_isa_name(og::kv::kv_isa()));
  double bw = read_bandwidth();
  std::printf("measured read bandwidth (1 thread, 512 MiB): %.1f GB/s\n", bw);
  for (int64_t n : {4096, 32768})
    for (og::KvDType dt : {og::KvDType::F16, og::KvDType::BF16, og::KvDType::Q8_0}) bench_decode(dt, n, bw);
  bench_shared_prefix(og::KvKind::kBatchedCell);
  bench_shared_prefix(og::KvKind::kBatchedSequence);
  return 0;
}
