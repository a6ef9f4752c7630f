// Batch benchmark (not a test): the scheduler on one model file.
//  1. Aggregate decode tok/s at 1, 2, 4, 8, 16 concurrent sessions, each with
//     its own prompt of P random tokens and G generated tokens, all submitted
//     at once: decode rows forwarded in decode-only steps over those steps'
//     wall time (llama-batched-bench's S_TG counts the same way), plus the
//     whole run's generated tokens over its wall time.
//  2. TTFT of a request sharing an S-token system prompt with an earlier one,
//     without and with the prefix cache.
// usage: bench_batch_bench MODEL [SESSIONS=1,2,4,8,16] [P=128] [G=32] [S=1000] [KV_DTYPE=f32]
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/timer.h"
#include "format/model_source.h"
#include "model/model.h"
#include "runtime/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace og;

std::vector<int32_t> random_tokens(int n, int32_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
  return t;
}

std::unique_ptr<Scheduler> make_scheduler(const Model& m, Engine& e, const Tokenizer& tok, int sessions,
                                          int64_t session_tokens, int prefix_entries, KvDType dtype) {
  KvPolicy p;
  p.max_capacity = session_tokens;
  p.initial_capacity = std::min<int64_t>(512, session_tokens);
  p.max_write = 512;
  p.dtype = dtype;
  p.max_sequences = sessions + prefix_entries;
  SchedulerOptions o;
  o.max_decode_sequences = sessions;
  o.step_tokens = std::max(512, sessions);
  o.max_session_tokens = session_tokens;
  o.prefix_cache_entries = prefix_entries;
  return std::make_unique<Scheduler>(e, tok, make_kv_cache(KvKind::kBatchedCell, m.kv_geometry(), p), o);
}

RequestOptions request(std::vector<int32_t> prompt, int64_t gen) {
  RequestOptions r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = gen;
  return r;
}

void aggregate(const Model& m, Engine& e, const Tokenizer& tok, const std::vector<int>& sessions, int P, int G,
               KvDType dtype) {
  std::printf("| sessions | aggregate decode tok/s (decode-only steps) | generated tok/s (whole run) | mean rows/step |\n");
  std::printf("|---|---|---|---|\n");
  for (int n : sessions) {
    auto sched = make_scheduler(m, e, tok, n, P + G, 0, dtype);
    for (int i = 0; i < n; ++i) sched->submit(request(random_tokens(P, m.n_vocab(), 100 + i), G), {});
    Timer t;
    sched->run_until_idle();
    const double wall = t.seconds();
    const SchedulerSnapshot s = sched->snapshot();
    const double agg = s.step_s_decode_only > 0 ? s.rows_decode_only / s.step_s_decode_only : 0.0;
    std::printf("| %d | %.1f | %.1f | %.1f |\n", n, agg, s.generated_tokens / wall,
                s.steps ? double(s.rows) / s.steps : 0.0);
    std::fflush(stdout);
  }
}

void ttft(const Model& m, Engine& e, const Tokenizer& tok, int S, KvDType dtype) {
  const std::vector<int32_t> system = random_tokens(S, m.n_vocab(), 7);
  auto with = [&](uint32_t seed) {
    std::vector<int32_t> p = system;
    const std::vector<int32_t> q = random_tokens(16, m.n_vocab(), seed);
    p.insert(p.end(), q.begin(), q.end());
    return p;
  };
  std::printf("\n| prefix cache | TTFT of the 2nd request sharing a %d-token system prompt | reused tokens |\n", S);
  std::printf("|---|---|---|\n");
  for (int entries : {0, 2}) {
    auto sched = make_scheduler(m, e, tok, 1, S + 64, entries, dtype);
    sched->submit(request(with(1), 4), {});
    sched->run_until_idle();
    RequestReport rep;
    RequestCallbacks cb;
    cb.on_finish = [&](const RequestReport& r) { rep = r; };
    sched->submit(request(with(2), 4), cb);
    sched->run_until_idle();
    std::printf("| %s | %.1f ms | %lld |\n", entries ? "on" : "off", rep.ttft_s * 1e3,
                static_cast<long long>(rep.cached_tokens));
    std::fflush(stdout);
  }
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) v.push_back(std::atoi(x.c_str()));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [SESSIONS=1,2,4,8,16] [P=128] [G=32] [S=1000] [KV_DTYPE=f32]\n", argv[0]);
    return 2;
  }
  try {
    const std::vector<int> sessions = parse_list(argc > 2 ? argv[2] : "1,2,4,8,16");
    const int P = argc > 3 ? std::atoi(argv[3]) : 128;
    const int G = argc > 4 ? std::atoi(argv[4]) : 32;
    const int S = argc > 5 ? std::atoi(argv[5]) : 1000;
    KvDType dtype = KvDType::F32;
    if (argc > 6 && !kv_dtype_from_name(argv[6], &dtype)) og::fail("unknown KV dtype ", argv[6]);
    const auto src = ModelSource::open(argv[1]);  // the model and its tokenizer from one opening
    auto model = Model::load(*src);
    auto tok = Tokenizer::from_source(*src);
    ModelEngine engine(*model);
    std::printf("model %s, prompts %d tokens, %d generated, KV %s\n\n", argv[1], P, G, kv_dtype_name(dtype));
    aggregate(*model, engine, *tok, sessions, P, G, dtype);
    if (S > 0) ttft(*model, engine, *tok, S, dtype);
  } catch (const og::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
