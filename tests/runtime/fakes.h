// Test doubles for the runtime: a tokenizer with a tiny fixed vocabulary, a
// length-only cache that can play a ring (refusing rewinds into overwritten
// history), and an engine whose next token is scripted from the context.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "kv/kv_cache.h"
#include "runtime/engine.h"
#include "tokenizer/tokenizer.h"

namespace og::test {

// ids: 0 <s>, 1 </s>, 2 <eot> (control), then text pieces.
enum : int32_t { kBos = 0, kEos = 1, kEot = 2, kX = 3, kY, kZ, kSt, kOp, kSpace, kEuro1, kEuro2, kA, kB, kVocab };

class FakeTokenizer : public Tokenizer {
 public:
  FakeTokenizer() {
    pieces_ = {"<s>", "</s>", "<eot>", "x", "y", "z", "ST", "OP", " ", "\xE2\x82", "\xAC", "a", "b"};
    special_.bos = kBos;
    special_.eos = kEos;
    special_.eot = kEot;
    special_.stop_ids = {kEos, kEot};
  }
  std::vector<int32_t> encode(std::string_view, bool, bool) const override { return {}; }
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string s;
    for (int32_t id : ids)
      if (!skip_special || token_type(id) != TokenType::kControl) s += pieces_[id];
    return s;
  }
  std::string token_bytes(int32_t id) const override { return pieces_[id]; }
  bool strips_leading_space() const override { return false; }
  int32_t n_vocab() const override { return kVocab; }
  const std::string& piece(int32_t id) const override { return pieces_[id]; }
  TokenType token_type(int32_t id) const override { return id <= kEot ? TokenType::kControl : TokenType::kNormal; }
  std::optional<int32_t> find_piece(std::string_view p) const override {
    for (size_t i = 0; i < pieces_.size(); ++i)
      if (pieces_[i] == p) return static_cast<int32_t>(i);
    return std::nullopt;
  }
  const SpecialTokens& special() const override { return special_; }
  std::string kind() const override { return "fake"; }

 private:
  std::vector<std::string> pieces_;
  SpecialTokens special_;
};

// Tracks only lengths. ring_window > 0 plays a ring of ring_window + max_write - 1
// slots: a rewind to L needs positions [L - ring_window, L) still held.
class FakeCache : public KvCache {
 public:
  FakeCache(int64_t capacity, int64_t max_write, int ring_window = 0) : ring_window_(ring_window) {
    policy_.max_capacity = capacity;
    policy_.max_write = max_write;
    geometry_.caches = {KvCacheSpec{1, 4, 4, ring_window}};
    geometry_.layer_cache = {0};
    geometry_.layer_writes = {true};
  }
  const KvGeometry& geometry() const override { return geometry_; }
  const KvPolicy& policy() const override { return policy_; }
  KvResult begin_step(std::span<const KvRow> rows) override {
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].seq != 0 || rows[i].pos != len_ + static_cast<int64_t>(i)) return fail(KvStatus::kInvalid);
    if (static_cast<int64_t>(rows.size()) > policy_.max_write) return fail(KvStatus::kWriteTooLong);
    if (len_ + static_cast<int64_t>(rows.size()) > policy_.max_capacity) return fail(KvStatus::kCapacityExceeded);
    step_ = static_cast<int64_t>(rows.size());
    return {};
  }
  void update_and_attend(int, std::span<const KvRow>, const float*, int, const float*, const float*, float,
                         float*, const float* = nullptr) override {}
  void end_step() override {
    len_ += step_;
    high_ = std::max(high_, len_);
    step_ = 0;
  }
  void abort_step() override { step_ = 0; }
  KvResult add_sequence(int) override { return fail(KvStatus::kInvalid); }
  KvResult remove_sequence(int) override { return fail(KvStatus::kInvalid); }
  KvResult can_extend(int, int64_t n) const override {
    return len_ + n <= policy_.max_capacity ? KvResult{} : fail(KvStatus::kCapacityExceeded);
  }
  KvResult rewind(int seq, int64_t n) override {
    if (seq != 0 || n < 0 || n > len_) return fail(KvStatus::kInvalid);
    if (ring_window_ > 0) {
      // The ring holds the last `slots` positions written, counting the highest
      // position ever written since the last clear (later positions overwrote slots).
      const int64_t slots = ring_window_ + policy_.max_write - 1;
      const int64_t begin = std::max<int64_t>(0, high_ - slots);
      const int64_t need = std::max<int64_t>(0, len_ - n - ring_window_);
      if (need < begin) {
        KvResult r = fail(KvStatus::kHistoryUnavailable);
        r.history_begin = begin;
        return r;
      }
    }
    len_ -= n;
    ++rewinds;
    return {};
  }
  KvResult clear(int) override {
    len_ = high_ = 0;
    ++clears;
    return {};
  }
  KvResult fork(int, int, int64_t) override { return fail(KvStatus::kInvalid); }
  void release_unused() override {}
  int64_t length(int seq) const override { return seq == 0 ? len_ : -1; }
  KvMemory memory() const override { return {}; }
  std::string describe() const override { return "[cache] fake"; }

  int rewinds = 0, clears = 0;

 private:
  static KvResult fail(KvStatus s) {
    KvResult r;
    r.status = s;
    r.message = "fake refusal";
    return r;
  }
  KvGeometry geometry_;
  KvPolicy policy_;
  int ring_window_;
  int64_t len_ = 0, high_ = 0, step_ = 0;
};

// next(context) -> the token the logits favour; context = tokens at positions [0, pos].
class FakeEngine : public Engine {
 public:
  using Script = std::function<int32_t(const std::vector<int32_t>& context)>;
  explicit FakeEngine(Script next) : next_(std::move(next)) {}
  int32_t n_vocab() const override { return kVocab; }
  KvGeometry kv_geometry() const override { return {}; }
  KvResult forward(const Batch& batch, KvCache& cache, std::vector<float>& logits) override {
    std::vector<KvRow> rows;
    for (const auto& r : batch.rows) rows.push_back({r.seq, r.pos});
    KvResult kr = cache.begin_step(rows);
    if (!kr.ok()) return kr;
    if (throw_at_call >= 0 && calls == throw_at_call) {
      cache.abort_step();
      ++calls;
      throw Error("fake forward failure");
    }
    ++calls;
    batch_sizes.push_back(static_cast<int>(batch.rows.size()));
    logits.clear();
    for (const auto& r : batch.rows) {
      if (static_cast<int64_t>(tokens_.size()) <= r.pos) tokens_.resize(r.pos + 1);
      tokens_[r.pos] = r.token;
      if (!r.want_logits) continue;
      ++logit_rows;
      std::vector<int32_t> ctx(tokens_.begin(), tokens_.begin() + r.pos + 1);
      std::vector<float> row(kVocab, 0.0f);
      row[next_(ctx)] = 10.0f;
      if (nan_at_call == calls - 1) row[kY] = std::numeric_limits<float>::quiet_NaN();
      logits.insert(logits.end(), row.begin(), row.end());
    }
    cache.end_step();
    return {};
  }

  int calls = 0, logit_rows = 0, throw_at_call = -1;
  int nan_at_call = -1;  // that call's logits hold a NaN (as corrupt weights give)
  std::vector<int> batch_sizes;

 private:
  Script next_;
  std::vector<int32_t> tokens_;  // what was written at each position
};

}  // namespace og::test
