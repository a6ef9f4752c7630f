// The scheduler flags `batch` and `serve` share (see scheduler_flags.h).
#include "scheduler_flags.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace og::app {

namespace {
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
}  // namespace

void add_scheduler_flags(Flags& fl, SchedulerFlags& f, const SchedulerFlagNames& n) {
  fl.add_int(n.sessions_flag, &f.sessions, 1, 4096, n.sessions_help);
  fl.add_int("max-session-tokens", &f.max_session_tokens, 0, kIntMax,
             n.unit + " + its max new tokens one session may hold (longer: refused); 0 = --kv-max-capacity's value");
  fl.add_int("step-tokens", &f.step_tokens, 1, kIntMax,
             "rows per forward step (decode rows first, then prefill chunks); at least --" + n.sessions_flag);
  fl.add_int("step-prefills", &f.step_prefills, 0, 4096,
             "most " + n.unit + "s whose prompt rows one step carries (in arrival order); 1 = one at a time, "
             "which lowers the median time to first token of " + n.unit + "s arriving together at the cost of "
             "the running ones' inter-token time; 0 = as many as --step-tokens holds");
  fl.add_int("prefix-cache-entries", &f.prefix_cache_entries, 0, 4096,
             n.unit + "s whose KV is kept for later " + n.unit + "s sharing a prefix; 0 = off");
  fl.add_int("prefix-cache-bytes", &f.prefix_cache_bytes, 0, std::numeric_limits<int64_t>::max(),
             "byte bound of the prefix cache; 0 = none beyond the entries");
  fl.add_string("prefix-hash-seed", &f.prefix_hash_seed,
                "root of the prefix cache's block hash chain, as vLLM's PYTHONHASHSEED (replicas and a router "
                "hashing prompts must share it); default: $PYTHONHASHSEED, else 0",
                "SEED");
  fl.add_string("prefix-cache-dir", &f.prefix_cache_dir,
                "keep prefix-cache blocks evicted from memory (and, at a graceful exit, those still in memory, "
                "within 2 s) as files in this directory (an existing, writable one; replicas of one user on one "
                "host may share it), read back by later " + n.unit +
                    "s sharing their prefix, across restarts (docs/cache.md)",
                "DIR");
  fl.add_int("prefix-cache-disk-bytes", &f.prefix_cache_disk_bytes, 0, std::numeric_limits<int64_t>::max(),
             "bound on the block files in --prefix-cache-dir (least recently used deleted first); required with it");
  fl.add_bool("prefix-cache-persist", &f.prefix_cache_persist,
              "write every block the prefix cache stores to --prefix-cache-dir when it is stored (write-through: "
              "a crash loses none), not only at eviction and at a graceful exit");
}

void check_scheduler_flags(const SchedulerFlags& f, const SchedulerFlagNames& n, CacheSetup& cache) {
  if (f.step_tokens < f.sessions)
    usage_fail("--step-tokens " + std::to_string(f.step_tokens) + " is below --" + n.sessions_flag + " " +
               std::to_string(f.sessions) + ": a step must carry every running session's decode row");
  if (cache.max_capacity > 0 && f.max_session_tokens > cache.max_capacity)
    usage_fail("--max-session-tokens " + std::to_string(f.max_session_tokens) + " exceeds --kv-max-capacity " +
               std::to_string(cache.max_capacity));
  if (cache.max_capacity == 1 || f.max_session_tokens == 1)
    usage_fail("the session limit must be at least 2 tokens (a prompt token and a reply token)");
  if (cache.max_capacity == 0) cache.max_capacity = f.max_session_tokens;
  if (f.prefix_cache_dir.empty()) {
    if (f.prefix_cache_disk_bytes > 0 || f.prefix_cache_persist)
      usage_fail(std::string(f.prefix_cache_persist ? "--prefix-cache-persist" : "--prefix-cache-disk-bytes") +
                 " needs --prefix-cache-dir");
  } else {
    if (f.prefix_cache_disk_bytes < 1)
      usage_fail("--prefix-cache-dir needs --prefix-cache-disk-bytes N (N >= 1: the bound on its files)");
    if (f.prefix_cache_entries < 1)
      usage_fail("--prefix-cache-dir needs the prefix cache in memory (--prefix-cache-entries >= 1)");
  }
}

SchedulerOptions scheduler_options_of(const SchedulerFlags& f, const KvPolicy& policy) {
  SchedulerOptions so;
  so.max_session_tokens = f.max_session_tokens > 0 ? f.max_session_tokens : policy.max_capacity;
  so.max_decode_sequences = static_cast<int>(f.sessions);
  so.step_tokens = f.step_tokens;
  so.max_prefills_per_step = static_cast<int>(f.step_prefills);
  so.prefix_cache_entries = static_cast<int>(f.prefix_cache_entries);
  so.prefix_cache_bytes = f.prefix_cache_bytes;
  so.prefix_block_size = std::max(1, policy.block_size);
  const char* env_seed = std::getenv("PYTHONHASHSEED");
  so.prefix_hash_seed = !f.prefix_hash_seed.empty() ? f.prefix_hash_seed : env_seed && *env_seed ? env_seed : "0";
  so.prefix_disk.dir = f.prefix_cache_dir;
  so.prefix_disk.max_bytes = f.prefix_cache_disk_bytes;
  so.prefix_disk.persist = f.prefix_cache_persist;
  so.prefix_disk.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return so;
}

}  // namespace og::app
