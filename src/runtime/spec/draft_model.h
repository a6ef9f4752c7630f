// A draft model proposer (llama.cpp's --model-draft): a small model with the
// target's vocabulary, its own engine and cache, drafts greedily. Its cache
// follows the target's history: each proposal rewinds it to the longest
// common prefix with the history and prefills the rest, then decodes up to
// max_tokens tokens one at a time, stopping early when its top token's
// probability falls below p_min (the draft is unlikely to be accepted past it).
// Drafts are point masses (greedy), so sampled verification is exact with q = δ.
#pragma once

#include <memory>

#include "kv/kv_cache.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "runtime/spec/proposer.h"
#include "tokenizer/tokenizer.h"

namespace og {

// og::Error naming the first difference when the draft's vocabulary is not
// the target's (size, a token's text or type, BOS / EOS): a draft speaks in
// the target's token ids, so any difference would silently propose garbage.
void check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft);

class DraftModelProposer : public SpecProposer {
 public:
  // `engine` and `tok` must outlive the proposer; `cache` is the draft's own.
  DraftModelProposer(Engine& engine, std::unique_ptr<KvCache> cache, const Tokenizer& tok, double p_min);
  // Over sequence `seq` of a draft cache that many proposers share (the
  // scheduler's: one per session slot), which must exist and be empty; the
  // cache must outlive the proposer.
  DraftModelProposer(Engine& engine, KvCache& shared, int seq, const Tokenizer& tok, double p_min);
  Draft propose(std::span<const int32_t> history, int64_t max_tokens) override;
  std::string name() const override { return "draft"; }
  const Session& session() const { return session_; }

 private:
  // Brings the draft's cache to `history` with the last row's logits.
  void sync(std::span<const int32_t> history);

  Session session_;
  double p_min_;
};

}  // namespace og
