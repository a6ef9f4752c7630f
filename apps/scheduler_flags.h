// The scheduler's flags, shared by `batch` and `serve`: session slots, the
// session limit, the step budget and the prefix cache. The two commands name
// the slot count differently (--max-decode-sequences / --parallel) and speak
// of prompts or requests; everything else is the same flag.
#pragma once

#include <string>

#include "base/flags.h"
#include "runtime/run_setup.h"
#include "runtime/scheduler.h"

namespace og::app {

struct SchedulerFlags {
  int64_t sessions = engine_defaults::kCommandMaxSequences;  // --max-decode-sequences / --parallel
  int64_t max_session_tokens = 0;
  int64_t step_tokens = engine_defaults::kStepTokens;
  int64_t step_prefills = 0;  // sessions whose prompt rows one step carries; 0 = as many as fit
  int64_t prefix_cache_entries = 0;
  int64_t prefix_cache_bytes = 0;
  std::string prefix_hash_seed;  // empty: $PYTHONHASHSEED, else "0"
  std::string prefix_cache_dir;  // the disk tier's directory; empty = none
  int64_t prefix_cache_disk_bytes = 0;
  bool prefix_cache_persist = false;
};

// How a command names its scheduler flags: the slot flag and its help, and
// what one unit of work is called ("prompt", "request").
struct SchedulerFlagNames {
  std::string sessions_flag;  // "max-decode-sequences" / "parallel"
  std::string sessions_help;
  std::string unit;
};

// Registers the flags with the current values of `f` as their defaults.
void add_scheduler_flags(Flags& fl, SchedulerFlags& f, const SchedulerFlagNames& names);
// Checks what parse() cannot (usage errors) and resolves --kv-max-capacity 0
// to --max-session-tokens, as both commands size the cache from it.
void check_scheduler_flags(const SchedulerFlags& f, const SchedulerFlagNames& names, CacheSetup& cache);
// The scheduler's options; the session limit defaults to the cache's capacity
// and the prefix cache hashes blocks of the pool's block size (one
// --block-size, as vLLM's).
SchedulerOptions scheduler_options_of(const SchedulerFlags& f, const KvPolicy& policy);

}  // namespace og::app
