// `offgraph bench`: prefill and (batched) decode speed of a model in
// llama-bench's spirit. Every combination of the list flags is one test,
// repeated -r times (mean ± sd). Each result is reported against its limit,
// measured on the same threads right before and right after each repetition,
// the two averaged (the machine's memory is shared and its bandwidth drifts
// between runs and within one: a limit taken once per run made the fraction
// swing by a third): decode as bytes read per
// token × tokens/s ÷ read bandwidth, prefill as multiply-adds per token ×
// tokens/s ÷ peak multiply-add rate. The fraction shown is the mean of the
// repetitions' fractions; the limit the mean of their limits. With a vision
// tower (--mmproj, or an HF directory's own unless --no-mmproj) an
// image-encode row per thread count follows: one random image of the tower's
// input size through preprocessing and the tower, images/s and ms per image
// (the first encode, which allocates the tower's scratch, untimed).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/huge_pages.h"
#include "bench_spec.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "llm_common.h"
#include "shared_flags.h"
#include "base/flags.h"
#include "kernels/ops.h"
#include "model/config.h"
#include "runtime/bench.h"
#include "runtime/run_setup.h"
#include "runtime/vision_model.h"

namespace og::app {

namespace {

struct BenchFlags {
  std::string model;
  std::vector<int64_t> n_prompt = {512}, n_gen = {128}, depth = {0}, n_seqs = {1}, threads;
  int64_t repetitions = 5, prefill_chunk = 512, seed = 1;
  std::string kv_dtype = "f16", cache_kind = "batched-sequence";
  std::string mmproj;  // a vision tower whose image encoding is timed too
  bool no_mmproj = false;  // not even an HF directory's own tower
  bool mmap = false, experts_in_memory = false, json = false, no_progress = false;
};

struct Limits {
  double read_gbs = 0;     // GB/s
  double madd_peak = 0;    // multiply-adds per second (int8 or f32, as the weights use)
};

// The probes behind a test's limit; the bandwidth buffer is allocated once.
class Probes {
 public:
  explicit Probes(bool int8) : int8_(int8), buf_(kBytes) { std::memset(buf_.data(), 1, kBytes); }
  double read_gbs() { return kernels::read_bandwidth(buf_.data(), static_cast<int64_t>(kBytes), 2); }
  double madd_peak() const { return kernels::madd_peak(int8_, 0.1); }

