// offgraph bench's measurements (bench.h).
#include "runtime/bench.h"

#include <algorithm>
#include <random>
#include <vector>

#include "base/error.h"
#include "base/timer.h"
#include "model/moe.h"

namespace og {

namespace {

void check(const KvResult& r, const char* what) { OG_CHECK(r.ok(), "bench: ", what, ": ", r.message); }

std::unique_ptr<KvCache> bench_cache(const Model& model, const BenchCacheOptions& o, int64_t positions,
                                     int n_seqs) {
  OG_CHECK(o.kind == KvKind::kBatchedSequence || o.kind == KvKind::kBatchedCell,
           "bench: the cache kind must be batched-sequence or batched-cell");
  KvPolicy p;
  p.max_capacity = std::max<int64_t>(positions, 1);
  p.initial_capacity = p.max_capacity;  // no growth inside a timed region
  p.dtype = o.dtype;
  p.max_write = std::max<int64_t>(1, o.prefill_chunk);
  p.max_sequences = std::max(1, n_seqs);  // batched-cell: a pool for all of them
  std::unique_ptr<KvCache> c = make_kv_cache(o.kind, model.kv_geometry(), p);
  if (c->length(0) < 0) check(c->add_sequence(0), "add_sequence");  // kinds that start without sequence 0
  return c;
}

// Appends n tokens of `seq` from position `pos` in steps of at most `chunk` rows.
void prefill(const Model& model, KvCache& cache, int seq, int64_t pos, const std::vector<int32_t>& tokens,
             int64_t chunk, std::vector<float>& logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t i = 0; i < n; i += chunk) {
    Batch b;
    for (int64_t j = i; j < std::min(n, i + chunk); ++j) b.rows.push_back({tokens[j], seq, pos + j, false});
    b.rows.back().want_logits = true;
    check(model.forward(b, cache, logits), "prefill");
  }
}

std::vector<int32_t> random_tokens(int64_t n, int32_t n_vocab, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> d(0, n_vocab - 1);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& t : v) t = d(rng);
  return v;
}

}  // namespace

double bench_prefill_seconds(const Model& model, const BenchCacheOptions& o, int64_t depth, int64_t n_prompt,
                             uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto cache = bench_cache(model, o, depth + n_prompt, 1);
  std::vector<float> logits;
  prefill(model, *cache, 0, 0, random_tokens(depth, model.n_vocab(), rng), o.prefill_chunk, logits);
  const std::vector<int32_t> prompt = random_tokens(n_prompt, model.n_vocab(), rng);
  Timer t;
  prefill(model, *cache, 0, depth, prompt, o.prefill_chunk, logits);
  return t.seconds();
}

double bench_decode_seconds(const Model& model, const BenchCacheOptions& o, int64_t depth, int64_t n_gen,
                            int n_seqs, uint64_t seed, int64_t* expert_bytes) {
  OG_CHECK(n_seqs >= 1, "bench: decode needs at least one sequence");
  std::mt19937_64 rng(seed);
  auto cache = bench_cache(model, o, depth + n_gen, n_seqs);
  std::vector<float> logits;
  prefill(model, *cache, 0, 0, random_tokens(depth, model.n_vocab(), rng), o.prefill_chunk, logits);
  for (int s = 1; s < n_seqs; ++s) check(cache->fork(0, s, depth), "fork");
  std::vector<int32_t> next = random_tokens(n_seqs, model.n_vocab(), rng);
  Batch b;
  b.rows.resize(static_cast<size_t>(n_seqs));
  const int64_t n_vocab = model.n_vocab();
  int64_t argmax_sum = 0;
  const int64_t experts_before = moe_expert_bytes_read();  // forward runs the layers on this thread
  Timer t;
  for (int64_t step = 0; step < n_gen; ++step) {
    if (o.interrupt && o.interrupt->load(std::memory_order_relaxed)) break;
    for (int s = 0; s < n_seqs; ++s) b.rows[s] = {next[s], s, depth + step, true};
    check(model.forward(b, *cache, logits), "decode");
    // Greedy sampling's cost (each row's argmax), but random next tokens, as
    // llama-bench and llama-batched-bench feed: greedy continuations of one
    // forked prefix soon agree, and a mixture of experts then routes every
    // row to the same experts (8 such sequences of a Qwen3-30B-A3B shape
    // read 8 experts a layer instead of ~52 and ran 1.75x faster).
    for (int s = 0; s < n_seqs; ++s) {
      const float* l = logits.data() + s * n_vocab;
      argmax_sum += std::max_element(l, l + n_vocab) - l;
      next[s] = static_cast<int32_t>(rng() % static_cast<uint64_t>(n_vocab));
    }
  }
  const double seconds = t.seconds();
  if (expert_bytes) *expert_bytes = moe_expert_bytes_read() - experts_before;
  volatile int64_t sink = argmax_sum;
  (void)sink;
  return seconds;
}

double bench_verify_seconds(const Model& model, const BenchCacheOptions& o, int64_t depth, int64_t n_steps,
                            int64_t k, uint64_t seed) {
  OG_CHECK(k >= 0, "bench: a verify step needs k >= 0");
  BenchCacheOptions vo = o;
  vo.prefill_chunk = std::max<int64_t>(o.prefill_chunk, k + 1);  // the k + 1 rows are one write
  std::mt19937_64 rng(seed);
  auto cache = bench_cache(model, vo, depth + n_steps + k + 1, 1);
  std::vector<float> logits;
  prefill(model, *cache, 0, 0, random_tokens(depth, model.n_vocab(), rng), o.prefill_chunk, logits);
  const int64_t n_vocab = model.n_vocab();
  int64_t argmax_sum = 0;
  Batch b;
  Timer t;
  for (int64_t step = 0; step < n_steps; ++step) {
    if (o.interrupt && o.interrupt->load(std::memory_order_relaxed)) break;
    const std::vector<int32_t> rows = random_tokens(k + 1, model.n_vocab(), rng);
    b.rows.clear();
    for (int64_t i = 0; i <= k; ++i) b.rows.push_back({rows[i], 0, depth + step + i, true});
    check(model.forward(b, *cache, logits), "verify");
    for (int64_t i = 0; i <= k; ++i) {  // the verifier's argmax of every row
      const float* l = logits.data() + i * n_vocab;
      argmax_sum += std::max_element(l, l + n_vocab) - l;
    }
    if (k > 0) check(cache->rewind(0, k), "rewind");
  }
  const double seconds = t.seconds();
  volatile int64_t sink = argmax_sum;
  (void)sink;
  return seconds;
}

int64_t kv_bytes_read(const KvGeometry& g, KvDType dtype, int64_t positions) {
  double per_elem = 4;
  if (dtype == KvDType::F16 || dtype == KvDType::BF16) per_elem = 2;
  if (dtype == KvDType::Q8_0) per_elem = 34.0 / 32.0;
  double total = 0;
  for (int cache_id : g.layer_cache) {
    const KvCacheSpec& c = g.caches[static_cast<size_t>(cache_id)];
    const int64_t seen = c.window > 0 ? std::min<int64_t>(positions, c.window) : positions;
    total += static_cast<double>(seen) * c.n_kv_heads * (c.head_dim_k + c.head_dim_v) * per_elem;
  }
  return static_cast<int64_t>(total);
}

}  // namespace og
