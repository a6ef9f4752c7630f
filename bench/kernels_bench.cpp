// Matmul throughput per weight dtype, instruction set, batch size and thread
// count: prints GB/s of weights streamed and GFLOP/s. ISAs run alternately in
// the same minute so their ratio is meaningful on a noisy machine.
// Usage: bench_kernels_bench [dtype ...] [options]   (default: the hot dtypes)
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/flags.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/ops.h"
#include "dram_copies.h"

using namespace og;
using namespace og::kernels;

namespace {

// 64-byte aligned bytes, as the loader places each matrix (weights_placement.cpp).
// At malloc's 16 the from-cache rates were those of a misaligned matrix: AMD Zen 5,
// 2048x2048 decode, Q4_K_R16 (avx512) 4-6 % and Q6_K_R16 7-13 % low, the ymm
// Q4_K_R 5-8 % high (cf3aa4b).
template <class T>
struct Align64 {
  using value_type = T;
  Align64() = default;
  template <class U>
  Align64(const Align64<U>&) {}
  T* allocate(size_t n) {
    void* p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const Align64<U>&) const { return true; }
};
using Bytes = std::vector<uint8_t, Align64<uint8_t>>;

Bytes make_weight(DType t, int64_t n_out, int64_t n_in) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> row(static_cast<size_t>(n_in));
  const int64_t rb = dtype_row_bytes(t, n_in);
  Bytes w(static_cast<size_t>(n_out * rb));
  for (int64_t r = 0; r < n_out; ++r) {
    for (float& f : row) f = dist(rng);
    quantize_row(t, row.data(), w.data() + r * rb, n_in);
  }
  return w;
}

// Wall seconds, or with cpu_time this thread's CPU seconds: with one thread
// (the pool is not woken) the time slices other processes take on a loaded
// machine then do not count.
double now_seconds(bool cpu_time) {
  if (cpu_time) {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The best of several ~50 ms windows: on a shared machine the minimum is the
// most repeatable figure (other tenants only ever slow a window down).
double seconds_per_call(const KernelTable& k, const TensorView& w, const std::vector<float>& x, int64_t n_x,
                        std::vector<float>& y, bool cpu_time) {
  matmul_with(k, w, x.data(), n_x, y.data());  // warm up
  double best = 1e30;
  for (int window = 0; window < 6; ++window) {
    int iters = 0;
    const double t0 = now_seconds(cpu_time);
    double el = 0;
    do {
      matmul_with(k, w, x.data(), n_x, y.data());
      ++iters;
      el = now_seconds(cpu_time) - t0;
    } while (el < 0.05 && iters < 200);
    best = std::min(best, el / iters);
  }
  return best;
}

// --stream: one decode step's product (n_x rows: 1 for one session, a few
// for batched decode) against a plain read of the same bytes, both on the
// same threads, alternately in the same minute. The
// weights sit in huge pages as the loader puts them, in as many copies as
// make ~512 MiB, used in turn, so that every call streams from DRAM (one
// 2048x2048 Q4_K matrix alone would stay in L3). Prints the best GB/s of
// each over `rounds` alternations and the matvec's share of the read, and the
// product's mean GB/s over all its calls (what a model's many small calls
// see: the best single call of a 1 MB matrix is far above it).
void stream_compare(DType t, int64_t n_out, int64_t n_in, int64_t n_x, int64_t threads, int rounds) {
  const DType layout = matmul_layout(t);
  const int64_t rb = dtype_row_bytes(layout, n_in), bytes = n_out * rb;
  const int64_t copies = og::bench::dram_copies(bytes);
  HugePageBuffer buf(static_cast<size_t>(copies * bytes));
  // A few distinct quantized rows, repeated: the speed does not depend on the values.
  const int64_t distinct = std::min<int64_t>(n_out, 64);
  Bytes rows = make_weight(t, distinct, n_in);
  if (layout != t) repack_rows(t, layout, rows.data(), distinct, n_in);
  for (int64_t c = 0; c < copies; ++c)
    for (int64_t r = 0; r < n_out; ++r)
      std::copy_n(rows.data() + (r % distinct) * rb, rb, buf.data() + c * bytes + r * rb);
  set_num_threads(static_cast<int>(threads));
  std::vector<float> x(static_cast<size_t>(n_x * n_in)), y(static_cast<size_t>(n_x * n_out));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  double best_mm = 0, best_rd = 0, total_s = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int64_t c = 0; c < copies; ++c) {  // one pass over every copy
      const TensorView w{buf.data() + c * bytes, layout, {n_out, n_in}, "bench"};
      const auto t0 = std::chrono::steady_clock::now();
      matmul(w, x.data(), n_x, y.data());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best_mm = std::max(best_mm, static_cast<double>(bytes) / s / 1e9);
      total_s += s;
    }
    for (int64_t c = 0; c < copies; ++c)
      best_rd = std::max(best_rd, read_bandwidth(buf.data() + c * bytes, bytes, 1));
  }
  const double mean_mm = static_cast<double>(bytes) * static_cast<double>(copies * rounds) / total_s / 1e9;
  std::printf("%-7s %6ldx%-5ld %3ld %2ld %8.1f MB %9.2f %9.2f %9.2f %6.1f %%\n",
              dtype_name(static_cast<uint32_t>(layout)).c_str(), static_cast<long>(n_out), static_cast<long>(n_in),
              static_cast<long>(n_x), static_cast<long>(threads), bytes / 1e6, best_mm, mean_mm, best_rd,
              100.0 * best_mm / best_rd);
  std::fflush(stdout);
}

}  // namespace

