// Engine: the forward pass as the runtime drives it. ModelEngine adapts an
// og::Model; tests substitute a fake whose logits are scripted.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"
#include "base/sha256.h"
#include "model/model.h"
#include "runtime/model_fingerprint.h"

namespace og {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual int32_t n_vocab() const = 0;
  virtual KvGeometry kv_geometry() const = 0;
  // Same contract as Model::forward: logits [n_rows_wanting_logits, n_vocab];
  // a cache refusal is returned with nothing changed.
  virtual KvResult forward(const Batch& batch, KvCache& cache, std::vector<float>& logits) = 0;
  // What identifies the weights to the prefix cache's disk tier (computed
  // only when it is on); engines without a model file (tests' fakes): zeros.
  virtual Sha256Digest model_fingerprint() const { return {}; }
};

class ModelEngine : public Engine {
 public:
  explicit ModelEngine(const Model& model) : model_(model) {}
  int32_t n_vocab() const override { return model_.n_vocab(); }
  KvGeometry kv_geometry() const override { return model_.kv_geometry(); }
  KvResult forward(const Batch& batch, KvCache& cache, std::vector<float>& logits) override {
    return model_.forward(batch, cache, logits);
  }
  Sha256Digest model_fingerprint() const override { return og::model_fingerprint(model_.source_path()); }

 private:
  const Model& model_;
};

}  // namespace og
