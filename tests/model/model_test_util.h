// Helpers shared by the model tests: greedy decoding through Model::forward,
// argmax, relative error, temp directories, and an in-memory TensorSource.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/tensor_source.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "temp_dir.h"

namespace og::test {

inline int32_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return static_cast<int32_t>(best);
}

// Feeds `prompt` in one step, then greedy-decodes one token per step until
// `total` ids are held; returns all ids (prompt included).
inline std::vector<int32_t> greedy(const Model& m, KvCache& cache, const std::vector<int32_t>& prompt, size_t total) {
  std::vector<int32_t> ids = prompt;
  std::vector<float> logits;
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.rows.push_back({prompt[i], 0, static_cast<int64_t>(i), false});
  b.want_last_logits_per_sequence();
  while (true) {
    const KvResult r = m.forward(b, cache, logits);
    if (!r.ok()) throw Error("forward refused: " + r.message);
    if (ids.size() >= total) break;
    ids.push_back(argmax(logits.data(), m.n_vocab()));
    if (ids.size() >= total) break;
    b.rows = {{ids.back(), 0, static_cast<int64_t>(ids.size() - 1), true}};
  }
  return ids;
}

// Largest |a - b| over max |b|. Vectors of different lengths (a forward that
// returned fewer logits rows) or with nothing to compare are infinitely far
// apart, so a test bound on this can never pass by comparing a prefix; so is
// a NaN on either side (std::max would skip it).
inline double max_rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double max_ab = 0, max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    max_ab = std::max(max_ab, static_cast<double>(std::fabs(b[i])));
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return max_ab == 0 ? max_diff : max_diff / max_ab;
}

// Named f32 tensors held in memory.
class MemorySource : public TensorSource {
 public:
  void add(const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
    data_.push_back(std::move(values));
    TensorInfo t;
    t.name = name;
    t.type_id = 0;
    t.type_name = "f32";
    t.known_type = true;
    t.shape = std::move(shape);
    t.data = reinterpret_cast<const uint8_t*>(data_.back().data());
    t.nbytes = data_.back().size() * sizeof(float);
    infos_.push_back(t);
  }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  const TensorInfo* find(std::string_view name) const override {
    for (const TensorInfo& t : infos_)
      if (t.name == name) return &t;
    return nullptr;
  }
  std::string source_name() const override { return "memory"; }

 private:
  std::vector<std::vector<float>> data_;  // std::vector<float> buffers do not move when the outer vector grows
  std::vector<TensorInfo> infos_;
};

}  // namespace og::test