// --stream (alone): for each dtype, shape, n_x (default 1 here) and thread
// count, the decode product's GB/s against a plain read of the same bytes
// (stream_compare).
// Options (each a comma list): --isa scalar,avx2,avxvnni,avx512  --nx 1,64
// --threads 1,2  --shape 2048x2048,8192x2048 (n_out x n_in); --cpu-time
// (alone) times the calling thread's CPU time, for --threads 1 only; --plain
// (alone) also times the file's layout where the loader repacks (Q6_K next to
// Q6_K_R ...), alternating with it, and prints the ratio; --vs LAYOUT (an
// in-memory layout's name, e.g. q4_k_r) does the same with the file's
// weights repacked into LAYOUT instead; --rounds N takes the best of N such
// alternations.
int main(int argc, char** argv) {
  std::vector<DType> dtypes;
  std::vector<Isa> isas = available_isas();
  std::vector<int64_t> nxs, thread_counts = {1, 2};  // nxs default: {1, 64}, with --stream {1}
  struct Shape {
    int64_t n_out, n_in;
  };
  std::vector<Shape> shapes = {{2048, 2048}, {8192, 2048}};
  bool cpu_time = false, with_plain = false, stream = false;
  DType vs = DType::F32;  // with --vs: the other layout (F32: the file's own)
  int64_t rounds = 1;
  std::string isa_list, shape_list, vs_name;
  std::vector<std::string> dtype_names;
  og::Flags fl("", "[DTYPE...] [options]", "bench_kernels_bench");
  fl.add_string("isa", &isa_list, "instruction sets to time, a comma list (scalar,avx2,avxvnni,avx512)", "LIST");
  fl.add_int_list("nx", &nxs, 1, 1 << 20, "rows of x per call");
  fl.add_int_list("threads", &thread_counts, 1, 1024, "thread counts");
  fl.add_string("shape", &shape_list, "n_out x n_in pairs, a comma list (default 2048x2048,8192x2048)", "LIST");
  fl.add_bool("cpu-time", &cpu_time, "time the calling thread's CPU time (--threads 1 only)");
  fl.add_bool("plain", &with_plain, "also time the file's layout where the loader repacks, alternating, with the ratio");
  fl.add_string("vs", &vs_name, "as --plain, against the weights repacked into this in-memory layout (e.g. q4_k_r)",
                "LAYOUT");
  fl.add_bool("stream", &stream, "matvec streaming rate against the read bandwidth (active table: OFFGRAPH_ISA)");
  fl.add_int("rounds", &rounds, 1, 1000000, "best of N alternations");
  try {
    if (!fl.parse(og::Args(argv, argv + argc), &dtype_names)) {
      std::fputs(fl.help().c_str(), stdout);
      return 0;
    }
    if (!vs_name.empty()) {
      bool found = false;
      for (uint32_t id = 0; id < kNumDTypeIds && !found; ++id)
        if (dtype_info(id) && dtype_name(id) == vs_name) vs = static_cast<DType>(id), found = true;
      if (!found) og::usage_fail("--vs " + vs_name + ": unknown layout");
      with_plain = true;
    }
    if (stream && !isa_list.empty())  // stream_compare times matmul(), the active table, in its own layout
      og::usage_fail("--stream times the active table: choose it with OFFGRAPH_ISA, not --isa");
    if (!isa_list.empty()) {
      isas.clear();
      for (int i = 0; i < kNumIsas; ++i) {  // each ISA named in the comma list
        const std::string name = isa_str(static_cast<Isa>(i));
        if (("," + isa_list + ",").find("," + name + ",") != std::string::npos) isas.push_back(static_cast<Isa>(i));
      }
      if (isas.empty()) og::usage_fail("--isa " + isa_list + ": no known instruction set");
    }
    if (!shape_list.empty()) {
      shapes.clear();
      for (size_t p = 0; p < shape_list.size();) {
        size_t q = shape_list.find(',', p);
        if (q == std::string::npos) q = shape_list.size();
        const std::string one = shape_list.substr(p, q - p);
        Shape sh{0, 0};
        if (std::sscanf(one.c_str(), "%ldx%ld", &sh.n_out, &sh.n_in) != 2 || sh.n_out < 1 || sh.n_in < 1)
          og::usage_fail("--shape expects N_OUTxN_IN pairs, got '" + one + "'");
        shapes.push_back(sh);
        p = q + 1;
      }
    }
    for (const std::string& n : dtype_names) {
      DType t;
      if (!dtype_from_name(n, &t) || !weight_dtype_supported(t)) og::usage_fail("unknown or unsupported dtype " + n);
      dtypes.push_back(t);
    }
    // Each timed dtype's rows must be whole blocks (the default list's shapes are).
    for (DType t : dtypes)
      for (const Shape& sh : shapes)
        if (sh.n_in % dtype_info(t).block != 0)
          og::usage_fail("--shape " + std::to_string(sh.n_out) + "x" + std::to_string(sh.n_in) + ": rows of " +
                         std::to_string(sh.n_in) + " are not whole " + dtype_name(static_cast<uint32_t>(t)) +
                         " blocks (" + std::to_string(dtype_info(t).block) + ")");
  } catch (const og::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  for (int64_t t : thread_counts)
    if (cpu_time && t != 1) {
      std::fprintf(stderr, "--cpu-time needs --threads 1 (the pool's threads are not counted)\n");
      return 2;
    }
  if (dtypes.empty())
    dtypes = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,   DType::Q4_0,   DType::Q4_K, DType::Q5_K,
              DType::Q6_K, DType::Q2_K, DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
  if (stream) {
    if (nxs.empty()) nxs = {1};
    std::printf("%-7s %-12s %3s %2s %11s %9s %9s %9s %8s\n", "layout", "shape", "n_x", "T", "bytes", "mv GB/s",
                "mean", "read GB/s", "share");
    for (DType t : dtypes)
      for (const auto& s : shapes)
        for (int64_t n_x : nxs)
          for (int64_t threads : thread_counts)
            stream_compare(t, s.n_out, s.n_in, n_x, threads, static_cast<int>(rounds));
    return 0;
  }
  if (nxs.empty()) nxs = {1, 64};
  std::printf("%-6s %-11s %4s %2s %-7s %10s %8s %9s\n", "dtype", "shape", "n_x", "T", "isa", "us/call", "GB/s",
              "GFLOP/s");
  for (DType t : dtypes)
    for (const auto& s : shapes) {
      Bytes wb = make_weight(t, s.n_out, s.n_in);
      // The layout the loader gives the active table's kernels (Q4_K -> Q4_K_R,
      // Q8_0 -> Q8_0_R on x86); every table has kernels for it.
      const DType layout = matmul_layout(t);
      Bytes file_bytes;
      if (with_plain && layout != t) file_bytes = wb;
      const DType other = vs != DType::F32 ? vs : t;
      if (other != t && !file_bytes.empty()) repack_rows(t, other, file_bytes.data(), s.n_out, s.n_in);
      const Bytes original = wb;  // for tables whose layout differs from the active one's
      if (layout != t) repack_rows(t, layout, wb.data(), s.n_out, s.n_in);
      const TensorView w{wb.data(), layout, {s.n_out, s.n_in}, "bench"};
      const TensorView plain{file_bytes.data(), other, {s.n_out, s.n_in}, "bench"};
      for (int64_t n_x : nxs) {
        std::vector<float> x(static_cast<size_t>(n_x * s.n_in), 0.25f), y(static_cast<size_t>(n_x * s.n_out));
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (int64_t threads : thread_counts) {
          set_num_threads(static_cast<int>(threads));
          for (Isa isa : isas) {
            if (!isa_available(isa)) continue;
            if (isa == Isa::kScalar && n_x > 1 && s.n_out > 2048) continue;  // minutes, and says nothing new
            // Each table is timed on the layout its own loader would give it
            // (--isa avx2 on an AVX-512 machine: Q4_K_R, not the active table's Q4_K_R16).
            const int to = kernel_table(isa).repack_to[static_cast<int>(t)];
            const DType own = to ? static_cast<DType>(to) : t;
            Bytes own_bytes;
            TensorView w_isa = w;
            if (own != layout) {
              own_bytes = original;
              if (own != t) repack_rows(t, own, own_bytes.data(), s.n_out, s.n_in);
              w_isa = TensorView{own_bytes.data(), own, {s.n_out, s.n_in}, "bench"};
            }
            double sec = 1e30, sec_plain = 1e30;
            for (int round = 0; round < rounds; ++round) {
              sec = std::min(sec, seconds_per_call(kernel_table(isa), w_isa, x, n_x, y, cpu_time));
              if (!file_bytes.empty())
                sec_plain = std::min(sec_plain, seconds_per_call(kernel_table(isa), plain, x, n_x, y, cpu_time));
            }
            for (const TensorView* v : {static_cast<const TensorView*>(&w_isa), &plain}) {
              if (v == &plain && file_bytes.empty()) break;
              const double sv = v == &w_isa ? sec : sec_plain;
              std::printf("%-6s %5ldx%-5ld %4ld %2d %-7s %10.1f %8.2f %9.2f", dtype_name(static_cast<uint32_t>(v->dtype)).c_str(),
                          static_cast<long>(s.n_out), static_cast<long>(s.n_in), static_cast<long>(n_x),
                          static_cast<int>(threads), isa_str(isa), sv * 1e6, static_cast<double>(wb.size()) / sv / 1e9,
                          2.0 * s.n_out * s.n_in * n_x / sv / 1e9);
              if (v == &plain) std::printf("   (%s %.2fx)", dtype_name(static_cast<uint32_t>(own)).c_str(), sec_plain / sec);
              std::printf("\n");
            }
            std::fflush(stdout);
          }
        }
      }
    }
  return 0;
}
