// Speculative decoding's flags and the proposer a run builds from them.
#include "spec_flags.h"

#include <cstdio>

#include "base/error.h"
#include "runtime/spec/draft_model.h"
#include "runtime/spec/ngram.h"
#include "shared_flags.h"

namespace og::app {

void add_spec_flags(Flags& fl, SpecFlags& s) {
  fl.add_choice("spec", &s.spec, {"none", "ngram", "draft"},
                "speculative decoding: ngram = prompt lookup (drafts copied from earlier in the prompt and reply), "
                "draft = a draft model (--model-draft, which implies it); the output is that of plain decoding");
  fl.add_int("spec-ngram-size", &s.ngram_size, 1, 16,
             "prompt lookup: the longest n-gram matched (tried down to --spec-ngram-min)");
  fl.add_int("spec-ngram-min", &s.ngram_min, 1, 16,
             "prompt lookup: the shortest n-gram matched (2 or 3 skip the weak one-token matches)");
  fl.add_string("model-draft", &s.model_draft,
                "a draft model with the same tokenizer (a .gguf file or an HF directory); drafts greedily", "PATH");
  fl.add_alias("--draft-model", "model-draft");
  fl.add_alias("-md", "model-draft");  // llama.cpp's short spelling
  fl.add_int("draft-max", &s.draft_max, 1, 256,
             "most draft tokens per target forward (also at most the prefill chunk - 1)");
  fl.add_alias("--draft", "draft-max");
  fl.add_int("draft-min", &s.draft_min, 0, 256, "a shorter draft is not verified: a plain step instead");
  fl.add_float("draft-p-min", &s.draft_p_min, 0, 1,
               "draft model: stop drafting when its top token's probability is below this");
}

void check_spec_flags(const Flags& fl, const SpecFlags& s) {
  const bool draft = fl.given("model-draft");
  if (draft && s.model_draft.empty()) usage_fail("--model-draft is empty");
  if (s.spec == "ngram" && draft) usage_fail("--spec ngram and --model-draft are two proposers: give one");
  if (s.spec == "draft" && !draft) usage_fail("--spec draft needs --model-draft PATH");
  const bool on = draft || s.spec != "none";
  for (const char* name : {"spec-ngram-size", "spec-ngram-min", "draft-max", "draft-min", "draft-p-min"})
    if (fl.given(name) && !on) usage_fail(cat("--", name, " needs --spec ngram or --model-draft"));
  if ((fl.given("spec-ngram-size") || fl.given("spec-ngram-min")) && draft)
    usage_fail("--spec-ngram-size and --spec-ngram-min are for --spec ngram, not a draft model");
  if (s.ngram_min > s.ngram_size)
    usage_fail(cat("--spec-ngram-min ", s.ngram_min, " is above --spec-ngram-size ", s.ngram_size));
  if (fl.given("draft-p-min") && !draft) usage_fail("--draft-p-min is for a draft model (--model-draft)");
  if (s.draft_min > s.draft_max) usage_fail(cat("--draft-min ", s.draft_min, " is above --draft-max ", s.draft_max));
  if (draft) check_path_exists(s.model_draft, "--model-draft");
}

SchedulerSpec scheduler_spec_of(const Flags& fl, const SpecFlags& s) {
  check_spec_flags(fl, s);
  SchedulerSpec o;
  o.ngram = s.spec == "ngram";
  o.ngram_max = static_cast<int>(s.ngram_size);
  o.ngram_min = static_cast<int>(s.ngram_min);
  o.draft_max = s.draft_max;
  o.draft_min = s.draft_min;
  return o;
}

namespace {

// The draft model, loaded and checked against the target's vocabulary (exit 1 on failure).
LoadedModel load_draft(const SpecFlags& f, const Run& target) {
  ModelSetup ms;
  ms.model = f.model_draft;
  LoadedModel d;
  try {
    d = load_model(ms);
  } catch (const Error& e) {
    fail("--model-draft: ", e.what());
  }
  check_same_vocabulary(target.tokenizer(), *d.tok);
  OG_CHECK(d.model->n_vocab() <= target.model().n_vocab(), "--model-draft: the draft model has ", d.model->n_vocab(),
           " output rows but the target has ", target.model().n_vocab());
  return d;
}

}  // namespace

SchedulerDraft::SchedulerDraft(const SpecFlags& f, const Run& target, const SchedulerOptions& so)
    : f_(f), draft_(load_draft(f, target)) {
  // The target's batched kind, dtype and chunk; a sequence per session slot;
  // the draft model's own windows.
  CacheSetup cs = target.cache;
  cs.max_capacity = so.max_session_tokens;
  cs.windows.clear();
  cs.max_sequences = so.max_decode_sequences;
  const KvPolicy p = kv_policy_of(cs, *draft_.model);
  engine_ = std::make_unique<ModelEngine>(*draft_.model);
  cache_ = make_cache(cs, *draft_.model, p);
  describe_ = cat("[spec] draft model ", f.model_draft, " for every session: drafts up to ", f.draft_max,
                  " tokens, p_min ", f.draft_p_min);
}

SchedulerDraft::~SchedulerDraft() = default;

void SchedulerDraft::apply(SchedulerOptions* so) const {
  so->spec.ngram = false;
  so->spec.draft_engine = engine_.get();
  so->spec.draft_cache = cache_.get();
  so->spec.draft_tok = draft_.tok.get();
  so->spec.draft_p_min = f_.draft_p_min;
}

std::unique_ptr<SchedulerDraft> make_scheduler_draft(const SpecFlags& f, const Run& target,
                                                     const SchedulerOptions& so) {
  if (f.model_draft.empty()) return nullptr;
  return std::make_unique<SchedulerDraft>(f, target, so);
}

SpecRun::SpecRun(const SpecFlags& f, const Run& target) : f_(f) {
  if (f.model_draft.empty()) {
    proposer_ = std::make_unique<NgramProposer>(static_cast<int>(f.ngram_size), static_cast<int>(f.ngram_min));
    describe_ = cat("[spec] prompt lookup: n-grams of ", f.ngram_size, " down to ", f.ngram_min, ", drafts up to ",
                    f.draft_max, " tokens");
    return;
  }
  ModelSetup ms;
  ms.model = f.model_draft;
  try {
    draft_ = load_model(ms);
  } catch (const Error& e) {
    fail("--model-draft: ", e.what());
  }
  check_same_vocabulary(target.tokenizer(), *draft_.tok);
  OG_CHECK(draft_.model->n_vocab() <= target.model().n_vocab(), "--model-draft: the draft model has ",
           draft_.model->n_vocab(), " output rows but the target has ", target.model().n_vocab());
  // The draft's cache: the target's kind, dtype and chunk, as many positions,
  // the draft model's own windows.
  CacheSetup cs = target.cache;
  cs.max_capacity = target.policy.max_capacity;
  cs.windows.clear();
  cs.max_sequences = 1;
  const KvPolicy p = kv_policy_of(cs, *draft_.model);
  engine_ = std::make_unique<ModelEngine>(*draft_.model);
  proposer_ = std::make_unique<DraftModelProposer>(*engine_, make_cache(cs, *draft_.model, p), *draft_.tok,
                                                   f.draft_p_min);
  describe_ = cat("[spec] draft model ", f.model_draft, ": drafts up to ", f.draft_max, " tokens, p_min ",
                  f.draft_p_min);
}

SpecRun::~SpecRun() = default;

SpecOptions SpecRun::options() const {
  SpecOptions o;
  o.proposer = proposer_.get();
  o.draft_max = f_.draft_max;
  o.draft_min = f_.draft_min;
  return o;
}

std::unique_ptr<SpecRun> make_spec_run(const SpecFlags& f, const Run& target) {
  if (f.spec == "none" && f.model_draft.empty()) return nullptr;
  return std::make_unique<SpecRun>(f, target);
}

std::string spec_report_line(const Stats& st) {
  if (st.spec_drafts == 0) return "";
  char buf[256];
  const double per_forward =
      st.decode_steps > 0 ? double(st.decode_steps + st.spec_accepted_tokens) / double(st.decode_steps) : 0.0;
  std::snprintf(buf, sizeof buf,
                "[spec] %lld/%lld draft tokens accepted (%.1f %%) over %lld verify steps, %.2f tokens per target "
                "forward, %.1f ms proposing\n",
                static_cast<long long>(st.spec_accepted_tokens), static_cast<long long>(st.spec_draft_tokens),
                100.0 * st.spec_acceptance(), static_cast<long long>(st.spec_drafts), per_forward,
                st.spec_propose_s * 1e3);
  return buf;
}

}  // namespace og::app
