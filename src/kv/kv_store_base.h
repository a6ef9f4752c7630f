// StoreCacheBase: what the storing kinds (sequence, batched-sequence,
// batched-cell) share: the step protocol and the update_and_attend driver
// (write rows, then attend each (row, KV head) over spans of stored rows,
// in parallel on the thread pool when the work is large, long histories split
// into position ranges whose partial softmax states are merged).
#pragma once

#include <vector>

#include "base/error.h"
#include "kv/kv_attend.h"
#include "kv/kv_cache.h"
#include "kv/kv_common.h"

namespace og::kv {

class StoreCacheBase : public KvCache {
 public:
  StoreCacheBase(const KvGeometry& g, const KvPolicy& p, const char* kind);

  const KvGeometry& geometry() const override { return geo_; }
  const KvPolicy& policy() const override { return res_.policy; }
  KvResult begin_step(std::span<const KvRow> rows) override;
  void update_and_attend(int cache_id, std::span<const KvRow> rows, const float* q, int n_heads, const float* k,
                         const float* v, float scale, float* out, const float* sinks = nullptr) override;
  void end_step() override;
  void abort_step() override;
  std::string describe() const override { return describe_text(kind_, geo_, res_); }
  KvResult export_positions(int seq, int64_t begin, int64_t end, std::vector<uint8_t>* out) const override;
  KvResult import_positions(int seq, std::span<const uint8_t> data) override;

 protected:
  // Where one position lives: head h's V row at v + h * v_head_stride, its
  // K row at k + h * k_head_stride, or (k_lane >= 0, K in blocks: KvSpan)
  // lane k_lane of the block at k + h * k_head_stride.
  struct RowSlot {
    uint8_t* k = nullptr;
    uint8_t* v = nullptr;
    int64_t k_head_stride = 0, v_head_stride = 0;
    int k_lane = -1;
  };
  // Kind-specific checks and reservation after the common ones; changes
  // nothing observable on refusal.
  virtual KvResult reserve_step(const std::vector<SeqStep>& plan) = 0;
  virtual void commit_step(const std::vector<SeqStep>& plan) = 0;
  // Slot for writing `pos` (reserved by reserve_step); records the position.
  virtual RowSlot write_slot(int c, int seq, int64_t pos) = 0;
  // Head-0 spans covering positions [lo, hi] (any order), and the head strides.
  virtual void read_spans(int c, int seq, int64_t lo, int64_t hi, std::vector<KvSpan>* out, int64_t* k_head_stride,
                          int64_t* v_head_stride) const = 0;

  // The oldest position of `seq` that ring cache `c` still holds (its
  // length when it holds none); 0 for a flat cache.
  virtual int64_t held_from(int c, int seq) const = 0;

  // Attends each (row, KV head) over the stored history (after the write),
  // split into position ranges across the pool when there are few tasks.
  void attend_rows(int cache_id, std::span<const KvRow> rows, const float* q, int n_heads, float scale,
                   float* out, const float* sinks) const;

  static KvResult unknown(int seq) {
    return refuse(KvStatus::kUnknownSequence, cat("kv cache: unknown sequence ", seq));
  }
  KvResult check_capacity(int seq, int64_t n) const;

  KvGeometry geo_;
  Resolved res_;
  StepState step_;
  const char* kind_;
};

}  // namespace og::kv
