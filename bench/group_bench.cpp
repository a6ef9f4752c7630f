// Decode's shared-input matmuls as separate pool jobs against one
// kernels::matmul_group job each: one activation row through a Llama-1B-shaped
// layer's q, k (Q4_K), v (Q6_K, as Q4_K_M files have it) and gate, up (Q4_K),
// either as five matmuls or as two groups (q/k/v, gate/up), alternately. The
// weights sit in huge pages in as many copies as make ~512 MiB, used in turn,
// so that every call streams from DRAM as in decode. Prints the best and the
// median microseconds per layer of each way over all rounds and their ratio:
// the best is the most repeatable figure on a shared machine (other tenants
// only ever slow a round down).
// Usage: bench_group_bench [--threads 2] [--rounds 20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/flags.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "kernels/ops.h"
#include "dram_copies.h"

using namespace og;
using namespace og::kernels;

namespace {

struct Spec {
  DType t;
  int64_t n_out;
};
constexpr int64_t kIn = 2048;
constexpr Spec kSpecs[] = {{DType::Q4_K, 2048}, {DType::Q4_K, 512}, {DType::Q6_K, 512},
                           {DType::Q4_K, 8192}, {DType::Q4_K, 8192}};

// One copy of the five weights, each at its loader layout, back to back.
struct Layer {
  TensorView w[5];
};

std::vector<uint8_t> quantized_rows(DType t, int64_t n_out) {
  std::mt19937 rng(static_cast<uint32_t>(n_out));
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> row(kIn);
  const int64_t rb = dtype_row_bytes(t, kIn);
  std::vector<uint8_t> w(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) {
    for (float& f : row) f = dist(rng);
    quantize_row(t, row.data(), w.data() + r * rb, kIn);
  }
  if (matmul_layout(t) != t) repack_rows(t, matmul_layout(t), w.data(), n_out, kIn);
  return w;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t threads = 2, rounds = 20;
  og::Flags fl("", "[--threads N] [--rounds N]", "bench_group_bench");
  fl.add_int("threads", &threads, 1, 1024, "worker threads");
  fl.add_int("rounds", &rounds, 1, 1000000, "timed rounds");
  try {
    if (!fl.parse(og::Args(argv, argv + argc))) {
      std::fputs(fl.help().c_str(), stdout);
      return 0;
    }
  } catch (const og::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  set_num_threads(static_cast<int>(threads));
  int64_t layer_bytes = 0;
  std::vector<std::vector<uint8_t>> one;
  for (const Spec& s : kSpecs) {
    one.push_back(quantized_rows(s.t, s.n_out));
    layer_bytes += static_cast<int64_t>(one.back().size());
  }
  const int64_t copies = og::bench::dram_copies(layer_bytes, 2);
  HugePageBuffer buf(static_cast<size_t>(copies * layer_bytes));
  std::vector<Layer> layers(static_cast<size_t>(copies));
  for (int64_t c = 0; c < copies; ++c) {
    uint8_t* p = buf.data() + c * layer_bytes;
    for (int i = 0; i < 5; ++i) {
      std::copy(one[i].begin(), one[i].end(), p);
      layers[c].w[i] = TensorView{p, matmul_layout(kSpecs[i].t), {kSpecs[i].n_out, kIn}, "bench"};
      p += one[i].size();
    }
  }
  std::vector<float> x(kIn), y[5];
  for (int i = 0; i < kIn; ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  for (int i = 0; i < 5; ++i) y[i].resize(static_cast<size_t>(kSpecs[i].n_out));
  std::vector<double> t_sep, t_grp;
  for (int round = 0; round < rounds; ++round) {
    for (const Layer& l : layers) {  // separate: five jobs
      const double t0 = now_us();
      for (int i = 0; i < 5; ++i) matmul(l.w[i], x.data(), 1, y[i].data());
      t_sep.push_back(now_us() - t0);
    }
    for (const Layer& l : layers) {  // grouped: two jobs
      const MatmulTarget qkv[] = {{&l.w[0], y[0].data()}, {&l.w[1], y[1].data()}, {&l.w[2], y[2].data()}};
      const MatmulTarget gate_up[] = {{&l.w[3], y[3].data()}, {&l.w[4], y[4].data()}};
      const double t0 = now_us();
      matmul_group(qkv, x.data(), 1);
      matmul_group(gate_up, x.data(), 1);
      t_grp.push_back(now_us() - t0);
    }
  }
  std::sort(t_sep.begin(), t_sep.end());
  std::sort(t_grp.begin(), t_grp.end());
  const double sep_med = t_sep[t_sep.size() / 2], grp_med = t_grp[t_grp.size() / 2];
  std::printf("threads %d, %.1f MB per layer, %ld copies, %zu layers each way\n", static_cast<int>(threads),
              layer_bytes / 1e6, static_cast<long>(copies), t_sep.size());
  std::printf("%-10s %10s %10s %12s\n", "", "best us", "median us", "best GB/s");
  std::printf("%-10s %10.1f %10.1f %12.2f\n", "separate", t_sep[0], sep_med, layer_bytes / t_sep[0] / 1e3);
  std::printf("%-10s %10.1f %10.1f %12.2f\n", "grouped", t_grp[0], grp_med, layer_bytes / t_grp[0] / 1e3);
  std::printf("grouped / separate time: best %.3f, median %.3f\n", t_grp[0] / t_sep[0], grp_med / sep_med);
  return 0;
}
