// Stats of a run: token counts, timings and memory, as the runners report them.
#pragma once

#include <cstdint>

namespace og {

struct Stats {
  int64_t prompt_tokens = 0;     // tokens prefilled (recomputation excluded)
  int64_t generated_tokens = 0;  // tokens sampled
  int64_t decode_steps = 0;      // single-token forward steps
  int64_t recomputed_tokens = 0; // tokens re-prefilled after a ring lost history
  double load_s = 0;             // model + tokenizer load (set by the app)
  double ttft_s = 0;             // start of the (last) turn to its first sampled token
  double prefill_s = 0;          // time in prefill forwards
  double decode_s = 0;           // time in decode forwards
  double sampling_s = 0;         // time in the sampler
  int64_t peak_rss_bytes = 0;    // VmHWM at the time of the report
  // Speculative decoding (runtime/spec): verify steps that carried a draft,
  // the draft tokens they carried, and those the target accepted (each verify
  // step is one decode step; it yields its accepted tokens plus one).
  int64_t spec_drafts = 0;
  int64_t spec_draft_tokens = 0;
  int64_t spec_accepted_tokens = 0;
  double spec_propose_s = 0;     // time the proposer took (a draft model's forwards)

  double prefill_tok_s() const { return prefill_s > 0 ? prompt_tokens / prefill_s : 0.0; }
  // Tokens per second of decode forwards (and proposing): one per decode step
  // plus the accepted draft tokens.
  double decode_tok_s() const {
    const double s = decode_s + spec_propose_s;
    return s > 0 ? (decode_steps + spec_accepted_tokens) / s : 0.0;
  }
  double spec_acceptance() const {
    return spec_draft_tokens > 0 ? double(spec_accepted_tokens) / double(spec_draft_tokens) : 0.0;
  }
};

// From /proc/self/status (VmHWM, VmRSS) where there is one; elsewhere the
// peak from getrusage and the current figure 0 (unknown): base/process_memory.h.
int64_t peak_rss_bytes();
int64_t current_rss_bytes();

}  // namespace og