 private:
  static constexpr size_t kBytes = size_t{512} << 20;  // far beyond the caches
  bool int8_;
  HugePageBuffer buf_;
};

struct Result {
  std::string kind;  // prefill | decode
  int64_t n_prompt = 0, n_gen = 0, depth = 0, n_seqs = 1, threads = 1;
  std::vector<double> tok_s;
  double mean = 0, sd = 0;
  double bytes_per_token = 0;  // decode
  double fraction = 0;         // of the bandwidth (decode) or of the peak (prefill): mean over repetitions
  Limits limits;               // means over repetitions
};

Result make_result(const char* kind, int64_t n_prompt, int64_t n_gen, int64_t depth, int64_t n_seqs) {
  Result r;
  r.kind = kind;
  r.n_prompt = n_prompt;
  r.n_gen = n_gen;
  r.depth = depth;
  r.n_seqs = n_seqs;
  return r;
}

void mean_sd(Result& r) {
  double s = 0;
  for (double v : r.tok_s) s += v;
  r.mean = s / static_cast<double>(r.tok_s.size());
  double q = 0;
  for (double v : r.tok_s) q += (v - r.mean) * (v - r.mean);
  r.sd = r.tok_s.size() > 1 ? std::sqrt(q / static_cast<double>(r.tok_s.size() - 1)) : 0.0;
}

// The weights are quantized (int8 dot products) unless every matrix is a float type.
bool quantized_weights(const Model& m) {
  const WeightTraffic t = m.weight_traffic();
  // Float weights take at least 2 bytes per multiply-add; the quantized ones at most ~1.1.
  return t.matmul_bytes < 2 * t.matmul_macs_per_row;
}

std::string mib(int64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}

std::string test_name(const Result& r) {
  char buf[96];
  int n = std::snprintf(buf, sizeof buf, "%s%lld", r.kind == "prefill" ? "pp" : "tg",
                        static_cast<long long>(r.kind == "prefill" ? r.n_prompt : r.n_gen));
  if (r.n_seqs > 1) n += std::snprintf(buf + n, sizeof buf - n, " x%lld", static_cast<long long>(r.n_seqs));
  if (r.depth > 0) std::snprintf(buf + n, sizeof buf - n, " @ d%lld", static_cast<long long>(r.depth));
  return buf;
}

// Bytes one decode step reads per token: the weights once for all
// sequences, and each sequence its own K/V at its mean position over the test.
// A mixture of experts' step reads its dense part and the experts it routed
// any row to: expert_bytes, what the timed steps read (a row's share of
// routed experts in matmul_bytes is replaced by it).
double decode_bytes_per_token(const Model& m, const BenchFlags& f, const Result& r, int64_t expert_bytes) {
  KvDType kd = KvDType::F32;
  kv_dtype_from_name(f.kv_dtype, &kd);
  const double kv = static_cast<double>(kv_bytes_read(m.kv_geometry(), kd, r.depth + r.n_gen / 2));
  const WeightTraffic t = m.weight_traffic();
  const double step = static_cast<double>(t.matmul_bytes - t.expert_bytes_per_row) +
                      static_cast<double>(expert_bytes) / static_cast<double>(r.n_gen);
  return step / static_cast<double>(r.n_seqs) + kv;
}

// On a terminal, one stderr line updated in place while a test runs.
void show_progress(const BenchFlags& f, const Result& r, int64_t threads, int64_t rep, int64_t reps, int64_t test,
                   int64_t tests) {
  if (f.no_progress || !diagnostics_on() || !isatty(STDERR_FILENO)) return;
  std::fprintf(stderr, "\r\033[K[bench] test %lld/%lld: %s, %lld thread%s, repetition %lld/%lld",
               static_cast<long long>(test), static_cast<long long>(tests), test_name(r).c_str(),
               static_cast<long long>(threads), threads == 1 ? "" : "s", static_cast<long long>(rep),
               static_cast<long long>(reps));
  std::fflush(stderr);
}

void clear_progress(const BenchFlags& f) {
  if (!f.no_progress && diagnostics_on() && isatty(STDERR_FILENO)) std::fputs("\r\033[K", stderr);
}

// Runs the test's repetitions; false when SIGINT/SIGTERM stopped it (before
// its first timed repetition finished: nothing to report).
bool run_one(const Model& m, const BenchFlags& f, const BenchCacheOptions& co, Probes& probes, Result& r,
             int64_t test, int64_t tests) {
  const bool prefill = r.kind == "prefill";
  int64_t expert_bytes = 0;  // of the last decode run
  auto once = [&](uint64_t seed, bool warm) {
    if (prefill)
      return bench_prefill_seconds(m, co, r.depth, warm ? std::min<int64_t>(r.n_prompt, 16) : r.n_prompt, seed);
    return bench_decode_seconds(m, co, r.depth, warm ? std::min<int64_t>(r.n_gen, 2) : r.n_gen,
                                static_cast<int>(r.n_seqs), seed, &expert_bytes);
  };
  once(static_cast<uint64_t>(f.seed), true);  // warm-up: caches, pool, page faults
  double limit_sum = 0, fraction_sum = 0, bytes_sum = 0;
  int64_t done = 0;
  for (int64_t i = 0; i < f.repetitions && !interrupted(); ++i) {
    show_progress(f, r, r.threads, i + 1, f.repetitions, test, tests);
    auto probe = [&] { return prefill ? probes.madd_peak() : probes.read_gbs() * 1e9; };
    const double before = probe();
    const double s = once(static_cast<uint64_t>(f.seed + i), false);
    if (interrupted()) break;  // the run stopped early: its time means nothing
    const double limit = (before + probe()) / 2;
    const double tokens = prefill ? static_cast<double>(r.n_prompt) : static_cast<double>(r.n_gen * r.n_seqs);
    r.tok_s.push_back(tokens / s);
    // Prefill: multiply-adds per token; decode: bytes read per token in this run.
    const double work = prefill ? static_cast<double>(m.weight_traffic().matmul_macs_per_row)
                                : decode_bytes_per_token(m, f, r, expert_bytes);
    if (!prefill) bytes_sum += work;
    limit_sum += limit;
    fraction_sum += r.tok_s.back() * work / limit;
    ++done;
  }
  clear_progress(f);
  if (done == 0) return false;
  mean_sd(r);
  const double n = static_cast<double>(done);
  if (prefill) r.limits.madd_peak = limit_sum / n;
  else r.limits.read_gbs = limit_sum / n / 1e9;
  if (!prefill) r.bytes_per_token = bytes_sum / n;
  r.fraction = fraction_sum / n;
  return true;
}

nlohmann::json to_json(const BenchFlags& f, const Model& m, const std::vector<Result>& results) {
  nlohmann::json j;
  j["model"] = f.model;
  j["architecture"] = m.architecture();
  j["isa"] = kernels::isa_name();
  j["kv_storage_dtype"] = f.kv_dtype;
  j["cache_kind"] = f.cache_kind;
  j["weights_in_huge_pages"] = !f.mmap;
  const WeightResidency wr = m.weight_residency();
  j["weights_copied_bytes"] = wr.copied_bytes;  // resident
  j["weights_mapped_expert_bytes"] = wr.mapped_expert_bytes;
  j["weights_mapped_other_bytes"] = wr.mapped_other_bytes;
  j["matmul_weight_bytes"] = m.weight_traffic().matmul_bytes;
  j["matmul_macs_per_token"] = m.weight_traffic().matmul_macs_per_row;
  j["peak_kind"] = quantized_weights(m) ? "int8" : "f32";
  j["results"] = nlohmann::json::array();
  for (const Result& r : results) {
    nlohmann::json o;
    o["test"] = test_name(r);
    o["kind"] = r.kind;
    o["n_prompt"] = r.n_prompt;
    o["n_gen"] = r.n_gen;
    o["depth"] = r.depth;
    o["n_seqs"] = r.n_seqs;
    o["threads"] = r.threads;
    o["tok_s"] = r.tok_s;
    o["tok_s_mean"] = r.mean;
    o["tok_s_sd"] = r.sd;
    if (r.kind == "decode") {
      o["read_bandwidth_gbs"] = r.limits.read_gbs;
      o["bytes_per_token"] = r.bytes_per_token;
      o["fraction_of_bandwidth"] = r.fraction;
    } else {
      o["madd_peak_per_s"] = r.limits.madd_peak;
      o["fraction_of_peak"] = r.fraction;
    }
    j["results"].push_back(o);
  }
  return j;
}

void print_markdown_header(const BenchFlags& f, const Model& m) {
  const WeightTraffic wt = m.weight_traffic();
  const WeightResidency wr = m.weight_residency();
  const std::string where = wr.mapped_expert_bytes > 0 && wr.copied_bytes > 0
                                ? "huge pages, experts mapped (" + mib(wr.mapped_expert_bytes) + ")"
                            : f.mmap ? "mmap"
                                     : "huge pages";
  std::printf("model: %s (%s), matmul weights %.1f MiB, %.2f G multiply-adds per token; isa %s; kv %s %s; weights %s\n",
              std::filesystem::path(f.model).filename().string().c_str(), m.architecture().c_str(),
              static_cast<double>(wt.matmul_bytes) / (1 << 20), static_cast<double>(wt.matmul_macs_per_row) / 1e9,
              kernels::isa_name(), f.kv_dtype.c_str(), f.cache_kind.c_str(), where.c_str());
  std::printf("limits measured before and after each repetition (their mean): read bandwidth (decode), %s multiply-add peak (prefill)\n\n",
              quantized_weights(m) ? "int8" : "f32");
  std::printf("| test | threads | tok/s | bytes/token | GB/s | limit | %% of limit |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  std::fflush(stdout);
}

// One table row, printed as soon as its test finishes (llama-bench's habit).
void print_markdown_row(const Result& r) {
  char bytes[32] = "-", gbs[32] = "-", limit[48];
  if (r.kind == "decode") {
    std::snprintf(bytes, sizeof bytes, "%.1f MB", r.bytes_per_token / 1e6);
    std::snprintf(gbs, sizeof gbs, "%.1f", r.mean * r.bytes_per_token / 1e9);
    std::snprintf(limit, sizeof limit, "%.1f GB/s", r.limits.read_gbs);
  } else {
    std::snprintf(limit, sizeof limit, "%.0f G madd/s", r.limits.madd_peak / 1e9);
  }
  std::printf("| %s | %lld | %.2f ± %.2f | %s | %s | %s | %.1f %% |\n", test_name(r).c_str(),
              static_cast<long long>(r.threads), r.mean, r.sd, bytes, gbs, limit, 100.0 * r.fraction);
  std::fflush(stdout);
}

void add_bench_flags(Flags& fl, BenchFlags& f) {
  constexpr int64_t kMaxTokens = int64_t{1} << 20;
  add_model_flag(fl, &f.model);
  fl.add_int_list("n-prompt", &f.n_prompt, 0, kMaxTokens, "prefill tests: prompt lengths; 0 = no prefill test");
  fl.add_short('p', "n-prompt");
  fl.add_int_list("n-gen", &f.n_gen, 0, kMaxTokens, "decode tests: tokens generated per sequence; 0 = no decode test");
  fl.add_short('n', "n-gen");
  fl.add_int_list("n-depth", &f.depth, 0, kMaxTokens, "positions already cached before the timed part (filled untimed)");
  fl.add_short('d', "n-depth");
  fl.add_int_list("n-seqs", &f.n_seqs, 1, 1024,
                  "decode tests: concurrent sequences, one row each per step (aggregate tok/s)");
  fl.add_short('b', "n-seqs");
  fl.add_int_list("threads", &f.threads, 1, 1024, "thread counts", "all cores");
  fl.add_short('t', "threads");
  fl.add_int("repetitions", &f.repetitions, 1, 1000, "timed runs per test");
  fl.add_short('r', "repetitions");
  add_kv_dtype_flag(fl, &f.kv_dtype);
  add_shared_cache_kind_flag(fl, &f.cache_kind,
                             "cache kind: batched-sequence (own storage per sequence, -b forks copied) or "
                             "batched-cell (blocks, -b forks shared; the kind batch and serve use)");
  add_prefill_chunk_flag(fl, &f.prefill_chunk, 1, "rows per prefill step");
  fl.add_int("seed", &f.seed, 0, int64_t{1} << 62, "seed of the random prompt tokens");
  add_mmap_flag(fl, &f.mmap, &f.experts_in_memory);
  fl.add_string("mmproj", &f.mmproj,
                "also time image encoding with this vision tower (llama.cpp's mmproj GGUF): an image-encode row "
                "per thread count, images/s and ms per image (a random image of the tower's input size; "
                "preprocessing and the tower, no file decoding); an HF directory's own tower gets the row "
                "without it",
                "FILE");
  add_no_mmproj_flag(fl, &f.no_mmproj);
  fl.add_bool("json", &f.json, "one JSON object on stdout instead of the markdown table");
  fl.add_bool("no-progress", &f.no_progress, "no progress line on stderr (shown only on a terminal)");
}

// Image encoding with `v` on `threads` threads: -r timed encodes of one random
// image of the tower's input size after an untimed one. JSON: threads,
// images_per_s (mean), sd, ms_per_image (mean).
nlohmann::json image_encode_row(const VisionModel& v, int64_t threads, int64_t reps, bool json) {
  set_num_threads(static_cast<int>(threads));
  vision::Image img;
  img.width = v.preprocess.width;
  img.height = v.preprocess.height;
  img.channels = 3;
  img.pixels.resize(static_cast<size_t>(img.width) * img.height * 3);
  uint32_t x = 12345;
  for (uint8_t& p : img.pixels) p = static_cast<uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  v.encode(img);
  Result r;
  for (int64_t i = 0; i < reps && !interrupted(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    v.encode(img);
    r.tok_s.push_back(1.0 / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (r.tok_s.empty()) return nullptr;
  mean_sd(r);
  double ms = 0;
  for (double ips : r.tok_s) ms += 1e3 / ips;
  ms /= static_cast<double>(r.tok_s.size());
  if (!json)
    std::printf("| image encode | %lld | %.4g ± %.2g | %.4g |\n", static_cast<long long>(threads), r.mean, r.sd, ms);
  return {{"threads", threads}, {"images_per_s", r.mean}, {"sd", r.sd}, {"ms_per_image", ms}};
}

}  // namespace

int cmd_bench(const Args& args) {
  BenchFlags f;
  BenchSpecFlags sf;
  Flags fl = command_flags("bench", "--model M [-p 512] [-n 128] [-d 0] [-b 1,2,4] [-t 1,2] [-r 5] [--json]");
  add_bench_flags(fl, f);
  add_bench_spec_flags(fl, sf);
  if (!fl.parse(args)) {
    std::fputs(fl.help().c_str(), stdout);
    return 0;
  }
  check_model_given(f.model);
  set_machine_output(f.json);
  const bool spec_rows = check_bench_spec_flags(fl, sf);
  // An HF directory may hold a tower (known once it loads): -p 0 -n 0 then
  // times its images alone.
  std::error_code ec;
  const bool own_tower = !f.no_mmproj && std::filesystem::is_directory(f.model, ec);
  bool any = spec_rows || !f.mmproj.empty();
  for (int64_t p : f.n_prompt) any = any || p > 0;
  for (int64_t n : f.n_gen) any = any || n > 0;
  if (!any && !own_tower) usage_fail("nothing to measure: every -p and -n value is 0");
  if (f.threads.empty()) f.threads = {default_num_threads()};
  // More threads than a few per hardware thread only wait for a core (and a
  // test at -t 1000 ran for minutes on 2 cores before printing anything).
  const int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  for (int64_t t : f.threads)
    if (t > 4 * hw)
      usage_fail("--threads " + std::to_string(t) + " is more than 4x this machine's " + std::to_string(hw) +
                 " hardware threads (" + std::to_string(4 * hw) + "): extra threads only wait for a core");

  ModelSetup ms;
  ms.model = f.model;
  ms.mmap = f.mmap;
  ms.experts_in_memory = f.experts_in_memory;
  // A missing path: exit 1, as in every command. With a tower the model
  // loads with its tokenizer (the tower's image tokens are looked up in it).
  std::shared_ptr<const VisionModel> vision;
  std::unique_ptr<Model> m;
  if (f.mmproj.empty() && !own_tower) {
    m = open_model(ms);
  } else {
    ms.mmproj = f.mmproj;
    ms.no_mmproj = f.no_mmproj;  // with --mmproj: load_model's one-line refusal
    LoadedModel lm = load_model(ms);
    m = std::move(lm.model);
    vision = lm.vision;
  }
  if (!any && !vision) usage_fail("nothing to measure: every -p and -n value is 0 and " + f.model + " has no vision tower");
  // A test longer than the trained context still runs (the cache grows), as
  // in run and batch, with a warning.
  const int64_t n_ctx = m->config().n_ctx;
  for (int64_t d : f.depth) {
    const int64_t longest = d + std::max(*std::max_element(f.n_prompt.begin(), f.n_prompt.end()),
                                         *std::max_element(f.n_gen.begin(), f.n_gen.end()));
    if (n_ctx > 0 && longest > n_ctx)
      warn("a test reaches position " + std::to_string(longest) + " (depth " + std::to_string(d) +
           "), beyond the model's trained context length " + std::to_string(n_ctx));
  }
  BenchCacheOptions co;
  kv_dtype_from_name(f.kv_dtype, &co.dtype);
  kv_kind_from_name(f.cache_kind, &co.kind);
  co.prefill_chunk = f.prefill_chunk;
  co.interrupt = &interrupted();  // a long decode row stops at the next step on SIGINT / SIGTERM
  std::vector<Result> plan;
  for (int64_t t : f.threads)
    for (int64_t d : f.depth) {
      for (int64_t p : f.n_prompt)
        if (p > 0) plan.push_back(make_result("prefill", p, 0, d, 1)), plan.back().threads = t;
      for (int64_t n : f.n_gen)
        if (n > 0)
          for (int64_t b : f.n_seqs) plan.push_back(make_result("decode", 0, n, d, b)), plan.back().threads = t;
    }
  if (!f.json) print_markdown_header(f, *m);
  install_interrupt_handler(/*restart_reads=*/true);
  std::vector<Result> results;
  Probes probes(quantized_weights(*m));
  for (size_t i = 0; i < plan.size() && !interrupted(); ++i) {
    Result r = plan[i];
    set_num_threads(static_cast<int>(r.threads));
    if (!run_one(*m, f, co, probes, r, static_cast<int64_t>(i) + 1, static_cast<int64_t>(plan.size()))) break;
    if (!f.json) print_markdown_row(r);
    results.push_back(std::move(r));
  }
  nlohmann::json images = nlohmann::json::array();
  if (vision) {
    if (!f.json) std::printf("\n%s\n\n| test | threads | images/s | ms per image |\n|---|---:|---:|---:|\n",
                             vision->describe().c_str());
    for (int64_t t : f.threads) {
      if (interrupted()) break;
      nlohmann::json row = image_encode_row(*vision, t, f.repetitions, f.json);
      if (!row.is_null()) images.push_back(std::move(row));
    }
  }
  nlohmann::json spec;
  if (spec_rows && !interrupted()) {
    BenchSpecContext ctx;
    ctx.model_path = f.model;
    ctx.model = m.get();
    ctx.cache = co;
    ctx.depth = f.depth.front();
    ctx.n_gen = std::max<int64_t>(1, *std::max_element(f.n_gen.begin(), f.n_gen.end()));
    ctx.repetitions = f.repetitions;
    ctx.seed = f.seed;
    ctx.json = f.json;
    set_num_threads(static_cast<int>(f.threads.front()));
    spec = run_bench_spec(sf, ctx);
  }
  if (f.json) {
    nlohmann::json j = to_json(f, *m, results);
    if (spec_rows) j["spec"] = spec;
    if (vision) j["image_encode"] = images;
    j["warnings"] = warnings();
    std::printf("%s\n", j.dump().c_str());
  }
  if (interrupted()) {
    std::fprintf(stderr, "[interrupted: %zu of %zu tests done]\n", results.size(), plan.size());
    return interrupted_exit_code();
  }
  return 0;
}

}  // namespace og::app
