// Speculative decoding's options and counters in the C API (c_api_spec.h).
#include "api/c_api_spec.h"

#include "runtime/spec/draft_model.h"
#include "runtime/spec/ngram.h"

namespace og::capi {

void check_spec_fields(const SpecFields& f) {
  if (f.ngram_size < 0 || f.ngram_size > 16)
    api_fail(OG_ERR_INVALID_ARGUMENT, "spec_ngram_size ", f.ngram_size, " is outside [0, 16] (0 = off)");
  if (f.ngram_size > 0 && f.draft_model)
    api_fail(OG_ERR_INVALID_ARGUMENT, "spec_ngram_size ", f.ngram_size,
             " and draft_model are two proposers: give one (spec_ngram_size 0 with a draft model)");
  if (!f.on()) return;
  if (f.ngram_size > 0 && (f.ngram_min < 1 || f.ngram_min > f.ngram_size))
    api_fail(OG_ERR_INVALID_ARGUMENT, "spec_ngram_min ", f.ngram_min, " is outside [1, spec_ngram_size ",
             f.ngram_size, "]");
  if (f.draft_max < 1 || f.draft_max > 256)
    api_fail(OG_ERR_INVALID_ARGUMENT, "spec_draft_max ", f.draft_max, " is outside [1, 256]");
  if (f.draft_min < 0 || f.draft_min > f.draft_max)
    api_fail(OG_ERR_INVALID_ARGUMENT, "spec_draft_min ", f.draft_min, " is outside [0, spec_draft_max ", f.draft_max,
             "]");
  if (f.draft_model && !(f.draft_p_min >= 0 && f.draft_p_min <= 1))
    api_fail(OG_ERR_INVALID_ARGUMENT, "spec_draft_p_min ", f.draft_p_min, " is outside [0, 1]");
}

std::shared_ptr<ModelCore> draft_core_of(og_model* draft, const ModelCore& target) {
  std::shared_ptr<ModelCore> dc;
  try {
    dc = model_core(draft);
  } catch (const ApiError& e) {
    api_fail(e.status(), "draft_model: ", e.what());
  }
  try {
    need_generating(*dc);
    check_same_vocabulary(target.tok(), dc->tok());
  } catch (const Error& e) {
    api_fail(OG_ERR_INVALID_ARGUMENT, "draft_model: ", e.what());
  }
  if (dc->run.model().n_vocab() > target.run.model().n_vocab())
    api_fail(OG_ERR_INVALID_ARGUMENT, "draft_model: the draft model has ", dc->run.model().n_vocab(),
             " output rows but the target has ", target.run.model().n_vocab());
  return dc;
}

void write_spec_stats(const SpecCounts& c, og_spec_stats* out) {
  need(out, "out");
  const size_t n = out->struct_size;
  if (n == 0 || n > sizeof(og_spec_stats))
    api_fail(OG_ERR_INVALID_ARGUMENT, "og_spec_stats.struct_size ", n, " is not in [1, ", sizeof(og_spec_stats),
             "]: set it to sizeof(og_spec_stats)");
  og_spec_stats o{};
  o.struct_size = n;
  o.drafts = c.drafts;
  o.draft_tokens = c.draft_tokens;
  o.accepted_tokens = c.accepted_tokens;
  o.pauses = c.pauses;
  for (size_t i = 0; i < c.accepted_per_pos.size(); ++i)
    (i < OG_SPEC_POSITIONS ? o.accepted_per_pos[i] : o.accepted_beyond) += c.accepted_per_pos[i];
  std::memcpy(static_cast<void*>(out), &o, n);  // a caller's older, shorter struct gets its own fields only
}

namespace {

// Passes everything to the proposer it wraps, counting each verify step.
class CountingProposer : public SpecProposer {
 public:
  CountingProposer(std::unique_ptr<SpecProposer> inner, SpecCounts* counts)
      : inner_(std::move(inner)), counts_(counts) {}
  Draft propose(std::span<const int32_t> history, int64_t max_tokens) override {
    return inner_->propose(history, max_tokens);
  }
  void verified(int64_t proposed, int64_t accepted) override {
    ++counts_->drafts;
    counts_->draft_tokens += proposed;
    counts_->accepted_tokens += accepted;
    if (counts_->accepted_per_pos.size() < static_cast<size_t>(accepted)) counts_->accepted_per_pos.resize(accepted);
    for (int64_t i = 0; i < accepted; ++i) ++counts_->accepted_per_pos[i];
    inner_->verified(proposed, accepted);
  }
  std::string name() const override { return inner_->name(); }

 private:
  std::unique_ptr<SpecProposer> inner_;
  SpecCounts* counts_;
};

}  // namespace

class SessionSpec {
 public:
  SessionSpec(const SpecFields& f, std::shared_ptr<ModelCore> draft, const CacheSetup& setup, const KvPolicy& policy)
      : f_(f), draft_(std::move(draft)), setup_(setup), policy_(policy) {
    std::unique_ptr<SpecProposer> inner;
    if (draft_) {
      // The session's kind, dtype and capacity; the draft model's own windows.
      CacheSetup cs = setup_;
      cs.max_capacity = policy_.max_capacity;
      cs.windows.clear();
      KvPolicy p;
      try {
        p = kv_policy_of(cs, draft_->run.model());
      } catch (const Error& e) {
        api_fail(OG_ERR_INVALID_ARGUMENT, "draft_model: ", e.what());
      }
      inner = std::make_unique<DraftModelProposer>(
          *draft_->engine,
          cache_of(cs, draft_->run.model(), p, "og_session_options.kv_max_capacity (the draft model's cache)"),
          draft_->tok(), f_.draft_p_min);
    } else {
      inner = std::make_unique<NgramProposer>(f_.ngram_size, f_.ngram_min);
    }
    proposer_ = std::make_unique<CountingProposer>(std::move(inner), &counts_);
  }

  std::shared_ptr<SessionSpec> copy() const { return std::make_shared<SessionSpec>(f_, draft_, setup_, policy_); }
  void apply(GenerateOptions& g) {
    g.spec.proposer = proposer_.get();
    g.spec.draft_max = f_.draft_max;
    g.spec.draft_min = f_.draft_min;
  }
  const SpecCounts& counts() const { return counts_; }

 private:
  SpecFields f_;
  std::shared_ptr<ModelCore> draft_;  // keeps the draft's weights alive
  CacheSetup setup_;
  KvPolicy policy_;
  SpecCounts counts_;
  std::unique_ptr<SpecProposer> proposer_;
};

std::shared_ptr<SessionSpec> session_spec_of(const SpecFields& f, const ModelCore& target, const CacheSetup& setup,
                                             const KvPolicy& policy) {
  check_spec_fields(f);
  if (!f.on()) return nullptr;
  std::shared_ptr<ModelCore> draft;
  if (f.draft_model) draft = draft_core_of(f.draft_model, target);
  return std::make_shared<SessionSpec>(f, std::move(draft), setup, policy);
}

std::shared_ptr<SessionSpec> session_spec_copy(const SessionSpec& s) { return s.copy(); }
void apply_session_spec(SessionSpec& s, GenerateOptions& g) { s.apply(g); }
const SpecCounts& session_spec_counts(const SessionSpec& s) { return s.counts(); }

}  // namespace og::capi
