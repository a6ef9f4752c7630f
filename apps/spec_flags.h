// Speculative decoding's flags (run, chat, batch, serve and bench; llama.cpp's names for the draft
// model's) and the proposer they build: --spec ngram (prompt lookup) or
// --model-draft PATH (a small model with the target's tokenizer). See
// docs/speculative.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/run_builder.h"
#include "base/flags.h"
#include "runtime/engine.h"
#include "runtime/scheduler.h"
#include "runtime/spec/proposer.h"
#include "runtime/stats.h"

namespace og::app {

struct SpecFlags {
  std::string spec = "none";  // --spec none|ngram|draft (draft: implied by --model-draft)
  int64_t ngram_size = 3;     // --spec-ngram-size: longest n-gram prompt lookup matches
  int64_t ngram_min = 1;      // --spec-ngram-min: shortest
  std::string model_draft;    // --model-draft PATH
  int64_t draft_max = 4;      // --draft-max (docs/performance.md: verify cost jumps past 8 rows)
  int64_t draft_min = 0;      // --draft-min
  double draft_p_min = 0.75;  // --draft-p-min
};

void add_spec_flags(Flags& fl, SpecFlags& s);
// Combinations parse() cannot check (usage errors, exit 2).
void check_spec_flags(const Flags& fl, const SpecFlags& s);

// batch and serve: the scheduler's prompt lookup (a draft model is set by
// SchedulerDraft once the target is loaded). Runs check_spec_flags.
SchedulerSpec scheduler_spec_of(const Flags& fl, const SpecFlags& s);

// batch and serve's draft model: loaded and checked against the target's
// tokenizer (og::Error on a mismatch), with its own engine and a batched cache
// of the target's kind and dtype holding so.max_decode_sequences sequences of
// so.max_session_tokens; apply() points so.spec at them. Must outlive the
// scheduler.
class SchedulerDraft {
 public:
  SchedulerDraft(const SpecFlags& f, const Run& target, const SchedulerOptions& so);
  ~SchedulerDraft();
  void apply(SchedulerOptions* so) const;
  const std::string& describe() const { return describe_; }

 private:
  SpecFlags f_;
  LoadedModel draft_;
  std::unique_ptr<ModelEngine> engine_;
  std::unique_ptr<KvCache> cache_;
  std::string describe_;
};

// Null without --model-draft.
std::unique_ptr<SchedulerDraft> make_scheduler_draft(const SpecFlags& f, const Run& target, const SchedulerOptions& so);

// A run's proposer: prompt lookup, or the draft model with its own engine and
// cache (its tokenizer checked against the target's: og::Error on a mismatch).
class SpecRun {
 public:
  SpecRun(const SpecFlags& f, const Run& target);
  ~SpecRun();
  SpecOptions options() const;
  const std::string& describe() const { return describe_; }  // "[spec] ..." line

 private:
  SpecFlags f_;
  LoadedModel draft_;
  std::unique_ptr<ModelEngine> engine_;
  std::unique_ptr<SpecProposer> proposer_;
  std::string describe_;
};

// Null when no speculation was asked for.
std::unique_ptr<SpecRun> make_spec_run(const SpecFlags& f, const Run& target);

// "[spec] ngram: 120/300 draft tokens accepted (40.0 %), 2.31 tokens per target forward" or "".
std::string spec_report_line(const Stats& st);

}  // namespace og::app
