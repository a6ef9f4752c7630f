// Speculative decoding in the C API, shared by the engine (og_engine_options)
// and sessions (og_session_options), which carry the same fields: their
// checks, the draft model's vocabulary check, a session's proposer, and the
// counters og_engine_spec_stats / og_session_spec_stats hand out.
#pragma once

#include <memory>
#include <vector>

#include "api/c_api_internal.h"

namespace og::capi {

// The speculation fields both option structs carry (their names in messages).
struct SpecFields {
  int32_t ngram_size = 0;  // spec_ngram_size: prompt lookup when > 0
  int32_t ngram_min = 1;   // spec_ngram_min
  int32_t draft_max = 4;   // spec_draft_max
  int32_t draft_min = 0;   // spec_draft_min
  og_model* draft_model = nullptr;
  double draft_p_min = 0.75;  // spec_draft_p_min
  bool on() const { return ngram_size > 0 || draft_model != nullptr; }
};

// OG_ERR_INVALID_ARGUMENT naming the first bad field.
void check_spec_fields(const SpecFields& f);

// The draft model's core, checked as --model-draft is (same vocabulary, no more
// output rows than the target): errors begin "draft_model: ".
std::shared_ptr<ModelCore> draft_core_of(og_model* draft, const ModelCore& target);

// vLLM's spec_decode counters.
struct SpecCounts {
  int64_t drafts = 0, draft_tokens = 0, accepted_tokens = 0, pauses = 0;
  std::vector<int64_t> accepted_per_pos;  // [i]: verify steps that accepted draft position i
};

// Into a caller's og_spec_stats: its struct_size checked (OG_ERR_INVALID_ARGUMENT
// for 0 or more than this library's), its first struct_size bytes written.
void write_spec_stats(const SpecCounts& c, og_spec_stats* out);

// A session's proposer (prompt lookup, or the draft model with a cache of its
// own shaped like the session's), counting each verify step it is told of.
class SessionSpec;
// Null when f is off. `setup` and `policy` are the session's cache's.
std::shared_ptr<SessionSpec> session_spec_of(const SpecFields& f, const ModelCore& target, const CacheSetup& setup,
                                             const KvPolicy& policy);
// A fresh proposer of the same configuration, counters at zero (a fork's).
std::shared_ptr<SessionSpec> session_spec_copy(const SessionSpec& s);
// Points a turn's options at the proposer.
void apply_session_spec(SessionSpec& s, GenerateOptions& g);
const SpecCounts& session_spec_counts(const SessionSpec& s);

}  // namespace og::capi
