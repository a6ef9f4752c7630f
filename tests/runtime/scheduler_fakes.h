// Test doubles for the scheduler: an engine that serves many sequences at
// once with scripted logits (the next token is a function of the row's token
// and position only, so that it needs no history a prefix fork would hide),
// and a tiny real geometry for the batched cache kinds.
#pragma once

#include <functional>
#include <vector>

#include "fakes.h"
#include "kv/kv_cache.h"
#include "runtime/engine.h"

namespace og::test {

class SeqFakeEngine : public Engine {
 public:
  using Script = std::function<int32_t(int32_t token, int64_t pos)>;
  explicit SeqFakeEngine(Script next) : next_(std::move(next)) {}
  int32_t n_vocab() const override { return kVocab; }
  KvGeometry kv_geometry() const override { return tiny_geometry(); }
  KvResult forward(const Batch& batch, KvCache& cache, std::vector<float>& logits) override {
    std::vector<KvRow> rows;
    for (const auto& r : batch.rows) rows.push_back({r.seq, r.pos});
    KvResult kr = cache.begin_step(rows);
    if (!kr.ok()) return kr;
    ++calls;
    if (throw_at_call >= 0 && calls - 1 == throw_at_call) {
      cache.abort_step();
      throw Error("fake forward failure");
    }
    batch_sizes.push_back(static_cast<int>(batch.rows.size()));
    // Real cache kinds expect every cache written once per step.
    const std::vector<float> zeros(rows.size() * 4, 0.0f);
    std::vector<float> out(rows.size() * 4);
    cache.update_and_attend(0, rows, zeros.data(), 1, zeros.data(), zeros.data(), 1.0f, out.data());
    logits.clear();
    for (const auto& r : batch.rows) {
      if (!r.want_logits) continue;
      std::vector<float> row(kVocab, 0.0f);
      row[next_(r.token, r.pos)] = 10.0f;
      logits.insert(logits.end(), row.begin(), row.end());
    }
    cache.end_step();
    return {};
  }
  static KvGeometry tiny_geometry() {
    KvGeometry g;
    g.caches = {KvCacheSpec{1, 4, 4, 0}};
    g.layer_cache = {0};
    g.layer_writes = {true};
    return g;
  }

  int calls = 0, throw_at_call = -1;
  std::vector<int> batch_sizes;

 private:
  Script next_;
};

}  // namespace og::test
