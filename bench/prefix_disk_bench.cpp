// Prefix-cache disk tier benchmark (not a test): time to first token of a
// request whose P-token prefix is
//   1. recomputed (no prefix cache at all),
//   2. recomputed and written to disk (--prefix-cache-persist: the write's cost),
//   3. read back from disk by a new scheduler (a restart), file pages in the page cache,
//   4. the same with the files' pages dropped first (posix_fadvise DONTNEED: a cold read).
// Each request is the prefix plus 16 tokens of its own and asks for one token.
// usage: bench_prefix_disk_bench MODEL DIR [P=2000] [KV_DTYPE=f16] [REPS=3]
// DIR must exist; the bench's .kvb files in it are removed at the end.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/model_source.h"
#include "model/model.h"
#include "runtime/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace og;

constexpr int kTail = 16;

std::vector<int32_t> random_tokens(int n, int32_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
  return t;
}

struct Setup {
  const Model& model;
  const Tokenizer& tok;
  KvDType dtype;
  int64_t session_tokens;
};

// A fresh scheduler (a new process, as far as the cache goes); dir "" = no disk tier.
std::unique_ptr<Scheduler> make_scheduler(Engine& e, const Setup& s, const std::string& dir, bool persist) {
  KvPolicy p;
  p.max_capacity = s.session_tokens;
  p.initial_capacity = std::min<int64_t>(512, s.session_tokens);
  p.max_write = 512;
  p.dtype = s.dtype;
  p.max_sequences = 2;
  SchedulerOptions o;
  o.max_decode_sequences = 1;
  o.step_tokens = 512;
  o.max_session_tokens = s.session_tokens;
  o.prefix_cache_entries = dir.empty() ? 0 : 1;
  o.prefix_disk.dir = dir;
  o.prefix_disk.max_bytes = int64_t{8} << 30;
  o.prefix_disk.persist = persist;
  return std::make_unique<Scheduler>(e, s.tok, make_kv_cache(KvKind::kBatchedCell, s.model.kv_geometry(), p), o);
}

RequestReport ask(Scheduler& sched, std::vector<int32_t> prompt) {
  RequestOptions r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = 1;
  RequestReport out;
  RequestCallbacks cb;
  cb.on_finish = [&](const RequestReport& rep) { out = rep; };
  sched.submit(std::move(r), std::move(cb));
  sched.run_until_idle();
  return out;
}

void drop_page_cache(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".kvb") continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

int64_t dir_bytes(const std::string& dir) {
  int64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".kvb") n += static_cast<int64_t>(e.file_size());
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "min s / median s": on a shared machine the minimum is the run least disturbed by others.
std::string cell(const std::vector<double>& v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f s / %.3f s", *std::min_element(v.begin(), v.end()), median(v));
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL DIR [P=2000] [KV_DTYPE=f16] [REPS=3]\n", argv[0]);
    return 2;
  }
  try {
    const std::string dir = argv[2];
    const int P = argc > 3 ? std::atoi(argv[3]) : 2000;
    KvDType dtype = KvDType::F16;
    if (argc > 4 && !kv_dtype_from_name(argv[4], &dtype)) fail("unknown KV dtype ", argv[4]);
    const int reps = argc > 5 ? std::max(1, std::atoi(argv[5])) : 3;
    const auto src = ModelSource::open(argv[1]);  // the model and its tokenizer from one opening
    auto model = Model::load(*src);
    auto tok = Tokenizer::from_source(*src);
    ModelEngine engine(*model);
    const Setup s{*model, *tok, dtype, P + kTail + 8};
    const int32_t nv = model->n_vocab();
    const std::vector<int32_t> prefix = random_tokens(P, nv, 1);
    uint32_t seed = 100;
    auto prompt = [&] {
      std::vector<int32_t> p = prefix;
      const std::vector<int32_t> tail = random_tokens(kTail, nv, ++seed);
      p.insert(p.end(), tail.begin(), tail.end());
      return p;
    };
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::printf("model %s, prefix %d tokens + %d of each request's own, KV %s, batched-cell, %d reps\n", argv[1], P,
                kTail, kv_dtype_name(dtype), reps);
    std::vector<double> cold, written, warm, dropped;
    int64_t cached_warm = 0, cached_dropped = 0, bytes = 0;
    for (int i = 0; i < reps; ++i) {
      cold.push_back(ask(*make_scheduler(engine, s, "", false), prompt()).ttft_s);
      written.push_back(ask(*make_scheduler(engine, s, dir, true), prompt()).ttft_s);
      bytes = dir_bytes(dir);
      const RequestReport w = ask(*make_scheduler(engine, s, dir, false), prompt());
      warm.push_back(w.ttft_s);
      cached_warm = w.cached_tokens;
      drop_page_cache(dir);
      const RequestReport d = ask(*make_scheduler(engine, s, dir, false), prompt());
      dropped.push_back(d.ttft_s);
      cached_dropped = d.cached_tokens;
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".kvb") std::filesystem::remove(e.path());
    }
    auto lo = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    const double c = lo(cold);
    std::printf("| prefix | TTFT, min / median of %d | recomputed / this (min) |\n|---|---|---|\n", reps);
    std::printf("| recomputed (no prefix cache) | %s | 1x |\n", cell(cold).c_str());
    std::printf("| recomputed, written to disk (persist) | %s | %.2fx |\n", cell(written).c_str(), c / lo(written));
    std::printf("| read from disk, pages cached (%lld tokens) | %s | %.1fx |\n", static_cast<long long>(cached_warm),
                cell(warm).c_str(), c / lo(warm));
    std::printf("| read from disk, pages dropped (%lld tokens) | %s | %.1fx |\n",
                static_cast<long long>(cached_dropped), cell(dropped).c_str(), c / lo(dropped));
    std::printf("disk: %lld bytes for %d blocks of 16 positions\n", static_cast<long long>(bytes), P / 16);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
